# SPDX-License-Identifier: Apache-2.0
"""Driving HarvestBench (rtl/src/cxltrack/HarvestBench.scala) one cycle at a time, and a reference of the harvest
engine with its exact cycle timing (docs/rtl-notes.md, "Same-cycle order"): a page set presented in cycle t is in the
summary the check cycle C scans iff t <= C - 3; the marked rows of the range are stepped at C + 1, C + 2, ... lowest
first, and a row stepped at u reports the sets presented at u - 1 or earlier (a set in u itself comes after the step);
the command is busy for 1 cycle (no row marked) or k + 3 cycles (k rows marked); RESULT holds the reported bits over
the range, zero for rows not stepped."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from cxltrack import regs
from cxltrack.regs import Op

_OP = regs.REGISTERS["CMD_OP"]
DIRTY, ACCESSED = 0, 1
OPS = (Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED)
ROW = 512  # pages per bitmap row (CxlTrackParams.rowLanes)


def params() -> dict[str, int]:
    """The parameters HarvestBenchMain wrote next to the SystemVerilog (harvest.json)."""
    path = os.environ.get("CXLTRACK_HARVEST_JSON")
    assert path, "CXLTRACK_HARVEST_JSON is not set (run through sim/test_rtl.py or sim/bench_harvest.py)"
    p: dict[str, int] = json.loads(Path(path).read_text())
    assert p["row_lanes"] == ROW
    return p


def op_value(table: int, clear: bool) -> int:
    return int(_OP.field("OP").put(OPS[table]) | _OP.field("CLEAR").put(int(clear)))


@dataclass
class Outcome:
    """What the reference expects of one harvest."""

    reported: set[int]  # pages reported (RESULT bit set)
    rows: list[int]  # rows stepped, in order
    busy: int  # cycles with BUSY set


class Reference:
    """The bitmaps with every set timed by the cycle it was presented in."""

    def __init__(self) -> None:
        self.bits: list[set[int]] = [set(), set()]
        self.pending: list[list[tuple[int, int]]] = [[], []]  # (cycle, page), not yet applied

    def set(self, table: int, cycle: int, page: int) -> None:
        self.pending[table].append((cycle, page))

    def _apply_until(self, table: int, cycle: int) -> None:
        keep = []
        for t, page in self.pending[table]:
            if t <= cycle:
                self.bits[table].add(page)
            else:
                keep.append((t, page))
        self.pending[table] = keep

    def harvest(self, table: int, start: int, count: int, clear: bool, check: int) -> Outcome:
        """The harvest whose check cycle is `check`; call it once every set up to its end has been recorded."""
        bits = self.bits[table]
        self._apply_until(table, check - 3)
        first, last = start // ROW, (start + count - 1) // ROW
        marked = [r for r in range(first, last + 1) if any(r * ROW <= p < (r + 1) * ROW for p in bits)]
        reported: set[int] = set()
        for i, row in enumerate(marked):
            self._apply_until(table, check + i)  # the step is at check + 1 + i; sets of that cycle come after it
            got = {p for p in bits if row * ROW <= p < (row + 1) * ROW and start <= p < start + count}
            reported |= got
            if clear:
                bits -= got
        return Outcome(reported, marked, 1 if not marked else len(marked) + 3)


class HarvestDut:
    """HarvestBench's ports, driven at falling edges and sampled in the read-only phase after them."""

    def __init__(self, dut: Any) -> None:
        self.dut = dut
        p = params()
        self.pages, self.rows, self.has_accessed = p["pages"], p["rows"], bool(p["accessed"])
        self.cycle = 0
        self.busy = 0
        self.line: bytes | None = None  # the RESULT line read the cycle before

    async def start(self) -> None:
        d = self.dut
        d.reset.value = 1
        for name in ("io_launch_valid", "io_resultRead_valid", "io_dirtySet_valid", "io_accessedSet_valid"):
            getattr(d, name).value = 0
        # the DMA port: quiet (no DMA harvest here; bench_harvest64g drives it for its own)
        for name in ("awready", "wready", "bvalid", "bresp", "bid"):
            getattr(d, f"h_axi_{name}").value = 0
        cocotb.start_soon(Clock(d.clock, 10, unit="ns").start())  # type: ignore[arg-type]
        await ClockCycles(d.clock, 3)
        await FallingEdge(d.clock)
        d.reset.value = 0
        while True:
            await self.step()
            if int(d.io_ready.value):
                break

    async def step(
        self,
        launch: tuple[int, int, int] | None = None,
        sets: tuple[int | None, int | None] = (None, None),
        read: int | None = None,
    ) -> None:
        """One cycle: a launch (CMD_OP value, ARG0, ARG1), a page set on each table, a RESULT line read."""
        d = self.dut
        d.io_launch_valid.value = int(launch is not None)
        if launch is not None:
            d.io_launch_bits.value = launch[0]
            d.io_args_0.value = launch[1]
            d.io_args_1.value = launch[2]
            d.io_args_2.value = 0
        for name, page in zip(("io_dirtySet", "io_accessedSet"), sets, strict=True):
            getattr(d, f"{name}_valid").value = int(page is not None)
            if page is not None:
                getattr(d, f"{name}_bits").value = page
        d.io_resultRead_valid.value = int(read is not None)
        d.io_resultRead_bits.value = read or 0
        await ReadOnly()
        self.busy = int(d.io_busy.value)
        await FallingEdge(d.clock)
        self.cycle += 1

    async def read_line(self, line: int) -> bytes:
        await self.step(read=line)
        await ReadOnly()
        got = bytes(int(getattr(self.dut, f"io_resultLine_{k}").value) for k in range(64))
        await FallingEdge(self.dut.clock)
        self.cycle += 1
        self._idle_inputs()
        return got

    def _idle_inputs(self) -> None:
        d = self.dut
        for name in ("io_launch_valid", "io_resultRead_valid", "io_dirtySet_valid", "io_accessedSet_valid"):
            getattr(d, name).value = 0

    def status(self) -> tuple[int, int]:
        """(CMD_STATUS code, RESULT0) as the engine holds them now."""
        return int(self.dut.io_code.value), int(self.dut.io_result0.value)
