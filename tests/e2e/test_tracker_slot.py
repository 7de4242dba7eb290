# SPDX-License-Identifier: Apache-2.0
"""The slot layout the cxltrack tracker will use, proven with QEMU's `edu` device
as a stand-in: function 1 of the cxl-type3 device's slot, its BAR read and
written from guest user space through sysfs resource0 (the tracker's access path).
The tracker itself is not implemented here."""

from __future__ import annotations

from cxltrack.harness import Device, cxl_type3_topology
from cxltrack.harness.pytest_plugin import BootVm

EDU = ("0x1234", "0x11e8")


def test_function_one_of_type3_slot_bar_from_user_space(boot_vm: BootVm) -> None:
    topo = cxl_type3_topology()
    topo.add_function("cxl-vmem0", Device("edu", {"id": "tracker-stand-in"}))
    vm = boot_vm(topology=topo)
    devs = {d["bdf"]: d for d in vm.pci_devices()}
    mem = [d for d in devs.values() if d["class"] == "0x050210"]
    assert len(mem) == 1 and mem[0]["bdf"].endswith(".0") and mem[0]["driver"] == "cxl_pci"
    fn1 = mem[0]["bdf"][:-1] + "1"
    assert (devs[fn1]["vendor"], devs[fn1]["device"]) == EDU
    bar = vm.pci_bar_path(*EDU, bar=0)
    assert bar == f"/sys/bus/pci/devices/{fn1}/resource0"
    # edu: 0x00 identification 0x010000ed; 0x04 liveness register returns ~value.
    assert vm.run(f"pci-bar {bar} read 0x0").out.strip() == "0x10000ed"
    vm.run(f"pci-bar {bar} write 0x4 0x12345678")
    assert vm.run(f"pci-bar {bar} read 0x4").out.strip() == "0xedcba987"
    # The memory device in function 0 is unaffected.
    assert "dax=dax0.0 driver=device_dax" in vm.run("cxl-region create devdax", timeout=60).out
