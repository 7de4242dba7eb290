# SPDX-License-Identifier: Apache-2.0
"""A cxltrack device in QEMU, driven over qtest the way firmware and host
software would: PCI enumeration behind the CXL root port, BARs, MSI-X, the
endpoint's HDM decoder committed so that the CXL fixed window reaches the
type-3 device, then tracker registers in BAR0 of function 1 and memory
requests through the window (HPA = window base + DPA).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from qemu_util import Qemu, cxl_args

from cxltrack import regs
from cxltrack.config import DeviceConfig

# Bus numbers: pxb-cxl bus_nr=12 holds the root port (12:00.0); we program
# its secondary bus to 13, where cxl-type3 is 13:00.0 and cxltrack 13:00.1.
RP_BUS, EP_BUS = 12, 13
MMIO_BASE = 0xC000_0000  # inside q35's 32-bit PCI hole (RAM ends at 2 GiB)
TRK_BAR0 = MMIO_BASE
TRK_MSIX_BAR = MMIO_BASE + 0x10_0000
T3_COMPONENT_BAR = MMIO_BASE + 0x20_0000
T3_DEVICE_BAR = MMIO_BASE + 0x40_0000
MSI_ADDR = 0x10_0000  # guest RAM the MSI-X message is written to
MSI_DATA = 0xC0DE
# The endpoint's HDM decoder 0 (hw/cxl/cxl_component.h: cache/mem registers
# at 0x1000 of the component BAR, HDM capability at 0x128 within them).
HDM0 = 0x1000 + 0x128 + 0x10
HDM_BASE_LO, HDM_BASE_HI, HDM_SIZE_LO, HDM_SIZE_HI, HDM_CTRL = (0x0, 0x4, 0x8, 0xC, 0x10)
HDM_CTRL_COMMIT, HDM_CTRL_COMMITTED = 1 << 9, 1 << 10
DECODE_SIZE = 256 << 20


class TrackerVM:
    """QEMU (accel=qtest) with the topology, enumerated and decoded."""

    ep_bus = EP_BUS  # the bus of the device's two functions

    def __init__(self, cfg: DeviceConfig, tracking: bool = True, extra_tracker: str = "") -> None:
        self.cfg = cfg
        self.vm = Qemu(cxl_args(cfg=cfg, extra_tracker=extra_tracker), qtest=True)
        self.setup_pci()
        self.window = self.find_window()
        self.commit_hdm()

    # -- PCI config through 0xcf8/0xcfc ---------------------------------------
    def cfg_addr(self, bus: int, dev: int, fn: int, reg: int) -> int:
        return 0x8000_0000 | bus << 16 | dev << 11 | fn << 8 | (reg & 0xFC)

    def cfg_read(self, bus: int, dev: int, fn: int, reg: int) -> int:
        self.vm.outl(0xCF8, self.cfg_addr(bus, dev, fn, reg))
        return self.vm.inl(0xCFC)

    def cfg_write(self, bus: int, dev: int, fn: int, reg: int, val: int) -> None:
        self.vm.outl(0xCF8, self.cfg_addr(bus, dev, fn, reg))
        self.vm.outl(0xCFC, val)

    def find_cap(self, bus: int, dev: int, fn: int, cap_id: int) -> int:
        ptr = self.cfg_read(bus, dev, fn, 0x34) & 0xFF
        while ptr:
            hdr = self.cfg_read(bus, dev, fn, ptr)
            if hdr & 0xFF == cap_id:
                return ptr
            ptr = hdr >> 8 & 0xFF
        raise LookupError(f"capability {cap_id:#x} not found")

    def setup_pci(self) -> None:
        # Root port: bus numbers, a 16 MiB memory window, memory + bus master.
        self.cfg_write(RP_BUS, 0, 0, 0x18, EP_BUS << 16 | EP_BUS << 8 | RP_BUS)
        self.cfg_write(RP_BUS, 0, 0, 0x20, (MMIO_BASE + 0xFF_FFFF) & 0xFFF0_0000 | MMIO_BASE >> 16)
        self.cfg_write(RP_BUS, 0, 0, 0x24, 0x0000_FFF0)  # prefetchable window off
        self.cfg_write(RP_BUS, 0, 0, 0x04, 0x6)
        ids = self.cfg_read(EP_BUS, 0, 1, 0)
        assert ids == regs.PCI_DEVICE_ID << 16 | regs.PCI_VENDOR_ID, hex(ids)
        self.program_tracker_bars()
        # cxl-type3: component registers (BAR0) and device registers (BAR2).
        self.cfg_write(EP_BUS, 0, 0, 0x10, T3_COMPONENT_BAR)
        self.cfg_write(EP_BUS, 0, 0, 0x14, 0)
        self.cfg_write(EP_BUS, 0, 0, 0x18, T3_DEVICE_BAR)
        self.cfg_write(EP_BUS, 0, 0, 0x1C, 0)
        self.cfg_write(EP_BUS, 0, 0, 0x04, 0x6)

    def program_tracker_bars(self) -> None:
        self.cfg_write(self.ep_bus, 0, 1, 0x10, TRK_BAR0)
        self.cfg_write(self.ep_bus, 0, 1, 0x14, 0)
        self.cfg_write(self.ep_bus, 0, 1, 0x18, TRK_MSIX_BAR)
        self.cfg_write(self.ep_bus, 0, 1, 0x1C, 0)
        self.cfg_write(self.ep_bus, 0, 1, 0x04, 0x6)
        # MSI-X: entry 0 -> a RAM address, unmasked; then enable.
        cap = self.find_cap(self.ep_bus, 0, 1, 0x11)
        table = self.cfg_read(self.ep_bus, 0, 1, cap + 4)
        assert table & 7 == 2, "MSI-X table expected in BAR2"
        base = TRK_MSIX_BAR + (table & ~7)
        self.vm.writel(base + 0, MSI_ADDR)
        self.vm.writel(base + 4, 0)
        self.vm.writel(base + 8, MSI_DATA)
        self.vm.writel(base + 12, 0)
        ctrl = self.cfg_read(self.ep_bus, 0, 1, cap)
        self.cfg_write(self.ep_bus, 0, 1, cap, ctrl | 1 << 31)

    def flr(self) -> None:
        """Function-level reset of the tracker (spec section 11)."""
        cap = self.find_cap(self.ep_bus, 0, 1, 0x10)
        devctl = self.cfg_read(self.ep_bus, 0, 1, cap + 8)
        self.cfg_write(self.ep_bus, 0, 1, cap + 8, devctl | 1 << 15)
        self.program_tracker_bars()

    def msix_mask(self, function: bool, masked: bool) -> None:
        """Mask or unmask the tracker's MSI-X function (Message Control bit 14) or its
        vector 0 (the table entry's Vector Control bit 0)."""
        cap = self.find_cap(self.ep_bus, 0, 1, 0x11)
        if function:
            ctrl = self.cfg_read(self.ep_bus, 0, 1, cap)
            self.cfg_write(self.ep_bus, 0, 1, cap, ctrl & ~(1 << 30) | masked << 30)
        else:
            table = self.cfg_read(self.ep_bus, 0, 1, cap + 4)
            self.vm.writel(TRK_MSIX_BAR + (table & ~7) + 12, int(masked))

    def find_window(self) -> int:
        mtree = self.vm.qmp.hmp("info mtree")
        m = re.search(r"([0-9a-f]+)-[0-9a-f]+ \(prio \d+, i/o\): cxl-fixed-memory-region", mtree)
        assert m, mtree
        return int(m.group(1), 16)

    def commit_hdm(self) -> None:
        base = T3_COMPONENT_BAR + HDM0
        self.vm.writel(base + HDM_BASE_LO, self.window & 0xF000_0000)
        self.vm.writel(base + HDM_BASE_HI, self.window >> 32)
        self.vm.writel(base + HDM_SIZE_LO, DECODE_SIZE & 0xF000_0000)
        self.vm.writel(base + HDM_SIZE_HI, DECODE_SIZE >> 32)
        self.vm.writel(base + HDM_CTRL, HDM_CTRL_COMMIT)
        assert self.vm.readl(base + HDM_CTRL) & HDM_CTRL_COMMITTED

    # -- tracker ---------------------------------------------------------------
    def reg_read(self, offset: int, size: int = 4) -> int:
        return self._rd(TRK_BAR0 + offset, size)

    def reg_write(self, offset: int, value: int, size: int = 4) -> None:
        self._wr(TRK_BAR0 + offset, value, size)

    def _rd(self, addr: int, size: int) -> int:
        return {1: self.vm.readb, 2: self.vm.readw, 4: self.vm.readl, 8: self.vm.readq}[size](addr)

    def _wr(self, addr: int, value: int, size: int) -> None:
        {1: self.vm.writeb, 2: self.vm.writew, 4: self.vm.writel, 8: self.vm.writeq}[size](addr, value)

    def mem_read(self, dpa: int, size: int) -> tuple[str, int]:
        before = self.reg_read(regs.STAT_DECERR)
        value = self._rd(self.window + dpa, size)
        resp = "decerr" if self.reg_read(regs.STAT_DECERR) != before else "okay"
        return resp, value

    def mem_write(self, dpa: int, data: bytes) -> str:
        before = self.reg_read(regs.STAT_DECERR)
        self._wr(self.window + dpa, int.from_bytes(data, "little"), len(data))
        return "decerr" if self.reg_read(regs.STAT_DECERR) != before else "okay"

    # -- the type-3 device's CXL mailbox (function 0, BAR2) --------------------
    def mailbox_base(self) -> int:
        count = self.vm.readq(T3_DEVICE_BAR) >> 32 & 0xFFFF
        for i in range(1, count + 1):
            if self.vm.readl(T3_DEVICE_BAR + 0x10 * i) & 0xFFFF == 2:  # mailbox capability
                return T3_DEVICE_BAR + self.vm.readl(T3_DEVICE_BAR + 0x10 * i + 4)
        raise LookupError("no mailbox capability")

    def mailbox(self, opcode: int, payload: bytes = b"") -> int:
        """Run one mailbox command; returns its return code (1: background started)."""
        mb = self.mailbox_base()
        if payload:
            self.vm.write(mb + 0x20, payload)
        self.vm.writeq(mb + 0x08, opcode | len(payload) << 16)
        self.vm.writel(mb + 0x04, 1)
        for _ in range(1000):
            if not self.vm.readl(mb + 0x04) & 1:
                break
        return self.vm.readq(mb + 0x10) >> 32 & 0xFFFF

    def mailbox_bg_percent(self) -> int:
        return self.vm.readq(self.mailbox_base() + 0x18) >> 16 & 0x7F

    def msi_count(self) -> int:
        return int(self.vm.qmp.command("qom-get", path="/machine/peripheral/tracker0", property="msi-count"))

    def close(self) -> int:
        return self.vm.close()

    def __enter__(self) -> TrackerVM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.vm.__exit__(*exc)


def mapped_ranges(mtree_flat: str, start: int, end: int) -> list[str]:
    """Lines of the flat view of the system address space ("info mtree -f") that overlap
    [start, end)."""
    hits: list[str] = []
    in_memory = False
    for line in mtree_flat.splitlines():
        if line.startswith("FlatView"):
            in_memory = False
        elif line.strip().startswith('AS "memory"'):
            in_memory = True
        elif in_memory:
            m = re.match(r"\s*([0-9a-f]+)-([0-9a-f]+) ", line)
            if m and int(m.group(1), 16) < end and start <= int(m.group(2), 16):
                hits.append(line.strip())
    return hits


def strobe_accesses(offset: int, value: int, size: int, strobe: int | None) -> list[tuple[int, int, int]]:
    """QEMU has no byte strobes: express an AXI4-Lite strobed write as the
    accesses a CPU would make (one naturally aligned access for a contiguous
    run, else one byte write per strobed byte)."""
    full = (1 << size) - 1
    if strobe is None or strobe & full == full:
        return [(offset, value, size)]
    strobe &= full
    if strobe == 0:
        return []
    lo = (strobe & -strobe).bit_length() - 1
    hi = strobe.bit_length()
    run = hi - lo
    if strobe == ((1 << run) - 1) << lo and run in (1, 2, 4) and lo % run == 0:
        return [(offset + lo, value >> 8 * lo & ((1 << 8 * run) - 1), run)]
    return [(offset + i, value >> 8 * i & 0xFF, 1) for i in range(size) if strobe >> i & 1]


class QemuTarget:
    """cxltrack.vectors.replay.Target on a TrackerVM. Commands complete
    within the CMD_OP write, so settle is a no-op and a race is one
    serialisation of the command and the writes (chosen by the schedule)."""

    def __init__(self, vm: TrackerVM) -> None:
        self.t = vm
        self.started = False

    async def reset(self) -> None:
        if self.started:
            self.t.flr()
        self.started = True

    async def reg_read(self, offset: int, size: int) -> int:
        return self.t.reg_read(offset, size)

    async def reg_write(self, offset: int, value: int, size: int, strobe: int | None) -> None:
        for off, val, sz in strobe_accesses(offset, value, size, strobe):
            self.t.reg_write(off, val, sz)

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        return self.t.mem_read(addr, size)

    async def mem_write(self, addr: int, data: bytes) -> str:
        return self.t.mem_write(addr, data)

    async def settle(self) -> None:
        return None

    async def tick(self, n: int) -> None:
        self.t.vm.clock_step(n * self.t.cfg.tick_ns)

    # -- host memory for the dma cases: guest physical memory at the bus address (no IOMMU) --
    async def host_fill(self, addr: int, length: int, byte: int) -> None:
        self.t.vm.memset(addr, length, byte)

    async def host_read(self, addr: int, length: int) -> bytes:
        return self.t.vm.read(addr, length)

    async def host_fault(self, addr: int, length: int) -> None:
        """A DMA write fails where nothing is mapped (MEMTX_DECODE_ERROR): make sure that holds."""
        hit = mapped_ranges(self.t.vm.qmp.hmp("info mtree -f"), addr, addr + length)
        assert not hit, f"fault range {addr:#x}+{length:#x} is mapped: {hit}"

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int
    ) -> None:
        writes_first = schedule % 2 == 0
        if writes_first:
            for addr, data in mem_writes:
                self.t.mem_write(addr, data)
        for off, val in reg_writes:
            self.t.reg_write(off, val)
        if not writes_first:
            for addr, data in mem_writes:
                self.t.mem_write(addr, data)
