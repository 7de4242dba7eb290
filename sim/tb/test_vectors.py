# SPDX-License-Identifier: Apache-2.0
"""The shared vector corpus (vectors/*.jsonl) replayed on the RTL through cxltrack.vectors.replay.

Race cases run with several schedules (random delays of the racing writes around the launch).
A register write reaches the port as a bridge delivers it (one AXI4-Lite write per word with its
byte strobes, sim/tb/env.py). A few vector steps cannot be expressed on a 32-bit AXI4-Lite port
(64-bit or aligned sub-word register reads, 64-bit register writes): the cases that contain them
declare the requirement the RTL lacks (`sized_reads`, `sized_writes`) and are reported as skipped
with the reason; meeting such a step in any other case raises Inexpressible, a failure
(docs/rtl-notes.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cocotb

from cxltrack import regs
from cxltrack.vectors.format import REQUIREMENTS, load_corpus
from cxltrack.vectors.replay import Mismatch, replay

from .env import Bench, cover, finish

TOP = Path(__file__).resolve().parents[2]
RACE_SCHEDULES = int(os.environ.get("CXLTRACK_RACE_SCHEDULES", "4"))


class Inexpressible(Exception):
    """A vector step that a 32-bit AXI4-Lite register port cannot carry. Cases
    that need such steps declare a requirement the RTL lacks and are skipped;
    meeting one anywhere else is a failure."""


# A 32-bit AXI4-Lite port carries no read size and splits a 64-bit write: it lacks "sized_reads"
# and "sized_writes".
CAPABILITIES: set[str] = set()
# The core has the DMA port and the copy engine (CAP_DMA.PRESENT = 1, LIST = 1, COPY = 1;
# sim/tb/env.py HostPort is the host memory): it replays the `dma`, `dma_list` and `dma_copy`
# (CHUNK_COPY, spec 7.1) cases. The board wrapper builds the core without the DMA port
# (docs/rtl-notes.md, "DMA harvest") and skips them with the reason.
CORE_CAPABILITIES: set[str] = CAPABILITIES | {"dma", "dma_list", "dma_copy"}


def _is_register(offset: int) -> bool:
    return not (regs.RESULT <= offset < regs.RESULT + regs.RESULT_SIZE or offset >= regs.SLOT)


class RtlTarget:
    """cxltrack.vectors.replay.Target on the cocotb bench."""

    def __init__(self, bench: Bench) -> None:
        self.b = bench

    async def reset(self) -> None:
        await self.b.reset()

    async def fresh_memory(self) -> None:
        """Device memory as a new device has it (zero): the vectors were made on a fresh model per case, and
        memory keeps its contents through a reset (spec 14), so without this a case that reads lines it never
        wrote (CHUNK_COPY copies whole chunks) would see an earlier case's data."""
        self.b.ram.write(0, bytes(self.b.cfg.capacity_bytes))

    async def reg_read(self, offset: int, size: int) -> int:
        if size == 8 and _is_register(offset):
            raise Inexpressible(f"64-bit read of register {offset:#x}")
        if size in (1, 2) and offset % 4 == 0:
            raise Inexpressible(f"{size}-byte read at aligned offset {offset:#x} (no read strobes in AXI4-Lite)")
        return await self.b.reg_read(offset, size)

    async def reg_write(self, offset: int, value: int, size: int, strobe: int | None) -> None:
        if size == 8 and _is_register(offset):
            raise Inexpressible(f"64-bit write of register {offset:#x}")
        await self.b.reg_write(offset, value, size, strobe)

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        return await self.b.mem_read(addr, size)

    async def mem_write(self, addr: int, data: bytes) -> str:
        return await self.b.mem_write(addr, data)

    async def settle(self) -> None:
        await self.b.settle()

    async def tick(self, n: int) -> None:
        await self.b.tick(n)

    async def race(self, reg_writes: Any, mem_writes: Any, schedule: int) -> None:
        await self.b.race(reg_writes, mem_writes, schedule)

    # host memory behind the DMA port (requirement dma; only the core's bench has it)
    async def host_fill(self, addr: int, length: int, byte: int) -> None:
        await self.b.host_fill(addr, length, byte)

    async def host_read(self, addr: int, length: int) -> bytes:
        return await self.b.host_read(addr, length)

    async def host_fault(self, addr: int, length: int) -> None:
        await self.b.host_fault(addr, length)


@dataclass
class CorpusRun:
    """What replaying the corpus on one RTL target gave."""

    cases: int = 0
    runs: int = 0
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def summary(self, what: str) -> str:
        return f"{what}: {self.cases} cases, {self.runs} runs, {len(self.failures)} failed, {len(self.skipped)} skipped"


async def replay_corpus(target: RtlTarget, race_schedules: int, capabilities: set[str] = CAPABILITIES) -> CorpusRun:
    """Every case of the small configuration on `target` (race cases with `race_schedules`
    schedules each), skipping with its reason a case that needs a capability the 32-bit
    AXI4-Lite port lacks; a case's coverage points count once all its schedules passed.
    Shared by the core bench and the board bench (through the PCIe model)."""
    cases = [c for c in load_corpus(TOP / "vectors") if c.config == "small"]
    assert cases, "no vectors for config small"
    result = CorpusRun(cases=len(cases))
    for case in cases:
        lacking = case.missing(capabilities)
        if lacking:
            result.skipped.append(f"{case.name}: needs {', '.join(lacking)} ({REQUIREMENTS[lacking[0]]})")
            continue
        schedules = range(race_schedules) if any(v.op == "race" for v in case.ops) else range(1)
        for sched in schedules:
            result.runs += 1
            fresh = getattr(target, "fresh_memory", None)
            if fresh is not None:
                await fresh()
            try:
                await replay(target, case, sched)
            except (Inexpressible, Mismatch) as exc:
                result.failures.append(f"schedule {sched}: {case.name}: {exc}")
                break
        else:
            for point in case.covers:
                cover(f"vector:{point}")
    return result


@cocotb.test()
async def corpus(dut: Any) -> None:
    bench = Bench(dut, mirror=False)
    # the DMA port stalls AW/W/B at random and delays B (the completion must still wait for the last B)
    bench.host_port.p_stall = 0.3
    bench.host_port.b_delay = (0, 20)
    result = await replay_corpus(RtlTarget(bench), RACE_SCHEDULES, CORE_CAPABILITIES)
    for s in result.skipped:
        print(f"SKIPPED (the RTL's AXI4-Lite-32 port lacks a capability): {s}")
    print(result.summary("vectors"))
    print(f"vectors: DMA port: {len(bench.host_port.log)} bursts, {bench.host_port.writes} beats stored")
    bench.check_clean()
    assert not result.failures, "\n".join(result.failures)
    finish(bench, "vectors")
