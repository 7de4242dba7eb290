# SPDX-License-Identifier: Apache-2.0
"""Tests of the harness itself: agent channel, errors, timeouts, VM life cycle."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from cxltrack.harness import GuestCommandError, Vm, plain_topology
from cxltrack.harness.pins import guest_pins, out_dir
from cxltrack.harness.pytest_plugin import BootVm


def test_boot_and_commands(vm: Vm) -> None:
    assert vm.boot_seconds is not None
    print(f"boot-to-ready {vm.boot_seconds:.2f} s wall, guest uptime at ready {vm.guest_uptime_at_ready} s")
    # About 4-6 s on an idle 2-core machine under TCG, ~15 s at load 10; the bound only
    # catches a hang-like regression without flaking on a busy machine.
    assert vm.boot_seconds < 60
    assert vm.run("uname -r").out.strip() == guest_pins().kernel_release
    res = vm.run("echo to-stdout; echo to-stderr >&2; exit 3", check=False)
    assert (res.status, res.out, res.err) == (3, "to-stdout\n", "to-stderr\n")
    # Binary-safe both ways, through stdin.
    blob = bytes(range(256)) * 64
    assert vm.run("cat", stdin=blob).stdout == blob
    vm.write_file("/tmp/x.bin", blob)
    assert vm.run("sha256sum /tmp/x.bin").out.split()[0] == __import__("hashlib").sha256(blob).hexdigest()
    assert vm.run("kill -9 $$", check=False).status == 128 + 9
    # QEMU's view of the vCPUs (used to explain an agent that stops answering) parses, and a
    # healthy guest has no wedged vCPU.
    states = vm.vcpu_states()
    assert len(states) == 2 and not any(s.wedged for s in states), [s.describe() for s in states]


def test_timeout_kills_command_and_vm_stays_usable(vm: Vm) -> None:
    with pytest.raises(GuestCommandError) as err:
        vm.run("echo started; sleep 30", timeout=1.5)
    assert err.value.result.timed_out
    assert "started" in str(err.value) and "timed out" in str(err.value)
    assert vm.run("echo still-here").out == "still-here\n"


def test_failing_command_raises_with_guest_output(vm: Vm) -> None:
    with pytest.raises(GuestCommandError) as err:
        vm.run("echo out-marker-1234; echo err-marker-5678 >&2; exit 7")
    msg = str(err.value)
    assert "exited with status 7" in msg
    assert "out-marker-1234" in msg and "err-marker-5678" in msg


def test_failing_guest_command_fails_the_test(pytester: pytest.Pytester) -> None:
    """A test whose guest command fails is reported failed, with the guest's output in the
    report, and its VM logs are kept under out/e2e/<test>/."""
    pytester.makeconftest('pytest_plugins = ["cxltrack.harness.pytest_plugin"]\n')
    pytester.makepyfile(
        test_inner=textwrap.dedent("""
        def test_guest_fails(vm):
            vm.run("echo inner-stdout-marker; echo inner-stderr-marker >&2; false")
    """)
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "GuestCommandError" in text
    assert "exited with status 1" in text
    assert "inner-stdout-marker" in text and "inner-stderr-marker" in text
    kept = out_dir() / "e2e" / "test_inner.py_test_guest_fails" / "vm0"
    try:
        assert (kept / "console.log").stat().st_size > 0
        assert "inner-stderr-marker" in (kept / "commands.log").read_text()
        assert (kept / "qemu.log").exists()
        assert "Linux version" in (kept / "dmesg.log").read_text()
    finally:
        import shutil

        shutil.rmtree(kept.parent, ignore_errors=True)


def test_vms_in_sequence_leave_nothing_behind(boot_vm: BootVm) -> None:
    before = _qemu_children()
    first = boot_vm(topology=plain_topology())
    assert first.run("cat /proc/meminfo | head -1").ok
    first.shutdown()
    second = boot_vm(topology=plain_topology())
    assert second.run("echo second").out == "second\n"
    second.shutdown()
    for v in (first, second):
        assert v.proc is not None and v.proc.returncode is not None
    assert _qemu_children() == before


def _qemu_children() -> set[int]:
    me = os.getpid()
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and "qemu" in (stat.parent / "cmdline").read_bytes().decode(errors="replace"):
            found.add(int(stat.parent.name))
    return found
