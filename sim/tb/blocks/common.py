# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the block benches: the block's parameters, clock and reset, and a cycle
loop that drives inputs at falling edges and samples outputs in the read-only phase after them.

Inputs are written at falling edges with ordinary (scheduled) writes, never `Immediate`: Icarus
with cocotb 2.1 does not re-propagate later writes to an input that had an immediate write and
feeds a continuous assignment (sim/tb/env.py). Sampling in ReadOnly after the falling edge sees
the registers as the last rising edge left them and the combinational outputs for the inputs
just driven, on every simulator."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly


def block_params() -> dict[str, int]:
    """The parameters cxltrack.Blocks elaborated the block with (its block.json)."""
    path = os.environ.get("CXLTRACK_BLOCK_JSON")
    assert path, "CXLTRACK_BLOCK_JSON is not set (run the bench through sim/test_rtl.py)"
    params: dict[str, int] = json.loads(Path(path).read_text())["params"]
    return params


def sig(sig: Any) -> int:
    """Integer value of an output; X/Z raises (after reset no output of a block may be unknown)."""
    return int(sig.value)


async def start(dut: Any, period_ns: int = 10) -> None:
    """Start the clock and hold reset for 3 rising edges; returns at a falling edge, reset low."""
    dut.reset.value = 1
    cocotb.start_soon(Clock(dut.clock, period_ns, unit="ns").start())  # type: ignore[arg-type]
    await ClockCycles(dut.clock, 3)
    await FallingEdge(dut.clock)
    dut.reset.value = 0


async def next_cycle(dut: Any) -> None:
    """Advance to the next falling edge (the point where a bench drives the next cycle's inputs)."""
    await FallingEdge(dut.clock)


async def settle() -> None:
    """Wait for the inputs written at this falling edge to propagate (read-only phase)."""
    await ReadOnly()
