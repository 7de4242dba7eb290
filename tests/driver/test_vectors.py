# SPDX-License-Identifier: Apache-2.0
"""The shared-vector corpus replayed through the driver and must agree with the
reference model.

Target: the driver's raw debug path (CXLT_IOC_RAW, module parameter allow_raw=1,
driven by `cxltrack raw-batch` in the guest) for register accesses, resets (PCI
function reset through the driver) and races, and CPU loads/stores through the
/dev/dax0.0 mapping for memory requests (resp "decerr" when STAT_DECERR moved).

The replay engine (cxltrack.vectors.replay) is interactive; one agent round trip
per register access would take hours under TCG. So each case runs in two passes:
1. record: replay the case against the reference model, logging every primitive
   call the engine makes (reset, reg_read, reg_write, mem_*, settle, tick, race);
2. the logged calls run in the guest as one batch, and the engine replays the case
   again against a playback target that answers every call with the guest's
   (the device's) answer. The engine then compares the device's answers with the
   vector exactly as for any other implementation. If the engine's calls diverge
   from the recorded ones (possible only when the device answered differently,
   e.g. an extra poll), that is reported as a mismatch at the vector line.

Cases with `tick` run on a VM whose tracker has a 200 ms tick (tick-ns) so that a
guest sleep of n ticks is long compared with the guest's own latency; everything
else runs on the vector's configuration unchanged.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import DAX, TrackerFactory

from cxltrack import config as cxlconfig
from cxltrack.vectors.format import Case, load_corpus
from cxltrack.vectors.replay import Mismatch, ModelTarget, Replayer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = load_corpus(ROOT / "vectors")
SLOW_TICK_NS = 200_000_000
RACE_SCHEDULES = (0, 1, 2, 3)

Prim = tuple[Any, ...]

# A CPU splits sub-word, 64-bit and unaligned MMIO reads before they reach the
# device (its bus interface on real hardware, QEMU's memory core here): the
# CPU path lacks the "sized_reads" capability, so cases that need it are skipped
# (and listed), never silently passed. A 64-bit store (writeq) reaches the device
# as one access: the CPU path has "sized_writes". The dma cases need a runner that fills and
# faults host memory by bus address (host_fill, host_fault); this one drives the device through
# the driver's MMIO ioctls and has no such access: it lacks "dma" (the driver's DMA harvest has
# its own guest tests, cxlt-test.c).
CAPABILITIES: set[str] = {"sized_writes"}


class Recorder:
    """A ModelTarget that logs every call and its answer."""

    def __init__(self, case: Case) -> None:
        self.m = ModelTarget(cxlconfig.named(case.config))
        self.log: list[tuple[Prim, Any]] = []

    async def reset(self) -> None:
        await self.m.reset()
        self.log.append((("reset",), None))

    async def reg_read(self, offset: int, size: int) -> int:
        v = await self.m.reg_read(offset, size)
        self.log.append((("R", offset, size), v))
        return v

    async def reg_write(self, offset: int, value: int, size: int, strobe: int | None) -> None:
        await self.m.reg_write(offset, value, size, strobe)
        self.log.append((("W", offset, value, size, strobe), None))

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        r = await self.m.mem_read(addr, size)
        self.log.append((("MR", addr, size), r))
        return r

    async def mem_write(self, addr: int, data: bytes) -> str:
        r = await self.m.mem_write(addr, data)
        self.log.append((("MW", addr, bytes(data)), r))
        return r

    async def settle(self) -> None:
        await self.m.settle()
        self.log.append((("settle",), None))

    async def tick(self, n: int) -> None:
        await self.m.tick(n)
        self.log.append((("tick", n), None))

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int
    ) -> None:
        await self.m.race(reg_writes, mem_writes, schedule)
        self.log.append((("race", tuple(reg_writes), tuple((a, bytes(d)) for a, d in mem_writes), schedule), None))


def _strobed_writes(offset: int, value: int, size: int, strobe: int | None) -> list[str]:
    """A CPU cannot issue an arbitrary AXI byte-strobe pattern: issue the strobed bytes as
    the naturally aligned accesses that carry exactly them (one access if contiguous)."""
    full = (1 << size) - 1
    if strobe is None or strobe == full:
        return [f"W {offset} {size} {value}"]
    lanes = [i for i in range(size) if strobe >> i & 1]
    if not lanes:
        return []
    lo, n = lanes[0], len(lanes)
    if lanes == list(range(lo, lo + n)) and n in (1, 2, 4) and lo % n == 0:
        return [f"W {offset + lo} {n} {value >> (8 * lo) & ((1 << (8 * n)) - 1)}"]
    return [f"W {offset + i} 1 {value >> (8 * i) & 0xFF}" for i in lanes]


def to_batch(log: list[tuple[Prim, Any]], tick_ns: int, capacity: int) -> tuple[list[str], list[int]]:
    """Batch lines for the guest, and for each primitive the number of answer lines."""
    lines: list[str] = []
    counts: list[int] = []
    first_reset = True
    for prim, _ in log:
        kind = prim[0]
        n0 = len(lines)
        if kind == "reset":
            if first_reset:  # a case starts from fresh (zeroed) memory, as the generator's model did
                lines.append(f"ZERO 0 {capacity}")
                first_reset = False
            lines.append("RESET")
        elif kind == "R":
            lines.append(f"R {prim[1]} {prim[2]}")
        elif kind == "W":
            lines += _strobed_writes(prim[1], prim[2], prim[3], prim[4])
        elif kind == "MR":
            lines.append(f"MR {prim[1]} {prim[2]}")
        elif kind == "MW":
            lines.append(f"MW {prim[1]} {prim[2].hex()}")
        elif kind == "settle":
            lines.append("SLEEP 20000000")
        elif kind == "tick":
            lines.append(f"SLEEP {prim[1] * tick_ns}")
        elif kind == "race":
            regw = " ".join(f"{o} {v}" for o, v in prim[1])
            memw = " ".join(f"{a} {d.hex()}" for a, d in prim[2])
            lines.append(f"RACE {prim[3]} {len(prim[1])} {regw} {len(prim[2])} {memw}")
        counts.append(len(lines) - n0)
    return lines, counts


class Playback:
    """Answers the replay engine from the device's recorded answers, in order."""

    def __init__(self, log: list[tuple[Prim, Any]], answers: list[list[str]]) -> None:
        self.log = log
        self.answers = answers
        self.i = 0
        self.where = "?"

    def _next(self, prim: Prim) -> list[str]:
        if self.i >= len(self.log) or self.log[self.i][0] != prim:
            want = self.log[self.i][0] if self.i < len(self.log) else "end of the recorded calls"
            raise Mismatch(
                f"{self.where}: the device's answers led the replay engine to {prim!r} "
                f"where the model led it to {want!r} (call {self.i})"
            )
        ans = self.answers[self.i]
        self.i += 1
        return ans

    async def reset(self) -> None:
        self._next(("reset",))

    async def reg_read(self, offset: int, size: int) -> int:
        (line,) = self._next(("R", offset, size))
        return int(line.split()[1])

    async def reg_write(self, offset: int, value: int, size: int, strobe: int | None) -> None:
        self._next(("W", offset, value, size, strobe))

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        (line,) = self._next(("MR", addr, size))
        _, resp, val = line.split()
        return resp, int(val)

    async def mem_write(self, addr: int, data: bytes) -> str:
        (line,) = self._next(("MW", addr, bytes(data)))
        return line.split()[1]

    async def settle(self) -> None:
        self._next(("settle",))

    async def tick(self, n: int) -> None:
        self._next(("tick", n))

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int
    ) -> None:
        self._next(("race", tuple(reg_writes), tuple((a, bytes(d)) for a, d in mem_writes), schedule))


