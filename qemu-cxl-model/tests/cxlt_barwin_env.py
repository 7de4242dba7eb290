# SPDX-License-Identifier: Apache-2.0
"""The PCIe-attached flavour of the cxltrack device in QEMU (docs/spec.md section 10, the
Alveo build's interface): function 0 is a cxltrack-mem whose 64-bit prefetchable BAR0 is the
memory window (BAR offset = DPA), function 1 the tracker, both behind a plain PCIe root port,
no CXL anywhere. Driven over qtest like TrackerVM; the window is the BAR instead of a CXL fixed
window behind an HDM decoder."""

from __future__ import annotations

from cxlt_env import MMIO_BASE, TrackerVM
from qemu_util import Qemu

from cxltrack import regs
from cxltrack.config import DeviceConfig
from cxltrack.harness.tracker import barwin_topology

RP_DEV = 4  # the root port is 00:04.0; the device's functions are 01:00.0 and 01:00.1
EP_BUS = 1
MEM_SIZE = 256 << 20  # the memory backend: the BAR covers more than small configurations track
MEM_BAR = 0xD000_0000  # in q35's 32-bit hole, naturally aligned for 256 MiB


def barwin_args(cfg: DeviceConfig | None = None) -> list[str]:
    """QEMU arguments of the harness's PCIe-attached topology (harness/tracker.py), the
    tracker `tracker0` configured as `cfg` (or QEMU's defaults)."""
    return barwin_topology(cfg, mem_size=f"{MEM_SIZE >> 20}M").args()


class BarTrackerVM(TrackerVM):
    """QEMU (accel=qtest) with the PCIe-attached flavour, enumerated."""

    ep_bus = EP_BUS

    def __init__(self, cfg: DeviceConfig, tracking: bool = True) -> None:
        self.cfg = cfg
        self.vm = Qemu(barwin_args(cfg), qtest=True)
        self.setup_pci()
        self.window = MEM_BAR

    def setup_pci(self) -> None:
        # Root port: bus numbers, a 16 MiB window for the tracker's BARs, a prefetchable one for
        # the memory BAR, memory + bus master.
        self.cfg_write(0, RP_DEV, 0, 0x18, EP_BUS << 16 | EP_BUS << 8)
        self.cfg_write(0, RP_DEV, 0, 0x20, (MMIO_BASE + 0xFF_FFFF) & 0xFFF0_0000 | MMIO_BASE >> 16)
        last = MEM_BAR + MEM_SIZE - 1
        self.cfg_write(0, RP_DEV, 0, 0x24, last & 0xFFF0_0000 | MEM_BAR >> 16)
        self.cfg_write(0, RP_DEV, 0, 0x28, 0)  # prefetchable base, upper 32 bits
        self.cfg_write(0, RP_DEV, 0, 0x2C, 0)  # prefetchable limit, upper 32 bits
        self.cfg_write(0, RP_DEV, 0, 0x04, 0x6)
        assert self.cfg_read(EP_BUS, 0, 0, 0) == regs.PCI_MEM_DEVICE_ID << 16 | regs.PCI_VENDOR_ID
        assert self.cfg_read(EP_BUS, 0, 1, 0) == regs.PCI_DEVICE_ID << 16 | regs.PCI_VENDOR_ID
        self.cfg_write(EP_BUS, 0, 0, 0x10, MEM_BAR)
        self.cfg_write(EP_BUS, 0, 0, 0x14, 0)
        self.cfg_write(EP_BUS, 0, 0, 0x04, 0x2)  # memory space
        self.program_tracker_bars()

    def bar_size(self, fn: int, bar: int) -> tuple[int, int]:
        """Size a 64-bit BAR as firmware does (all ones, read back); returns (size, flags) and
        restores the BAR."""
        off = 0x10 + 4 * bar
        lo, hi = self.cfg_read(EP_BUS, 0, fn, off), self.cfg_read(EP_BUS, 0, fn, off + 4)
        self.cfg_write(EP_BUS, 0, fn, off, 0xFFFF_FFFF)
        self.cfg_write(EP_BUS, 0, fn, off + 4, 0xFFFF_FFFF)
        mlo, mhi = self.cfg_read(EP_BUS, 0, fn, off), self.cfg_read(EP_BUS, 0, fn, off + 4)
        self.cfg_write(EP_BUS, 0, fn, off, lo)
        self.cfg_write(EP_BUS, 0, fn, off + 4, hi)
        mask = (mhi << 32 | mlo) & ~0xF
        return ((~mask) & ((1 << 64) - 1)) + 1, mlo & 0xF
