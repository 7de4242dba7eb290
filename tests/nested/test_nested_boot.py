# SPDX-License-Identifier: Apache-2.0
"""An L1 host runs KVM (nested SVM under TCG) and boots L2 VMs whose NUMA node 1 lives on the
cxltrack device: the device sees exactly the pages the VM wrote, in both region modes."""

from __future__ import annotations

import threading
import time

import pytest

from cxltrack.harness.agent import GuestError
from cxltrack.harness.nested import START_RESETS_PER_VCPU, DeviceMemory, Host, MiB, NestedVm, VmReset, VmSpec
from cxltrack.harness.pytest_plugin import BootHost

BootRecord = list[tuple[str, str, float]]


def node1_mib(vm: NestedVm) -> int:
    out = vm.run("cat /sys/devices/system/node/node1/meminfo").out
    kb = next(int(line.split()[3]) for line in out.splitlines() if "MemTotal" in line)
    return kb // 1024


def check_writes_reach_the_device(host: Host, vm: NestedVm, granule: int, pages: int = 256) -> None:
    """The VM writes `pages` pages of its node 1; a harvest of the whole device in the host
    (cleared just before) shows every one of them dirty, and nothing else outside the `granule`s
    (bytes) that hold them, bar a few pages of the VM kernel's own."""
    ps = host.page_shift()
    total = host.device_pages()
    host.harvest_dirty(0, total)
    gpas = vm.touch(pages)
    written = {dpa >> ps for dpa in vm.device_dpas(gpas)}
    assert len(written) == pages, "two guest pages on one device page"
    dirty = host.harvest_dirty(0, total)
    missing = written - dirty
    assert not missing, f"{len(missing)} of {pages} written pages not dirty, e.g. {sorted(missing)[:5]}"
    per = granule >> ps
    granules = {p // per for p in written}
    elsewhere = {p for p in dirty if p // per not in granules}
    assert len(elsewhere) < pages // 4, f"{len(elsewhere)} dirty pages away from the {pages} written"


def test_host_runs_kvm_with_nested_svm(host: Host) -> None:
    assert host.run("cat /sys/module/kvm_amd/parameters/nested").out.strip() in ("1", "Y")
    assert host.run("grep -c -w svm /proc/cpuinfo").out.strip() != "0"
    assert host.run("test -c /dev/kvm && test -c /dev/dax0.0 && test -c /dev/cxltrack0").ok


def test_vm_on_devdax(host: Host, request: pytest.FixtureRequest, l2_boots: BootRecord) -> None:
    vm = host.start_vm(VmSpec("vm0", device=DeviceMemory("devdax", 128 * MiB)))
    assert vm.boot_seconds is not None
    l2_boots.append((request.node.name, "KVM, 192 MiB + 128 MiB devdax node", vm.boot_seconds))
    assert vm.run("uname -r").out.strip() == host.run("uname -r").out.strip()
    # KVM, not emulation: the VM's QEMU holds /dev/kvm open in the host
    assert host.run(f"ls -l /proc/{vm.pid}/fd | grep -q /dev/kvm", check=False).ok
    assert 120 <= node1_mib(vm) <= 128
    # devdax: the VM's pages are the device's pages, written by nobody else
    check_writes_reach_the_device(host, vm, granule=1 << host.page_shift())


def test_vm_on_kmem(boot_host: BootHost, request: pytest.FixtureRequest, l2_boots: BootRecord) -> None:
    host = boot_host(region="kmem")
    vm = host.start_vm(VmSpec("vm0", device=DeviceMemory("kmem", 128 * MiB)))
    assert vm.boot_seconds is not None
    l2_boots.append((request.node.name, "KVM, 192 MiB + 128 MiB kmem node", vm.boot_seconds))
    assert 120 <= node1_mib(vm) <= 128
    # kmem: the host backs the VM with transparent huge pages and zeroes each 2 MiB page on
    # the VM's first touch, so whole 2 MiB granules around the written pages are dirty too
    check_writes_reach_the_device(host, vm, granule=2 * MiB)


def test_two_vms_each_on_its_own_device_range(host: Host) -> None:
    """Two VMs at once, node 1 of each on its own 128 MiB of /dev/dax0.0; each VM's writes are
    dirty in its own range only."""
    vms = [
        host.start_vm(VmSpec(f"vm{i}", device=DeviceMemory("devdax", 128 * MiB, offset=i * 128 * MiB)))
        for i in range(2)
    ]
    ps = host.page_shift()
    span = (128 * MiB) >> ps
    base = host.dpa_base() >> ps
    host.harvest_dirty(base, 2 * span)
    written = [{d >> ps for d in v.device_dpas(v.touch(128))} for v in vms]
    dirty = host.harvest_dirty(base, 2 * span)
    for i, w in enumerate(written):
        lo, hi = base + i * span, base + (i + 1) * span
        assert all(lo <= p < hi for p in w), f"vm{i} wrote outside its range"
        assert w <= dirty, f"vm{i}: {len(w - dirty)} written pages not dirty"
        assert len(dirty & set(range(lo, hi))) < 2 * len(w)
    assert written[0].isdisjoint(written[1])


def _reset(vm: NestedVm) -> None:
    """Reset the VM from its monitor and wait until its QEMU logged the CPU resets."""
    assert vm.qmp is not None
    vm.qmp.command("system_reset")
    deadline = time.monotonic() + 60
    while vm.resets_after_start() < vm.spec.smp:
        assert time.monotonic() < deadline, f"no CPU reset logged after system_reset: {vm.cpu_resets()}"
        time.sleep(1)


def test_a_vm_that_reboots_in_use_fails_its_test(host: Host) -> None:
    """A guest reset reboots an L2 VM (its QEMU has no -no-reboot, so that an early death is
    logged, not a silent exit); a reset after the VM was ready lost the guest's state, and
    shutting the VM down says so."""
    vm = host.start_vm(VmSpec("vm0"))
    assert vm.resets_at_ready == START_RESETS_PER_VCPU * vm.spec.smp and vm.resets_after_start() == 0
    _reset(vm)
    assert vm.silent_reset() is not None
    with pytest.raises(VmReset, match="was reset while in use with nothing on its console") as quiet:
        vm.shutdown()
    assert vm.stopped and quiet.value.silent
    # A reset in the middle of a command (its answer never comes; the agent greets again
    # once the guest is back) is a VmReset too, the kind the suite runs again, not a bare
    # GuestError about a response id (CI: test_migration_memory_equal_at_switch_over).
    vm = host.start_vm(VmSpec("vm2"))
    failed: list[BaseException] = []

    def command() -> None:
        try:
            vm.run("sleep 60", timeout=120)
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)

    waiter = threading.Thread(target=command)
    waiter.start()
    time.sleep(2)
    assert vm.qmp is not None
    vm.qmp.command("system_reset")
    waiter.join(timeout=200)
    assert not waiter.is_alive() and len(failed) == 1, failed
    assert isinstance(failed[0], VmReset) and failed[0].silent, repr(failed[0])
    with pytest.raises(VmReset):
        vm.shutdown()
    # A kernel that said something before the reset is not the platform's silent reset.
    vm = host.start_vm(VmSpec("vm1"))
    vm.run("echo '<0>Kernel panic - not syncing: cxltrack test' > /dev/kmsg")
    _reset(vm)
    assert vm.silent_reset() is None
    with pytest.raises(VmReset, match="was reset while in use\n") as spoke:
        vm.shutdown()
    assert not spoke.value.silent and "cxltrack test" in spoke.value.kernel_report[0]


RIP_LINE = "RIP: 0010:smp_call_function_many_cond+0x137/0x4c0"


def test_a_host_whose_kernel_reports_a_stuck_cpu_is_stopped_at_once(host: Host) -> None:
    """The host's console gets the soft-lockup report that CI saw when a vCPU of the host stopped
    taking interrupts (written to /dev/kmsg here, as the kernel's watchdog prints it): the host
    is stopped within seconds, so a wait on an L2 VM ends with an error instead of its timeout,
    and the host says why (pytest_runtest_call then reports HostWedged)."""
    vm = host.start_vm(VmSpec("vm0"))
    assert host.wedge_report() is None
    lines = ("watchdog: BUG: soft lockup - CPU#1 stuck for 961s! [khugepaged:41]", RIP_LINE)
    report = " ".join(f"echo '<2>{ln}' > /dev/kmsg;" for ln in lines)
    host.run(f"(sleep 3; {report}) >/dev/null 2>&1 </dev/null &")
    start = time.monotonic()
    with pytest.raises((GuestError, OSError)):
        vm.run("sleep 600", timeout=700)
    waited = time.monotonic() - start
    assert waited < 60, f"the wait on the L2 VM ended after {waited:.0f} s"
    assert host.wedged == (
        "the host's kernel reports CPU#1 stuck for 961 s in khugepaged:41 at smp_call_function_many_cond+0x137/0x4c0"
    )
    assert host.wedge_report() == host.wedged
    assert not host.vm.alive()
    assert "killed: stopped: the host's kernel reports CPU#1" in host.vm.qemu_log_text()
