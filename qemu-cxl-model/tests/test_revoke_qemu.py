# SPDX-License-Identifier: Apache-2.0
"""Patch 0006: memory-backend-file's `x-revoked` takes the file away from a running QEMU
(the shared swap tier's release, docs/swap-design.md section 5). A virtio-pmem device on a
range of a plain file stands for the tier's devdax chunks; qtest writes guest memory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import qemu_util

from cxltrack.harness.qmp import QmpError

MiB = 1 << 20
OFFSET, SIZE = 4 * MiB, 8 * MiB


def pmem_vm(path: Path) -> qemu_util.Qemu:
    return qemu_util.Qemu(
        [
            "-M",
            "q35",
            "-m",
            "128M,slots=2,maxmem=1G",
            "-object",
            f"memory-backend-file,id=tier0,mem-path={path},share=on,size={SIZE},offset={OFFSET}",
            "-device",
            "virtio-pmem-pci,memdev=tier0,id=tierdev0",
        ],
        qtest=True,
    )


def file_refs(pid: int, path: Path) -> tuple[list[str], list[str]]:
    """The process's mappings of `path` and its open fds on it."""
    maps = [line for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if line.endswith(str(path))]
    fds = [n for n in os.listdir(f"/proc/{pid}/fd") if os.readlink(f"/proc/{pid}/fd/{n}") == str(path)]
    return maps, fds


def test_a_revoked_backend_no_longer_reaches_its_file(tmp_path: Path) -> None:
    path = tmp_path / "tier.img"
    with open(path, "wb") as f:
        f.truncate(OFFSET + SIZE + MiB)
    with pmem_vm(path) as vm:
        addr = vm.qmp.command("query-memory-devices")[0]["data"]["memaddr"]
        # The control: before, the guest's writes reach the file at the backend's offset.
        vm.writeq(addr, 0x1122334455667788)
        assert path.read_bytes()[OFFSET : OFFSET + 8] == (0x1122334455667788).to_bytes(8, "little")
        maps, fds = file_refs(vm.proc.pid, path)
        assert maps and len(fds) == 1, (maps, fds)
        assert vm.qmp.command("qom-get", path="/objects/tier0", property="x-revoked") is False
        vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked", value=True)
        assert vm.qmp.command("qom-get", path="/objects/tier0", property="x-revoked") is True
        # Neither mapped nor open; the guest reads zeros, and its writes stay in QEMU's memory.
        assert file_refs(vm.proc.pid, path) == ([], [])
        assert vm.readq(addr) == 0
        before = path.read_bytes()
        vm.memset(addr, SIZE, 0x5A)
        vm.writeq(addr + SIZE - 8, 0x0102030405060708)
        assert vm.readq(addr + 8) == 0x5A5A5A5A5A5A5A5A and vm.readq(addr + SIZE - 8) == 0x0102030405060708
        assert path.read_bytes() == before
        # One way; setting it again is a no-op; migration and savevm refused from now on.
        with pytest.raises(QmpError, match="cannot be restored"):
            vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked", value=False)
        vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked", value=True)
        with pytest.raises(QmpError, match="its file was revoked"):
            vm.qmp.command("migrate", uri="exec:cat >/dev/null")
        out = vm.qmp.command("human-monitor-command", **{"command-line": "savevm snap0"})
        assert "its file was revoked" in out, out
        assert vm.close() == 0
        assert vm.unexpected_stderr() == ""


