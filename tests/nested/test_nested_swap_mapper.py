# SPDX-License-Identifier: Apache-2.0
"""VSwapper's Swap Mapper on the device (issue 13 item 1, docs/swap-design.md section 1): the
host QEMU's cxltrack-swap-mapper gives every page of the VM's device node that a virtio-blk read
filled whole the association with its disk block, and takes the associations of a disk write's
blocks away before the write. The audit (`cxlt-batcheck` in the host) reads every associated
page of the node through /dev/dax0.0 and compares it with the block it claims in the disk image
as it is now: a page that claims a block it does not equal would be dropped as clean by a
memory manager and read back wrong."""

from __future__ import annotations

import re

from cxltrack.harness.nested import DeviceMemory, Host, MiB, NestedVm, VmSpec
from cxltrack.harness.pytest_plugin import BootHost

DISK = "/run/cxlt/swap-mapper.img"
DISK_ID = 7
BLOCKS = 1024  # 4 MiB of 4 KiB blocks, each stamped with its number (Host.make_disk)
NODE = 128 * MiB


def run_audit(host: Host, args: str, check: bool) -> dict[str, int]:
    """`cxlt-batcheck ARGS IMAGE DISK ...` in the host: associated/equal/differ/other page counts
    (with `check`, no page may differ)."""
    res = host.run(f"cxlt-batcheck {args}", check=False, timeout=300)
    m = re.search(r"associated (\d+) equal (\d+) differ (\d+) other (\d+)", res.out)
    assert m and res.status == (1 if int(m.group(3)) else 0), res.describe()
    counts = dict(zip(("associated", "equal", "differ", "other"), map(int, m.groups()), strict=True))
    assert not check or counts["differ"] == 0, res.out
    return counts


def audit(host: Host, check: bool = True) -> dict[str, int]:
    """The audit of the VM's devdax node, read through /dev/dax0.0."""
    shift = host.page_shift()
    first = host.dpa_base() >> shift
    return run_audit(host, f"/dev/dax0.0 {first} {DISK} {DISK_ID} {first} {NODE >> shift}", check)


def mapper(vm: NestedVm) -> dict[str, int]:
    assert vm.qmp is not None
    props = ("associated-pages", "unassociated-pages", "dropped-associations", "errors", "failed-writes")
    return {p: int(vm.qmp.command("qom-get", path="/objects/swap0", property=p)) for p in props}


def refused(host: Host, args: str) -> str:
    qemu = "qemu-system-x86_64 -M q35 -nodefaults -display none -S"
    res = host.run(f"{qemu} {args} </dev/null", check=False, timeout=60)
    assert res.status != 0, res.describe()
    return res.err


