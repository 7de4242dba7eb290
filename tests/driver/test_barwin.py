# SPDX-License-Identifier: Apache-2.0
"""The driver on the PCIe-attached flavour (docs/spec.md section 10, the Alveo build's
interface): function 0 is a plain PCIe memory window (QEMU's cxltrack-mem), no CXL decoder, no
region. cxltrack.ko pairs with it, turns its decoding on, and everything the tracker does works
on stores through the BAR (mapped from user space via the PCI core's resource file)."""

from __future__ import annotations

from conftest import dmesg_splats, require_tracker_qemu

from cxltrack import regs
from cxltrack.config import named
from cxltrack.harness.pytest_plugin import BootVm
from cxltrack.harness.tracker import barwin_topology

VENDOR, MEM_DEVICE, TRACKER = (
    f"{regs.PCI_VENDOR_ID:#06x}",
    f"{regs.PCI_MEM_DEVICE_ID:#06x}",
    f"{regs.PCI_DEVICE_ID:#06x}",
)


def test_pcie_bar_window(boot_vm: BootVm) -> None:
    require_tracker_qemu()
    cfg = named("small")
    vm = boot_vm(topology=barwin_topology(cfg))
    devs = vm.pci_devices()
    fn0 = next(d for d in devs if d["vendor"] == VENDOR and d["device"] == MEM_DEVICE)
    assert fn0["class"] == "0x050000" and fn0["driver"] == "-", fn0
    vm.run("modprobe cxltrack")
    vm.run("test -c /dev/cxltrack0")
    assert vm.run("cat /sys/class/cxltrack/cxltrack0/memdev").out.strip() == fn0["bdf"]
    log = vm.run("dmesg").out
    assert f"memory window: PCIe BAR0 of {fn0['bdf']}" in log, log[-2000:]
    window = f"/sys/bus/pci/devices/{fn0['bdf']}/resource0"
    ps = cfg.page_size

    # dirty tracking of stores through the BAR
    vm.run(f"cxltrack harvest dirty 0 {cfg.pages} --clear --format count")
    pages = [3, 77, cfg.pages - 1]
    for p in pages:
        vm.run(f"pci-bar {window} write {p * ps + 8} {0x1122334455667700 + p:#x} 64")
    assert vm.run(f"cxltrack harvest dirty 0 {cfg.pages} --clear").out.split() == [str(p) for p in pages]
    for p in pages:
        assert vm.run(f"pci-bar {window} read {p * ps + 8} 64").out.strip() == f"{0x1122334455667700 + p:#x}"
    assert vm.run(f"cxltrack harvest dirty 0 {cfg.pages}").out.split() == []  # reads dirty nothing

    # discard-if-clean: a store through the window invalidates the association
    vm.run("cxltrack bat set 10 100 1")
    vm.run("cxltrack bat set 11 101 1")
    vm.run(f"pci-bar {window} write {11 * ps} 0x5a 32")
    assert vm.run("cxltrack bat discard 10").out.strip() == "clean block=100 disk=1"
    assert vm.run("cxltrack bat discard 11").out.strip() == "dirty"

    # beyond the tracked capacity, inside the BAR: a decode error that completes normally
    before = int(vm.run("cat /sys/class/cxltrack/cxltrack0/stats/decerr").out)
    assert vm.run(f"pci-bar {window} read {cfg.capacity_bytes + 64} 32").out.strip() == "0x0"
    assert int(vm.run("cat /sys/class/cxltrack/cxltrack0/stats/decerr").out) == before + 1

    # unbind and rebind: the window's decoding follows the pairing
    vm.run("rmmod cxltrack")
    vm.run("modprobe cxltrack")
    vm.run("test -c /dev/cxltrack0")
    assert vm.run("cxltrack bat get 10").out.strip() == "invalid"  # discarded above
    splats = dmesg_splats(vm)
    assert not splats, "\n".join(splats)