def test_revoking_needs_a_mapped_file(tmp_path: Path) -> None:
    """Nothing is mapped when the object is created: x-revoked on the command line is refused
    (it is not in the QAPI schema), and memory-backend-ram has no such property."""
    path = tmp_path / "tier.img"
    with open(path, "wb") as f:
        f.truncate(OFFSET + SIZE)
    r = subprocess.run(
        [
            qemu_util.qemu_bin(),
            *("-nodefaults", "-display", "none", "-M", "q35", *qemu_util.fw_args(), "-object"),
            f"memory-backend-file,id=tier0,mem-path={path},share=on,size={SIZE},x-revoked=on",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 1 and "x-revoked" in r.stderr, (r.returncode, r.stderr)
    with (
        qemu_util.Qemu(["-M", "q35", "-object", "memory-backend-ram,id=ram0,size=8M"]) as vm,
        pytest.raises(QmpError, match="x-revoked"),
    ):
        vm.qmp.command("qom-set", path="/objects/ram0", property="x-revoked", value=True)


def test_revoked_with_a_copy_serves_the_copy_and_reaches_neither_file(tmp_path: Path) -> None:
    """Patch 0009, `x-revoked-copy`: revoked as with x-revoked, but the guest reads the host's
    copy (the tier's chunks the device copied out by DMA, a shared mapping of it) instead of
    zeros; its writes never reach the revoked file (they go to the copy, the VM's own now); a
    copy shorter than the block is refused and changes nothing."""
    path = tmp_path / "tier.img"
    with open(path, "wb") as f:
        f.truncate(OFFSET + SIZE + MiB)
    short = tmp_path / "short.img"
    short.write_bytes(b"\x01" * (SIZE - 4096))
    copy = tmp_path / "copy.img"
    content = bytes((i * 7 + 3) & 0xFF for i in range(4096)) * (SIZE // 4096)
    copy.write_bytes(content)
    with pmem_vm(path) as vm:
        addr = vm.qmp.command("query-memory-devices")[0]["data"]["memaddr"]
        vm.writeq(addr, 0x1122334455667788)
        with pytest.raises(QmpError, match="holds less than"):
            vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked-copy", value=str(short))
        assert vm.qmp.command("qom-get", path="/objects/tier0", property="x-revoked") is False
        assert vm.readq(addr) == 0x1122334455667788  # still the file
        vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked-copy", value=str(copy))
        assert vm.qmp.command("qom-get", path="/objects/tier0", property="x-revoked") is True
        assert file_refs(vm.proc.pid, path) == ([], [])
        for off in (0, 4096 + 8, SIZE - 8):
            assert vm.readq(addr + off) == int.from_bytes(content[off : off + 8], "little"), off
        before = path.read_bytes()
        vm.writeq(addr + 64, 0x0102030405060708)
        assert vm.readq(addr + 64) == 0x0102030405060708
        assert path.read_bytes() == before
        assert copy.read_bytes()[64:72] == (0x0102030405060708).to_bytes(8, "little")
        with pytest.raises(QmpError, match="already revoked"):
            vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked-copy", value=str(copy))
        with pytest.raises(QmpError, match="its file was revoked"):
            vm.qmp.command("migrate", uri="exec:cat >/dev/null")
        assert vm.close() == 0
        assert vm.unexpected_stderr() == ""


def test_a_revoke_hold_lasts_until_the_revocation(tmp_path: Path) -> None:
    """Patch 0010, `x-revoke-hold`: set, it holds the vCPUs (the VM stays `running`, no state
    change) until the backend is revoked, which lets them go whether the revocation succeeds
    (`x-revoked-copy`) or not (a copy that cannot be opened), or until it is set to false; a
    revoked backend takes no hold. What the hold keeps out (a guest write between the host's
    last copy pass and the revocation) is tested on the nested host:
    tests/nested/test_nested_swap_tier.py::test_a_write_after_the_last_copy_pass_reaches_the_copy."""
    path = tmp_path / "tier.img"
    with open(path, "wb") as f:
        f.truncate(OFFSET + SIZE + MiB)
    copy = tmp_path / "copy.img"
    copy.write_bytes(b"\x5a" * SIZE)

    def hold() -> bool:
        return bool(vm.qmp.command("qom-get", path="/objects/tier0", property="x-revoke-hold"))

    def set_hold(value: bool) -> None:
        vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoke-hold", value=value)

    with pmem_vm(path) as vm:
        addr = vm.qmp.command("query-memory-devices")[0]["data"]["memaddr"]
        assert hold() is False
        set_hold(True)
        set_hold(True)  # once is enough: no second hold to undo
        assert hold() is True and vm.qmp.command("query-status")["status"] == "running"
        set_hold(False)
        assert hold() is False and vm.qmp.command("query-status")["status"] == "running"
        set_hold(True)
        with pytest.raises(QmpError):
            vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked-copy", value=str(tmp_path / "none"))
        assert hold() is False  # a failed revocation lets the vCPUs go too
        set_hold(True)
        vm.qmp.command("qom-set", path="/objects/tier0", property="x-revoked-copy", value=str(copy))
        assert hold() is False and vm.qmp.command("query-status")["status"] == "running"
        assert vm.readq(addr) == 0x5A5A5A5A5A5A5A5A
        with pytest.raises(QmpError, match="already revoked"):
            set_hold(True)
        assert hold() is False
        assert vm.close() == 0
        assert vm.unexpected_stderr() == ""