def test_disk_reads_associate_pages_and_disk_writes_take_them_away(host: Host) -> None:
    host.make_disk(DISK, BLOCKS * 4096, pattern=True)
    # What the mapper refuses: RAM that is not the device's, a disk with 512-byte blocks (a
    # block would not be a page), a second disk (the id names one disk's blocks).
    dax = "-object memory-backend-file,id=m,mem-path=/dev/dax0.0,share=on,align=2M,size=64M"
    sm = "-object cxltrack-swap-mapper,id=sm,memdev=m,tracker=/dev/cxltrack0,disk=1"
    other = host.make_disk("/run/cxlt/other.img", 1024 * 1024)
    drv = f"-drive file={DISK},if=none,id=d0,format=raw -drive file={other},if=none,id=d1,format=raw"
    blk = "-device virtio-blk-pci,drive=d0,swap-mapper=sm"
    ram = "-object memory-backend-memfd,id=m,share=on,size=64M"
    assert "is not memory of this tracker" in refused(host, f"{ram} {sm}")
    assert "swap-mapper needs logical_block_size=4096" in refused(host, f"{dax} {sm} {drv} {blk}")
    bs = "logical_block_size=4096,physical_block_size=4096"
    two = f"{blk},{bs} -device virtio-blk-pci,drive=d1,{bs},swap-mapper=sm"
    assert "already used by another disk" in refused(host, f"{dax} {sm} {drv} {two}")
    vm = host.start_vm(VmSpec("vm0", device=DeviceMemory("devdax", NODE), disk=DISK, swap_mapper_disk=DISK_ID))
    # The VM's kernel read its partition table at boot, into pages that may be on the node.
    m0, a0 = mapper(vm), audit(host)
    assert a0["associated"] <= m0["associated-pages"] and m0["errors"] == 0, (m0, a0)
    # One 4 MiB O_DIRECT read into a buffer on the device node (busybox dd maps its buffer):
    # every block lands in a whole page of its own.
    vm.run(f"membind 1 dd if=/dev/vda of=/dev/null bs={BLOCKS * 4096} count=1 iflag=direct")
    m = mapper(vm)
    assert m["associated-pages"] - m0["associated-pages"] == BLOCKS, m
    assert m["errors"] == 0 and m["unassociated-pages"] == 0, m
    a = audit(host)
    assert a["associated"] >= BLOCKS and a["equal"] == a["associated"], a
    # The guest overwrites the first 256 blocks on its disk: their pages (freed by dd, still
    # holding the old blocks) must no longer claim them.
    vm.run("dd if=/dev/urandom of=/dev/vda bs=4096 count=256 iflag=fullblock oflag=direct conv=notrunc")
    m = mapper(vm)
    assert m["dropped-associations"] >= 256 and m["errors"] == 0, m
    after = audit(host)
    assert after["associated"] <= a["associated"] - 256, (a, after)
    # An association that cannot be taken away (x-fail-drops: every attempt fails) fails the
    # disk write with an I/O error rather than let a page claim a block that changed.
    assert vm.qmp is not None
    vm.qmp.command("qom-set", path="/objects/swap0", property="x-fail-drops", value=True)
    failed = vm.run(
        "dd if=/dev/urandom of=/dev/vda bs=4096 seek=512 count=16 iflag=fullblock oflag=direct", check=False
    )
    vm.qmp.command("qom-set", path="/objects/swap0", property="x-fail-drops", value=False)
    m = mapper(vm)
    assert failed.status != 0 and m["failed-writes"] >= 1, (failed.describe(), m)
    kept = audit(host)
    assert kept["associated"] == after["associated"] and kept["equal"] == kept["associated"], (after, kept)
    vm.run("dd if=/dev/urandom of=/dev/vda bs=4096 seek=512 count=16 iflag=fullblock oflag=direct")
    after = audit(host)
    assert after["associated"] <= kept["associated"] - 16, (kept, after)
    # Reads into node 0 (not the device) associate nothing.
    before = m["associated-pages"]
    vm.run(f"membind 0 dd if=/dev/vda of=/dev/null bs={BLOCKS * 4096} count=1 iflag=direct")
    assert mapper(vm)["associated-pages"] == before, mapper(vm)
    # The audit's negative control: a write to the image that bypasses the VM's disk (the
    # host's own dd) is not seen by the mapper, so the page holding block 300 now claims a
    # block it does not equal, and the audit says so.
    host.run(f"printf 'changed' | dd of={DISK} bs=1 seek={300 * 4096 + 100} conv=notrunc 2>/dev/null")
    bad = audit(host, check=False)
    assert bad["differ"] >= 1, bad
    print(f"[nested] swap mapper: {mapper(vm)}; audit after the guest's write {after}, after the host's {bad}")


def test_on_a_kmem_node_through_the_vm_process(boot_host: BootHost) -> None:
    """The same on a kmem node (the VM's RAM is the host QEMU's anonymous memory bound to the
    device's NUMA node, as the memory manager will need for userfaultfd): associations set and
    taken away through QEMU's addresses, the latter allowed by the driver since 9347a43 (before,
    every drop failed with EPERM and the pages kept claiming blocks the disk write changed).
    The audit finds the node's pages through the QEMU process (pagemap, mem)."""
    host = boot_host(region="kmem")
    host.make_disk(DISK, BLOCKS * 4096, pattern=True)
    vm = host.start_vm(VmSpec("vm0", device=DeviceMemory("kmem", NODE), disk=DISK, swap_mapper_disk=DISK_ID))
    m = re.search(r"is (0x[0-9a-f]+)", vm.hmp(f"gpa2hva {vm.device_gpa:#x}"))
    assert m, vm.hmp(f"gpa2hva {vm.device_gpa:#x}")
    hva = int(m.group(1), 16)

    def audit_pid() -> dict[str, int]:
        return run_audit(host, f"--pid {vm.pid} {hva} {NODE} {DISK} {DISK_ID}", check=True)

    m0 = mapper(vm)
    vm.run(f"membind 1 dd if=/dev/vda of=/dev/null bs={BLOCKS * 4096} count=1 iflag=direct")
    m1 = mapper(vm)
    assert m1["associated-pages"] - m0["associated-pages"] == BLOCKS and m1["errors"] == 0, m1
    a = audit_pid()
    # The host may have moved pages since (khugepaged collapsing QEMU's anonymous memory,
    # compaction): a copy has no association (704 of 1024 left in one fresh-machine run).
    assert a["associated"] >= BLOCKS // 4 and a["equal"] == a["associated"], a
    vm.run("dd if=/dev/urandom of=/dev/vda bs=4096 count=256 iflag=fullblock oflag=direct conv=notrunc")
    m2 = mapper(vm)
    # Every drop succeeded (before 9347a43 each failed with EPERM); pages moved since the
    # read had nothing left to drop.
    assert m2["errors"] == 0 and m2["failed-writes"] == 0 and m2["dropped-associations"] > 0, m2
    after = audit_pid()
    assert after["associated"] < a["associated"], (a, after)
    print(f"[nested] swap mapper on kmem: {m2}; audit after the read {a}, after the guest's write {after}")
