# SPDX-License-Identifier: Apache-2.0
"""The emulated CXL type-3 device's volatile region is created and usable, as
devdax (/dev/dax0.0, mmap) and as a kmem NUMA node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cxltrack.harness import GuestCommandError, Vm, cxl_type3_topology
from cxltrack.harness.pytest_plugin import BootVm

MIB = 1 << 20
SIZE = "4M"  # the emulated window runs at a few MiB/s under TCG


def sysfs(vm: Vm, path: str) -> str:
    return vm.run(f"cat {path}").out.strip()


def test_cxl_sysfs_matches_topology(vm: Vm) -> None:
    """What the guest's CXL core enumerated matches cxl_type3_topology() (a sysfs view
    standing in for `cxl list`, which bookworm's ndctl 76 cannot do for ram regions)."""
    devs = vm.run("ls /sys/bus/cxl/devices").out.split()
    assert "root0" in devs and "mem0" in devs and "decoder0.0" in devs
    assert any(d.startswith("endpoint") for d in devs)
    assert [d for d in devs if d.startswith("mem")] == ["mem0"]
    assert int(sysfs(vm, "/sys/bus/cxl/devices/mem0/ram/size"), 0) == 256 * MIB
    assert int(sysfs(vm, "/sys/bus/cxl/devices/mem0/pmem/size"), 0) == 0
    assert int(sysfs(vm, "/sys/bus/cxl/devices/decoder0.0/size"), 0) == 4096 * MIB
    assert sysfs(vm, "/sys/bus/cxl/devices/decoder0.0/cap_ram") == "1"
    # The memdev is a PCI function with the CXL memory device class; the tracker hook
    # (a guest tool mmapping a BAR through sysfs) finds BARs this way.
    mem = [d for d in vm.pci_devices() if d["class"] == "0x050210"]
    assert len(mem) == 1 and mem[0]["driver"] == "cxl_pci"
    bar = vm.pci_bar_path(mem[0]["vendor"], mem[0]["device"], 0)
    vm.run(f"test -e {bar}")


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def test_cxl_list_matches_topology(vm: Vm) -> None:
    """`cxl list` (ndctl 81 from trixie) sees exactly the topology QEMU was given."""
    topo = cxl_type3_topology()
    mem_size = _size(str(topo.objects[0].props["size"]))
    window = _size(topo.machine_extra[0].split("cxl-fmw.0.size=")[1])
    buses: list[dict[str, Any]] = json.loads(vm.run("cxl list -vvv").out)
    assert [b["bus"] for b in buses] == ["root0"]
    bus = buses[0]
    assert bus["provider"] == "ACPI.CXL" and bus["nr_dports"] == 1
    (root_dec,) = bus["decoders:root0"]
    assert root_dec["size"] == window and root_dec["volatile_capable"]
    (port,) = bus["ports:root0"]  # the pxb-cxl host bridge
    assert port["nr_dports"] == 1  # one cxl-rp root port
    (ep,) = port["endpoints:port1"]
    mem = ep["memdev"]
    assert mem["memdev"] == "mem0"
    assert mem["ram_size"] == mem_size
    assert mem["partition_info"]["volatile_only_size"] == mem_size
    assert mem["partition_info"]["persistent_only_size"] == 0


def test_region_with_cxl_and_daxctl_tools(vm: Vm) -> None:
    """The same region made with Debian's tools instead of sysfs, then onlined as
    system RAM by daxctl (the kmem path)."""
    vm.run("cxl create-region -t ram -d decoder0.0 -m mem0", timeout=60)
    (region,) = json.loads(vm.run("cxl list -R").out)
    assert region["type"] == "ram" and region["size"] == 256 * MIB and region["decode_state"] == "commit"
    # daxctl onlines the memory itself (as ZONE_MOVABLE) once the kernel's auto-online is off.
    vm.run("echo offline > /sys/devices/system/memory/auto_online_blocks")
    out = vm.run("daxctl reconfigure-device --mode=system-ram dax0.0", timeout=60).out
    (dev,) = json.loads(out)
    assert dev["mode"] == "system-ram", out
    node = int(dev["target_node"])
    print(vm.run(f"cxl-memtest node {node} {SIZE} 0x77", timeout=120).out.strip())


def test_region_devdax_on_request(vm: Vm) -> None:
    assert "region=none" in vm.run("cxl-region show").out
    out = vm.run("cxl-region create devdax", timeout=60).out
    assert "dax=dax0.0 driver=device_dax" in out, out
    assert int(sysfs(vm, "/sys/bus/dax/devices/dax0.0/size")) == 256 * MIB
    vm.run("test -c /dev/dax0.0")
    # Write in one process, verify in another: the data lives in the device.
    print(vm.run(f"cxl-memtest dax /dev/dax0.0 {SIZE} 0x5eed write", timeout=120).out.strip())
    print(vm.run(f"cxl-memtest dax /dev/dax0.0 {SIZE} 0x5eed verify", timeout=120).out.strip())
    # Negative control: the wrong seed must not verify.
    with pytest.raises(GuestCommandError, match="words differ"):
        vm.run(f"cxl-memtest dax /dev/dax0.0 {SIZE} 0xbad verify", timeout=120)


def test_region_kmem_numa_node_at_boot(boot_vm: BootVm) -> None:
    vm = boot_vm(region="kmem")
    out = vm.run("cxl-region show").out
    assert "driver=kmem" in out, out
    node = int(out.split("target_node=")[1].split()[0])
    assert node >= 1
    total_kb = int(vm.run(f"grep MemTotal /sys/devices/system/node/node{node}/meminfo").out.split()[3])
    assert 200 * 1024 <= total_kb <= 256 * 1024
    # Every block of it online in ZONE_MOVABLE: the kernel's own memory never lands on the device.
    zones = vm.run(f"cat /sys/devices/system/node/node{node}/memory[0-9]*/valid_zones").out.split()
    assert zones and set(zones) == {"Movable"}, zones
    print(vm.run(f"cxl-memtest node {node} {SIZE} 0x1234", timeout=120).out.strip())
