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
import random
from collections.abc import Callable
from dataclasses import dataclass, field
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
        arg2: int = 0,
    ) -> None:
        """One cycle: a launch (CMD_OP value, ARG0, ARG1; ARG2), a page set on each table, a RESULT line read."""
        d = self.dut
        d.io_launch_valid.value = int(launch is not None)
        if launch is not None:
            d.io_launch_bits.value = launch[0]
            d.io_args_0.value = launch[1]
            d.io_args_1.value = launch[2]
            d.io_args_2.value = arg2
        for table, (name, page) in enumerate(zip(("io_dirtySet", "io_accessedSet"), sets, strict=True)):
            getattr(d, f"{name}_valid").value = int(page is not None)
            if page is not None:
                getattr(d, f"{name}_bits").value = page
                self.on_set(table, page)
        d.io_resultRead_valid.value = int(read is not None)
        d.io_resultRead_bits.value = read or 0
        await ReadOnly()
        self.busy = int(d.io_busy.value)
        self.sampled(sets)
        await FallingEdge(d.clock)
        self.cycle += 1

    def on_set(self, table: int, page: int) -> None:
        """A page set driven on `table` (0 dirty, 1 accessed) in this cycle; for a subclass's checker."""

    def sampled(self, sets: tuple[int | None, int | None]) -> None:
        """The outputs of this cycle are settled (ReadOnly); for a subclass's monitors."""

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


@dataclass
class DmaRun:
    """What one DMA command did on HarvestBench's DMA port (h_axi)."""

    code: int = 0
    result0: int = 0
    result1: int = 0
    busy: int = 0  # cycles with BUSY set, up to the completion (after the last B)
    beats: list[tuple[int, int]] = field(default_factory=list)  # (WDATA, WSTRB) in order
    bursts: list[tuple[int, int]] = field(default_factory=list)  # (AWADDR, beats) in order
    span: int = 0

    def bytes_written(self) -> bytes:
        """The bytes the beats wrote from the first AW address on, in order, strobed bytes only (a hole between two
        strobed bytes fails: the writer never skips a byte)."""
        out = bytearray()
        ended = False
        for data, strb in self.beats:
            for k in range(64):
                if strb >> k & 1:
                    assert not ended, "a strobed byte after an unstrobed one"
                    out.append(data >> (8 * k) & 0xFF)
                else:
                    ended = True
        return bytes(out)


async def dma_command(
    h: HarvestDut,
    value: int,
    args: tuple[int, int, int],
    b_latency: int = 20,
    stall: float = 0.0,
    rng: random.Random | None = None,
    fail_burst: int | None = None,
    each_cycle: Callable[[], tuple[int | None, int | None]] | None = None,
) -> DmaRun:
    """Launch CMD_OP `value` with ARG0..2 and play the host behind the DMA port until the command completes: AW and W
    taken (READY low with probability `stall`), each burst answered `b_latency` cycles after its last beat (burst
    number `fail_burst` with SLVERR). AW/W ordering, 4 KiB bursts and WLAST are checked. `each_cycle` gives the page
    sets (dirty, accessed) to present in each cycle, racing the command; its sets are the caller's to record."""
    d = h.dut
    rng = rng or random.Random(0)
    d.h_axi_bvalid.value = 0
    d.h_axi_bresp.value = 0
    d.h_axi_bid.value = 0
    run = DmaRun()
    first = h.cycle
    b_due: list[tuple[int, int]] = []  # (cycle, resp)
    burst_of_w = beat_in_burst = 0
    launch = True
    while True:
        d.io_launch_valid.value = int(launch)
        if launch:
            d.io_launch_bits.value = value
            d.io_args_0.value, d.io_args_1.value, d.io_args_2.value = args
        sets = each_cycle() if each_cycle else (None, None)
        for name, page in zip(("io_dirtySet", "io_accessedSet"), sets, strict=True):
            getattr(d, f"{name}_valid").value = int(page is not None)
            if page is not None:
                getattr(d, f"{name}_bits").value = page
        d.h_axi_awready.value = int(rng.random() >= stall)
        d.h_axi_wready.value = int(rng.random() >= stall)
        give_b = bool(b_due) and b_due[0][0] <= h.cycle
        d.h_axi_bvalid.value = int(give_b)
        d.h_axi_bresp.value = b_due[0][1] if give_b else 0
        await ReadOnly()
        if not launch:
            run.busy += int(d.io_busy.value)
        if int(d.h_axi_awvalid.value) and int(d.h_axi_awready.value):
            a, n = int(d.h_axi_awaddr.value), int(d.h_axi_awlen.value) + 1
            assert (a & 0xFFF) + 64 * n <= 4096, f"burst {a:#x} x{n} crosses 4 KiB"
            assert a == args[2] + 64 * sum(b for _, b in run.bursts), f"burst at {a:#x} out of order"
            run.bursts.append((a, n))
        if int(d.h_axi_wvalid.value) and int(d.h_axi_wready.value):
            assert burst_of_w < len(run.bursts), "W before its AW"
            run.beats.append((int(d.h_axi_wdata.value), int(d.h_axi_wstrb.value)))
            beat_in_burst += 1
            if beat_in_burst == run.bursts[burst_of_w][1]:
                assert int(d.h_axi_wlast.value) == 1, "WLAST missing"
                b_due.append((h.cycle + b_latency, 2 if burst_of_w == fail_burst else 0))
                burst_of_w += 1
                beat_in_burst = 0
            else:
                assert int(d.h_axi_wlast.value) == 0, "WLAST early"
        if give_b:
            b_due.pop(0)
        done = not launch and not int(d.io_busy.value)
        await FallingEdge(d.clock)
        h.cycle += 1
        launch = False
        if done:
            break
    for name in ("io_launch_valid", "io_dirtySet_valid", "io_accessedSet_valid", "h_axi_bvalid"):
        getattr(d, name).value = 0
    assert not b_due, "done before the last B response"
    run.code, run.result0 = h.status()
    run.result1 = int(d.io_result1.value)
    run.span = h.cycle - first
    return run


def list_records(raw: bytes) -> list[tuple[int, int]]:
    """(first page, bits) of each 16-byte record of a list harvest (docs/spec.md 5.4)."""
    assert len(raw) % 16 == 0, f"{len(raw)} bytes: not whole records"
    return [
        (int.from_bytes(raw[i : i + 8], "little"), int.from_bytes(raw[i + 8 : i + 16], "little"))
        for i in range(0, len(raw), 16)
    ]