class TrackingReplayer(Replayer):
    """Replayer that tells the playback target which vector line is running."""

    async def run(self) -> None:
        await self.t.reset()
        for vop in self.case.ops:
            if isinstance(self.t, Playback):
                self.t.where = f"{self.case.source}:{vop.line}: case '{self.case.name}' op {vop.op}"
            await getattr(self, "_op_" + vop.op)(vop)


def replay_on_guest(vm: Any, case: Case, schedule: int, tick_ns: int) -> None:
    cfg = cxlconfig.named(case.config)
    rec = Recorder(case)
    asyncio.run(TrackingReplayer(rec, case, schedule).run())  # type: ignore[arg-type]
    lines, counts = to_batch(rec.log, tick_ns, cfg.capacity_bytes)
    res = vm.run(f"cxltrack raw-batch --dax {DAX}", stdin=("\n".join(lines) + "\n").encode(), timeout=180)
    out = res.out.splitlines()
    if len(out) != len(lines):
        raise AssertionError(f"raw-batch answered {len(out)} of {len(lines)} lines; stderr: {res.err}")
    answers: list[list[str]] = []
    pos = 0
    for n in counts:
        answers.append(out[pos : pos + n])
        pos += n
    pb = Playback(rec.log, answers)
    rp = TrackingReplayer(pb, case, schedule)  # type: ignore[arg-type]
    asyncio.run(rp.run())
    if pb.i != len(rec.log):
        raise Mismatch(f"case '{case.name}': the replay ended after {pb.i} of {len(rec.log)} recorded calls")


