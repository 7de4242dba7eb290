# SPDX-License-Identifier: Apache-2.0
"""Driving DramHarvestBench (rtl/src/cxltrack/DramHarvestBench.scala) one cycle at a time: HarvestDut's ports plus a
hotness increment and two BAT invalidations per cycle, the sparse DRAM model on `d_axi`, host memory on `h_axi`, the
overflow monitor, and harvests and BAT commands run to completion. Their results are checked by tb.dram.checkers."""

from __future__ import annotations

from typing import Any

from cxltrack import regs
from cxltrack.regs import Op

from ..harvest.driver import HarvestDut, op_value, params
from .checkers import GROUP_PAGES, BatChecker, Checker, HotChecker
from .sparse_dram import HostMemory, SparseDram

_OP = regs.REGISTERS["CMD_OP"]
HARVEST_TIMEOUT = 500_000  # cycles: a 64 GiB DMA harvest (test_dram_dma) takes ~100 000


def dma_op_value(table: int, clear: bool) -> int:
    return op_value(table, clear) | int(_OP.field("DMA").put(1))


HOT_MODES = ("read", "clear", "decay")


def hot_op_value(mode: str, dma: bool) -> int:
    """CMD_OP of a hotness harvest: `mode` read, clear (CLEAR) or decay (DECAY)."""
    return int(
        _OP.field("OP").put(Op.HARVEST_HOTNESS)
        | _OP.field("CLEAR").put(int(mode == "clear"))
        | _OP.field("DECAY").put(int(mode == "decay"))
        | _OP.field("DMA").put(int(dma))
    )


BAT_OPS = {"set": Op.BAT_SET, "get": Op.BAT_GET, "clear": Op.BAT_CLEAR, "discard": Op.BAT_DISCARD}


