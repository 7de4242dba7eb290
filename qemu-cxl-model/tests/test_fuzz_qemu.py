# SPDX-License-Identifier: Apache-2.0
"""Bounded random fuzz of the QEMU cxltrack device against the reference
model: random register programming (legal and illegal offsets, widths and
alignments, random opcodes, flags and arguments), slot window traffic and
memory requests through the CXL window (unaligned ones too, crossing lines, pages and the
capacity's end: one request per line), function-level resets and MSI-X masking amid the
traffic, time, and DMA harvests (spec 5.3) into guest RAM, into nothing (the model's host
memory has faults there) and at the top of the address space. Every read, and the guest RAM
the harvests write, must agree with the model, and QEMU must neither abort nor print anything."""

from __future__ import annotations

import random

import pytest
from cxlt_env import DECODE_SIZE, TrackerVM, mapped_ranges

from cxltrack import regs
from cxltrack.cmdregs import launch_writes
from cxltrack.config import DeviceConfig, named
from cxltrack.model.device import LINE, Device
from cxltrack.regs import Op
from cxltrack.vectors.format import HOST_BASE, HOST_FAULT_BASE

REG_OFFSETS = sorted(r.offset for r in regs.REGISTERS.values())
OPS = [int(o) for o in Op]
_OP = regs.REGISTERS["CMD_OP"]
# Where DMA harvests go: guest RAM (HOST_BASE, 1 MiB), nothing (HOST_FAULT_BASE, 1 GiB), and the
# top MiB below 2^64 (nothing either): faults in the model's host memory.
DMA_RAM = 1 << 20
FAULTS = ((HOST_FAULT_BASE, 1 << 30), (2**64 - (1 << 20), 1 << 20))