def _has_tick(case: Case) -> bool:
    return any(v.op == "tick" for v in case.ops)


def _runs(case: Case) -> tuple[int, ...]:
    return RACE_SCHEDULES if any(v.op == "race" for v in case.ops) else (0,)


def _group(configs: set[str], slow: bool) -> list[Case]:
    return [c for c in CORPUS if c.config in configs and _has_tick(c) == slow and not c.missing(CAPABILITIES)]


def test_cases_the_cpu_path_cannot_carry_are_only_the_declared_ones() -> None:
    skipped = [c.name for c in CORPUS if c.missing(CAPABILITIES)]
    for c in CORPUS:
        if c.missing(CAPABILITIES):
            print(f"skipped {c.name}: needs {', '.join(c.missing(CAPABILITIES))}")
    assert skipped == [c.name for c in CORPUS if {"sized_reads", "dma"} & set(c.requires)]


@pytest.mark.parametrize("config", sorted({c.config for c in CORPUS}))
@pytest.mark.parametrize("slow_tick", [False, True], ids=["tick-as-configured", "slow-tick"])
def test_vector_corpus_through_driver(tracker_vm: TrackerFactory, config: str, slow_tick: bool) -> None:
    cases = _group({config}, slow_tick)
    if not cases:
        pytest.skip(f"no {config} cases {'with' if slow_tick else 'without'} tick ops")
    cfg = cxlconfig.named(config)
    if slow_tick:
        cfg = dataclasses.replace(cfg, tick_ns=SLOW_TICK_NS)
    # Hundreds of requests on one VM: with multi-threaded TCG a vCPU wedged now and then (see
    # VmConfig.tcg_single_thread). The replay's answers do not depend on how finely the two
    # guest threads of a race case interleave (they must match the model in any order).
    vm = tracker_vm(cfg=cfg, raw=True, tcg_single_thread=True).vm
    failures = []
    runs = 0
    for case in cases:
        for sched in _runs(case):
            runs += 1
            try:
                replay_on_guest(vm, case, sched, cfg.tick_ns)
            except (Mismatch, AssertionError) as exc:
                failures.append(f"[schedule {sched}] {exc}")
    print(f"{runs - len(failures)} of {runs} case runs agree with the model ({len(cases)} cases, config {config})")
    # After raw mode the driver is back in charge: a normal command works.
    vm.run("cxltrack harvest dirty 0 64 --format count")
    assert not failures, f"{len(failures)} of {runs} case runs disagree:\n" + "\n".join(failures[:30])
