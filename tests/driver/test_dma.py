# SPDX-License-Identifier: Apache-2.0
"""DMA reaches the tracker like CPU stores do. The DMA source is QEMU's `edu`
teaching device (a PCI function with a 4 KiB buffer and a DMA engine, programmed
from guest user space through its sysfs BAR, bus mastering enabled by a config
space write). Its DMA goes through QEMU's PCI bus-master address space into the
CXL fixed memory window, i.e. the same path as any device DMA to CXL memory."""

from __future__ import annotations

import time

from conftest import DAX, TrackerFactory

from cxltrack.harness import Device

EDU_DMA_BUF = 0x40000
PATTERN = "".join(f"{(i * 37 + 11) & 0xFF:02x}" for i in range(64))


def test_dma_write_dirties_and_invalidates_dma_read_is_a_read(tracker_vm: TrackerFactory) -> None:
    edu = Device("edu", {"id": "dma0", "bus": "pcie.0", "dma_mask": 0xFFFFFFFFFFFFFFFF})
    t = tracker_vm(devices=[edu])
    bdf = next(d["bdf"] for d in t.vm.pci_devices() if (d["vendor"], d["device"]) == ("0x1234", "0x11e8"))
    bar = f"/sys/bus/pci/devices/{bdf}/resource0"
    # Memory space + bus master (command register, config offset 4).
    t.run(f"printf '\\006' | dd of=/sys/bus/pci/devices/{bdf}/config bs=1 seek=4 count=1 conv=notrunc 2>/dev/null")
    hpa = int(t.run("cat /sys/bus/dax/devices/dax0.0/resource").out, 0)
    src, dst = 200, 300  # device pages (the dax mapping starts at DPA 0)
    t.run(f"cxlt-test poke {DAX} {src * 4096} {PATTERN}")
    t.run("cxltrack harvest dirty 0 1024 --clear --format count")
    t.run("cxltrack harvest accessed 0 1024 --clear --format count")
    t.run(f"cxltrack bat set {src} 1 1")
    t.run(f"cxltrack bat set {dst} 2 1")

    def dma(from_addr: int, to_addr: int, to_device: bool) -> None:
        t.run(f"pci-bar {bar} write 0x80 {from_addr:#x} 64")
        t.run(f"pci-bar {bar} write 0x88 {to_addr:#x} 64")
        t.run(f"pci-bar {bar} write 0x90 4096 64")
        t.run(f"pci-bar {bar} write 0x98 {3 if to_device else 1:#x} 64")
        for _ in range(100):
            if int(t.run(f"pci-bar {bar} read 0x98 64").out, 0) & 1 == 0:
                return
            time.sleep(0.05)
        raise AssertionError("edu DMA did not complete")

    dma(hpa + src * 4096, EDU_DMA_BUF, to_device=False)  # DMA read of CXL page src
    dma(EDU_DMA_BUF, hpa + dst * 4096, to_device=True)  # DMA write of CXL page dst
    assert t.run(f"cxlt-test peek {DAX} {dst * 4096} 64").out.strip() == PATTERN
    assert t.run("cxltrack harvest dirty 0 1024 --clear").out.split() == [str(dst)]
    assert t.run("cxltrack harvest accessed 0 1024 --clear").out.split() == [str(src), str(dst)]
    assert t.run(f"cxltrack bat get {dst}").out.strip() == "invalid"  # DMA write invalidated it
    assert t.run(f"cxltrack bat get {src}").out.strip() == "valid block=1 disk=1"  # DMA read did not
    assert t.run(f"cxltrack bat discard {dst}").out.strip() == "dirty"