class Fuzzer:
    def __init__(self, cfg: DeviceConfig, seed: int) -> None:
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.model = Device(cfg)
        for addr, length in FAULTS:
            self.model.host.fault(addr, length)
        self.log: list[str] = []

    def offset(self) -> int:
        r = self.rng.random()
        if r < 0.55:
            return self.rng.choice(REG_OFFSETS)
        if r < 0.65:
            return self.rng.randrange(0, 0x1000)
        if r < 0.75:
            return regs.RESULT + self.rng.randrange(0, regs.RESULT_SIZE)
        if r < 0.95:
            n = (
                self.rng.randrange(0, regs.SLOT_COUNT)
                if self.rng.random() < 0.3
                else self.rng.randrange(self.cfg.slots)
            )
            return regs.SLOT + n * regs.SLOT_STRIDE + self.rng.randrange(0, regs.SLOT_SIZE)
        return self.rng.randrange(0x2000, 0x10000)

    def size(self) -> int:
        return self.rng.choices([1, 2, 4, 8], weights=[1, 1, 8, 2])[0]

    def aligned(self, off: int, size: int) -> int:
        if self.rng.random() < 0.85:
            off -= off % size
        return min(off, regs.BAR_SIZE - size)

    def arg(self) -> int:
        cfg = self.cfg
        r = self.rng.random()
        if r < 0.3:
            return self.rng.randrange(0, 8)
        if r < 0.55:
            return 64 * self.rng.randrange(0, cfg.pages // 64 + 2)
        if r < 0.75:
            return self.rng.randrange(0, cfg.pages + 4)
        if r < 0.85:
            return self.rng.randrange(0, cfg.chunks + 2)
        if r < 0.95:
            return self.rng.randrange(0, 1 << 17)
        return self.rng.getrandbits(64)

    def cmd_value(self) -> int:
        op = self.rng.choice(OPS) if self.rng.random() < 0.9 else self.rng.randrange(256)
        clear = self.rng.random() < 0.25
        decay = self.rng.random() < 0.1
        dma = self.rng.random() < 0.15
        if dma and self.rng.random() < 0.7:  # mostly on a harvest, which takes it
            op = int(self.rng.choice([Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS]))
            decay = decay and op == Op.HARVEST_HOTNESS and not clear
        rsvd = self.rng.getrandbits(_OP.field("RSVD").width) if self.rng.random() < 0.05 else 0
        return (
            _OP.field("OP").put(op)
            | _OP.field("CLEAR").put(clear)
            | _OP.field("DECAY").put(decay)
            | _OP.field("DMA").put(dma)
            | _OP.field("RSVD").put(rsvd)
        )

    def dma_addr(self) -> int:
        r = self.rng.random()
        if r < 0.6:
            return HOST_BASE + 64 * self.rng.randrange(DMA_RAM // 64 // 2)
        if r < 0.7:
            return HOST_BASE + self.rng.randrange(DMA_RAM // 2)  # misaligned: ALIGN
        if r < 0.85:
            return HOST_FAULT_BASE + 64 * self.rng.randrange(1 << 16)
        return 2**64 - 64 * self.rng.randrange(1, 1 << 12)  # fits, or wraps: RANGE

    def step(self, t: TrackerVM) -> None:
        rng, m, cfg = self.rng, self.model, self.cfg
        kind = rng.choices(
            ["cmd", "reg_write", "reg_read", "mem_write", "mem_read", "tick", "events", "pci"],
            weights=[20, 20, 20, 15, 15, 2, 8, 2],
        )[0]
        if kind == "cmd":
            cmd = self.cmd_value()
            dma = bool(_OP.field("DMA").get(cmd))
            for i in range(3):
                a = self.arg()
                if dma and i == 2:
                    a = self.dma_addr()
                elif dma and rng.random() < 0.7:  # mostly a harvest range that passes the checks
                    a = 64 * rng.randrange(cfg.pages // 64) if i == 0 else 64 * rng.randrange(1, 9)
                for off, val in ((regs.CMD_ARG0_LO + 8 * i, a & 0xFFFFFFFF), (regs.CMD_ARG0_HI + 8 * i, a >> 32)):
                    t.reg_write(off, val)
                    m.reg_write(off, val)
            self.log.append(f"cmd {cmd:#x} args {m.args}")
            t.reg_write(regs.CMD_OP, cmd)
            m.reg_write(regs.CMD_OP, cmd)
            m.settle()
            self.compare(t, regs.CMD_STATUS, 4)
            self.compare(t, regs.CMD_RESULT0_LO, 4)
            self.compare(t, regs.CMD_RESULT1_LO, 4)
            self.compare(t, regs.RESULT + 4 * rng.randrange(64), 4)
            if dma:
                # what the harvest wrote (or did not), and a random piece of the DMA RAM
                at = m.args[2] if HOST_BASE <= m.args[2] < HOST_BASE + DMA_RAM else HOST_BASE
                for addr in (at, HOST_BASE + 64 * rng.randrange(DMA_RAM // 64)):
                    got, want = t.vm.read(addr, 64), m.host.read(addr, 64)
                    assert got == want, self.fail(f"guest RAM {addr:#x}: qemu {got.hex()}, model {want.hex()}")
                # the tables it left (after a DMA error: the range marked again), by peeking harvests
                for op, limit in ((Op.HARVEST_DIRTY, 32768), (Op.HARVEST_ACCESSED, 32768), (Op.HARVEST_HOTNESS, 4096)):
                    for off, val in launch_writes(op, (0, min(cfg.pages, limit), 0)):
                        t.reg_write(off, val)
                        m.reg_write(off, val)
                    m.settle()
                    self.log.append(f"peek {op.name}")
                    self.compare(t, regs.CMD_STATUS, 4)
                    self.compare(t, regs.CMD_RESULT0_LO, 4)
        elif kind == "reg_write":
            size = self.size()
            off = self.aligned(self.offset(), size)
            if rng.random() < 0.1:
                off, size = regs.INT_ENABLE, 4
            val = rng.getrandbits(8 * size)
            self.log.append(f"reg_write {off:#x} {val:#x} /{size}")
            t.reg_write(off, val, size)
            m.reg_write(off, val, size)
            m.settle()
        elif kind == "reg_read":
            size = self.size()
            off = self.aligned(self.offset(), size)
            self.compare(t, off, size)
        elif kind in ("mem_write", "mem_read"):
            size = rng.choice([1, 2, 4, 8])
            # Beyond the capacity only while the HDM decoder still routes
            # the address to the device (a 256 MiB config fills it).
            beyond = 2 << cfg.page_shift if cfg.capacity_bytes < DECODE_SIZE else 0
            if rng.random() < 0.7:
                addr = rng.randrange(0, min(cfg.capacity_bytes, 8 << cfg.page_shift))
            elif rng.random() < 0.5:
                addr = rng.randrange(0, cfg.capacity_bytes + beyond)
            else:
                addr = cfg.capacity_bytes - rng.randrange(1, 3 << cfg.page_shift) + beyond
            unaligned = rng.random()
            if unaligned < 0.1 and size > 1:
                # straddle a page end (within the capacity, or across its end when beyond it
                # the decoder still routes to the device)
                if beyond and rng.random() < 0.5:
                    end = cfg.capacity_bytes
                else:
                    end = ((addr >> cfg.page_shift) + 1) << cfg.page_shift
                addr = end - rng.randrange(1, size)
            elif unaligned > 0.3:
                addr -= addr % size
            addr = max(0, min(addr, cfg.capacity_bytes + beyond - size))
            if kind == "mem_write":
                data = rng.randbytes(size)
                self.log.append(f"mem_write {addr:#x} {data.hex()}")
                got = t.mem_write(addr, data)
                want = self.model_write(addr, data)
                assert got == want, self.fail(f"mem_write {addr:#x} resp {got} != {want}")
            else:
                got_resp, got = t.mem_read(addr, size)
                resp, data = self.model_read(addr, size)
                want = int.from_bytes(data, "little")
                self.log.append(f"mem_read {addr:#x}/{size} = {got:#x}")
                assert (got_resp, got) == (resp, want), self.fail(
                    f"mem_read {addr:#x}/{size}: qemu {got_resp} {got:#x}, model {resp} {want:#x}"
                )
        elif kind == "tick":
            n = rng.randrange(1, 5)
            self.log.append(f"tick {n}")
            t.vm.clock_step(n * cfg.tick_ns)
            m.tick(n)
        elif kind == "pci":
            # PCI traffic between the device's own: function-level resets (the model's
            # device reset: tables and registers, not memory), MSI-X masking of the function
            # or the vector (interrupts still counted, the message left pending), config reads
            r = rng.random()
            if r < 0.15:
                self.log.append("flr")
                t.flr()
                m.reset()
            elif r < 0.6:
                function, masked = rng.random() < 0.5, rng.random() < 0.5
                self.log.append(f"msix mask function={function} masked={masked}")
                t.msix_mask(function, masked)
            else:
                t.cfg_read(t.ep_bus, 0, 1, rng.randrange(0, 256, 4))
        else:
            for off in (regs.EVQ_COUNT, regs.EVT_HEAD0, regs.EVT_HEAD1, regs.EVT_ARG_LO, regs.EVT_ARG_HI):
                self.compare(t, off, 4)
            t.reg_write(regs.EVQ_POP, 1)
            m.reg_write(regs.EVQ_POP, 1)

    @staticmethod
    def lines(addr: int, size: int) -> list[tuple[int, int]]:
        """An access as the requests it is: one per 64-byte line it touches (spec 10)."""
        parts = []
        end = addr + size
        while addr < end:
            n = min(end, (addr // LINE + 1) * LINE) - addr
            parts.append((addr, n))
            addr += n
        return parts

    def model_write(self, addr: int, data: bytes) -> str:
        resps = [self.model.mem_write(a, data[a - addr : a - addr + n]).value for a, n in self.lines(addr, len(data))]
        return "decerr" if "decerr" in resps else "okay"

    def model_read(self, addr: int, size: int) -> tuple[str, bytes]:
        parts = [self.model.mem_read(a, n) for a, n in self.lines(addr, size)]
        resp = "decerr" if any(r.value == "decerr" for r, _ in parts) else "okay"
        return resp, b"".join(d for _, d in parts)

    def compare(self, t: TrackerVM, off: int, size: int) -> None:
        got = t.reg_read(off, size)
        want = self.model.reg_read(off, size)
        self.log.append(f"reg_read {off:#x}/{size} = {got:#x}")
        assert got == want, self.fail(f"reg_read {off:#x}/{size}: qemu {got:#x}, model {want:#x}")

    def fail(self, msg: str) -> str:
        return msg + "\nlast operations:\n  " + "\n  ".join(self.log[-25:])


@pytest.mark.parametrize(("config", "seed"), [("small", s) for s in range(6)] + [("default", s) for s in range(2)])
def test_fuzz_against_model(config: str, seed: int) -> None:
    cfg = named(config)
    fz = Fuzzer(cfg, seed)
    with TrackerVM(cfg) as t:
        mtree = t.vm.qmp.hmp("info mtree -f")
        assert all(not mapped_ranges(mtree, a, a + n) for a, n in FAULTS), "a fault range of the model is mapped"
        assert mapped_ranges(mtree, HOST_BASE, HOST_BASE + DMA_RAM), "no RAM for the DMA harvests"
        # a pattern no harvest writes everywhere: zeros written show, and so do stray bytes
        t.vm.memset(HOST_BASE, DMA_RAM, 0xA5)
        fz.model.host.fill(HOST_BASE, DMA_RAM, 0xA5)
        # tick 0 of the model is the device's reset time in QEMU.
        for _ in range(3000):
            fz.step(t)
        for off in REG_OFFSETS:
            if off != regs.EVQ_POP:
                fz.compare(t, off, 4)
        assert t.msi_count() == fz.model.msi_count
        # unmasked again, a pending message is delivered and QEMU runs on
        t.msix_mask(True, False)
        t.msix_mask(False, False)
        assert t.vm.proc.poll() is None, t.vm.stderr()
        assert t.close() == 0, t.vm.stderr()
        assert t.vm.unexpected_stderr() == "", t.vm.stderr()


def test_fuzz_default_config_survives() -> None:
    """Random writes everywhere in BAR0 and the MSI-X BAR with the default
    (256 MiB) configuration: QEMU keeps running and exits cleanly."""
    cfg = named("default")
    rng = random.Random(1234)
    with TrackerVM(cfg) as t:
        from cxlt_env import TRK_BAR0, TRK_MSIX_BAR

        for _ in range(3000):
            size = rng.choice([1, 2, 4, 8])
            base = TRK_BAR0 if rng.random() < 0.9 else TRK_MSIX_BAR
            span = regs.BAR_SIZE if base == TRK_BAR0 else 0x1000
            off = rng.randrange(0, span - 8)
            if rng.random() < 0.3:
                off = rng.choice([regs.CMD_OP, regs.CMD_ARG0_LO, regs.CMD_ARG1_LO, regs.SLOT_TIMEOUT])
            if rng.random() < 0.5:
                t._wr(base + off, rng.getrandbits(8 * size), size)
            else:
                t._rd(base + off, size)
            if rng.random() < 0.05:
                t.vm.clock_step(rng.randrange(1, 10**7))
            if rng.random() < 0.1:
                t.mem_write(rng.randrange(0, cfg.capacity_bytes, 8), rng.randbytes(8))
        assert t.reg_read(regs.ID) == regs.REGISTERS["ID"].reset
        assert t.vm.proc.poll() is None, t.vm.stderr()
        assert t.close() == 0, t.vm.stderr()
        assert t.vm.unexpected_stderr() == "", t.vm.stderr()