class DramDut(HarvestDut):
    """HarvestDut with the DRAM model on `d_axi`, the host memory model on `h_axi`, and the overflow monitor."""

    def __init__(
        self, dut: Any, dram: SparseDram, checker: Checker, hot: HotChecker | None = None, bat: BatChecker | None = None
    ) -> None:
        super().__init__(dut)
        group = params()["group_pages"]
        assert group == GROUP_PAGES, f"the RTL's overflow group is {group} pages, the checkers assume {GROUP_PAGES}"
        self.dram = dram
        self.host = HostMemory(dut)
        self.checker = checker
        self.hot = hot
        self.bat = bat
        self.bat_overflows = 0  # invalidations that found the update cache full
        self._invs: tuple[int | None, int | None] = (None, None)  # the BAT invalidations of this cycle
        self.stalled = 0  # cycles the engine's clock was held
        self.overflows = 0  # sets that found the update cache full
        self.hot_overflows = 0  # increments that found the update cache full
        self._inc: int | None = None  # the hotness increment of this cycle

    async def step(
        self,
        launch: tuple[int, int, int] | None = None,
        sets: tuple[int | None, int | None] = (None, None),
        read: int | None = None,
        arg2: int = 0,
        inc: int | None = None,
        invs: tuple[int | None, int | None] = (None, None),
    ) -> None:
        """HarvestDut.step, plus a hotness increment of page `inc` and BAT invalidations (writes) of pages `invs`."""
        d = self.dut
        d.io_hotInc_valid.value = int(inc is not None)
        d.io_hotInc_bits.value = inc or 0
        self._inc = inc
        if inc is not None and self.hot is not None:
            self.hot.inc(self.cycle, inc)
        self._invs = invs
        for k, page in enumerate(invs):
            getattr(d, f"io_batInv_{k}_valid").value = int(page is not None)
            getattr(d, f"io_batInv_{k}_bits").value = page or 0
            if page is not None and self.bat is not None:
                self.bat.inv(self.cycle, page)
        await super().step(launch, sets, read, arg2)

    async def start(self) -> None:
        self.dut.io_hotInc_valid.value = 0
        self.dut.io_batInv_0_valid.value = 0
        self.dut.io_batInv_1_valid.value = 0
        self.dram.start()
        await super().start()
        self.host.start()

    def on_set(self, table: int, page: int) -> None:
        self.checker.record_set(table, self.cycle, page)

    def sampled(self, sets: tuple[int | None, int | None]) -> None:
        d = self.dut
        self.stalled += 1 - int(d.io_engineEn.value)
        ovf = int(d.io_overflow.value)
        for table, page in enumerate(sets):
            if page is not None and ovf >> table & 1:
                self.checker.overflow(table, self.cycle, page)
                self.overflows += 1
        for k, page in enumerate(self._invs):
            if page is not None and ovf >> (3 + k) & 1:
                assert self.bat is not None, "a BAT invalidation without a BatChecker"
                self.bat.overflow(self.cycle, page)
                self.bat_overflows += 1
        if self._inc is not None and ovf >> 2 & 1:
            assert self.hot is not None, "a hotness increment without a HotChecker"
            self.hot.overflow(self.cycle, self._inc)
            self.hot_overflows += 1

    async def harvest(
        self, table: int, start: int, count: int, clear: bool, sets: Any = None, dma_addr: int | None = None
    ) -> tuple[set[int], int, int]:
        """Launch one harvest (RESULT window, or DMA to `dma_addr`), run `sets(cycle)` each cycle while it is busy,
        wait for it and the tables to be idle, read the result back; returns (reported pages, launch, done)."""
        sets = sets or (lambda: (None, None))
        launch = self.cycle
        op = dma_op_value(table, clear) if dma_addr is not None else op_value(table, clear)
        await self.step(launch=(op, start, count), sets=sets(), arg2=dma_addr or 0)
        while True:
            await self.step(sets=sets())
            if not self.busy:
                break
            if self.cycle - launch > HARVEST_TIMEOUT:
                d = self.dut
                raise AssertionError(
                    f"harvest table {table} [{start}, +{count}) clear {clear} launched at {launch}: still busy after "
                    f"{HARVEST_TIMEOUT} cycles (engine enable {int(d.io_engineEn.value)}, cache occupancy "
                    f"{int(d.io_occupancy.value)}, DRAM reads {self.dram.stats.reads} writes {self.dram.stats.writes})"
                )
        done = self.cycle
        code, result0 = self.status()
        assert code == 0, f"harvest table {table} [{start}, +{count}) clear {clear}: status {code:#x}"
        if dma_addr is not None:
            raw = self.host.read_bytes(dma_addr, count // 8)
        else:
            raw = b"".join([await self.read_line(line) for line in range((count // 8 + 63) // 64)])[: count // 8]
        value = int.from_bytes(raw, "little")
        reported = set()
        while value:
            low = value & -value
            reported.add(start + low.bit_length() - 1)
            value ^= low
        assert result0 == len(reported), f"RESULT0 {result0}, {len(reported)} bits in the result"
        return reported, launch, done

    async def harvest_hot(
        self, start: int, count: int, mode: str, activity: Any = None, dma_addr: int | None = None
    ) -> tuple[bytes, int, int]:
        """Launch one hotness harvest (`mode` in HOT_MODES; RESULT window, or DMA to `dma_addr`), run
        `activity()` -> (sets, inc) each cycle while it is busy, wait for it and the tables to be idle; returns
        (a byte per page, launch, done)."""
        activity = activity or (lambda: ((None, None), None))
        launch = self.cycle
        sets, inc = activity()
        op = hot_op_value(mode, dma_addr is not None)
        await self.step(launch=(op, start, count), sets=sets, arg2=dma_addr or 0, inc=inc)
        while True:
            sets, inc = activity()
            await self.step(sets=sets, inc=inc)
            if not self.busy:
                break
            assert self.cycle - launch <= HARVEST_TIMEOUT, (
                f"hotness harvest [{start}, +{count}) {mode} launched at {launch}: still busy after "
                f"{HARVEST_TIMEOUT} cycles (engine enable {int(self.dut.io_engineEn.value)})"
            )
        done = self.cycle
        code, result0 = self.status()
        assert code == 0, f"hotness harvest [{start}, +{count}) {mode}: status {code:#x}"
        if dma_addr is not None:
            values = self.host.read_bytes(dma_addr, count)
        else:
            values = b"".join([await self.read_line(line) for line in range(count // 64)])
        assert result0 == sum(1 for v in values if v), f"RESULT0 {result0}, {sum(1 for v in values if v)} non-zero"
        return values, launch, done

    async def bat_command(
        self, op: str, page: int, payload: tuple[int, int] = (0, 0), invs: Any = None
    ) -> tuple[tuple[int, int], int, int]:
        """Run one BAT command (`op` a BAT_OPS key; BAT_SET with `payload` = (block, disk)) with `invs()` giving the
        writes of each cycle, until the engine and the tables are idle (a BAT_SET takes effect after the engine
        completes it); returns ((RESULT0, RESULT1), launch, done)."""
        invs = invs or (lambda: (None, None))
        launch = self.cycle
        value = int(_OP.field("OP").put(BAT_OPS[op]))
        await self.step(launch=(value, page, payload[0]), arg2=payload[1], invs=invs())
        while True:
            await self.step(invs=invs())
            if not self.busy and int(self.dut.io_idle.value):
                break
            assert self.cycle - launch <= HARVEST_TIMEOUT, f"BAT {op} page {page}: not idle after {HARVEST_TIMEOUT}"
        code, result0 = self.status()
        assert code == 0, f"BAT {op} page {page}: status {code:#x}"
        return (result0, int(self.dut.io_result1.value)), launch, self.cycle
