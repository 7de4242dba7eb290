# SPDX-License-Identifier: Apache-2.0
"""EventQueue on its own: constrained-random push/pop traffic compared every cycle with a
reference of the spec semantics (docs/spec.md section 8) written here, independently of the RTL
and of cxltrack.model: sources are served in port order and each push takes the next SEQ; a push
that finds the queue full is dropped (its SEQ is consumed, `dropped` counts it saturating at
2^32-1, `overflow` is high in that cycle); a pop in the same cycle is applied before the pushes;
the head reads zeros when the queue is empty; `lose` (events known lost without a record: a BAT
group made all-invalid in DRAM form, spec section 12) takes that many SEQs after the cycle's pushes
and counts them as dropped. The seed is printed (CXLTRACK_SEED reproduces a
run); CXLTRACK_BLOCK_CYCLES sets the length of the random run."""

from __future__ import annotations

import os
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "EventQueue"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
MASK32 = (1 << 32) - 1
COVERAGE_NAME = "block_event_queue"  # the counters are per process: each test rewrites the total


@dataclass(frozen=True)
class Rec:
    typ: int
    index: int
    arg: int


@dataclass(frozen=True)
class Outputs:
    typ: int
    index: int
    arg: int
    seq: int
    count: int
    dropped: int


class RefQueue:
    """The spec's event queue, one clock cycle per `step`."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.reset()

    def reset(self) -> None:
        self.entries: deque[tuple[Rec, int]] = deque()
        self.seq = 0
        self.dropped = 0

    def step(self, pop: bool, pushes: list[Rec | None], lose: int = 0) -> int:
        """Apply one cycle (pop first, then the pushes in port order, then `lose` events lost
        without a record); returns how many events were dropped."""
        if pop and self.entries:
            self.entries.popleft()
        drops = 0
        for rec in pushes:
            if rec is None:
                continue
            seq, self.seq = self.seq, (self.seq + 1) & MASK32
            if len(self.entries) < self.depth:
                self.entries.append((rec, seq))
            else:
                drops += 1
                self.dropped = min(self.dropped + 1, MASK32)
        self.seq = (self.seq + lose) & MASK32
        self.dropped = min(self.dropped + lose, MASK32)
        return drops + lose

    def outputs(self) -> Outputs:
        if not self.entries:
            return Outputs(0, 0, 0, 0, 0, self.dropped)
        rec, seq = self.entries[0]
        return Outputs(rec.typ, rec.index, rec.arg, seq, len(self.entries), self.dropped)


class Dut:
    """Signal handles of the emitted EventQueue (Chisel names: io_push_<k>_valid, ...)."""

    def __init__(self, dut: Any, n_src: int) -> None:
        self.dut = dut
        self.valid = [getattr(dut, f"io_push_{k}_valid") for k in range(n_src)]
        self.typ = [getattr(dut, f"io_push_{k}_bits_typ") for k in range(n_src)]
        self.index = [getattr(dut, f"io_push_{k}_bits_index") for k in range(n_src)]
        self.arg = [getattr(dut, f"io_push_{k}_bits_arg") for k in range(n_src)]
        self.last = [True] * n_src  # the first drive clears every valid (a failed test may leave them set)

    def drive(self, pop: bool, pushes: list[Rec | None], lose: int = 0) -> None:
        self.dut.io_pop.value = int(pop)
        self.dut.io_lose.value = lose
        for k, rec in enumerate(pushes):
            if rec is not None:
                self.valid[k].value = 1
                self.typ[k].value = rec.typ
                self.index[k].value = rec.index
                self.arg[k].value = rec.arg
            elif self.last[k]:
                self.valid[k].value = 0  # payload left as it was: a stale payload must not matter
            self.last[k] = rec is not None

    def outputs(self) -> Outputs:
        d = self.dut
        return Outputs(
            sig(d.io_head_typ),
            sig(d.io_head_index),
            sig(d.io_head_arg),
            sig(d.io_headSeq),
            sig(d.io_count),
            sig(d.io_dropped),
        )


class Checker:
    """Drives one cycle on the DUT and the reference and compares everything."""

    def __init__(self, dut: Any) -> None:
        p = block_params()
        self.n_src = p["n_src"]
        self.depth = 1 << p["depth_log2"]
        self.dut = dut
        self.io = Dut(dut, self.n_src)
        self.ref = RefQueue(self.depth)
        self.cycle = 0
        self.log: deque[str] = deque(maxlen=8)

    async def cycle_step(self, pop: bool, pushes: list[Rec | None], lose: int = 0) -> None:
        """Call at a falling edge: drive this cycle's inputs, compare the registered outputs with
        the reference (state after the last rising edge) and `overflow` with the drops the
        reference predicts for these inputs, then advance the reference and the clock."""
        assert len(pushes) == self.n_src
        self.io.drive(pop, pushes, lose)
        await settle()
        got, want = self.io.outputs(), self.ref.outputs()
        before = want.count
        drops = self.ref.step(pop, pushes, lose)
        if lose:
            cover("evq_block:lose")
        ovf = sig(self.dut.io_overflow)
        n = sum(r is not None for r in pushes)
        self.log.append(f"cycle {self.cycle}: count {before} pop {int(pop)} pushes {n} -> drops {drops}")
        context = "\n".join(self.log)
        assert got == want, f"cycle {self.cycle}: rtl {got}\n  reference {want}\nlast cycles:\n{context}"
        assert ovf == int(drops > 0), f"cycle {self.cycle}: overflow {ovf}, reference drops {drops}\n{context}"
        self._cover(pop, n, before, drops)
        self.cycle += 1
        await next_cycle(self.dut)

    def _cover(self, pop: bool, n: int, count: int, drops: int) -> None:
        full = count == self.depth
        cover(f"evq_block:level:{'empty' if count == 0 else 'full' if full else 'partial'}")
        if drops:
            cover("evq_block:overflow")
        if drops > 1:
            cover("evq_block:overflow_multi")
        if pop and count == 0:
            cover("evq_block:pop_empty")
        if pop and n and full:
            cover("evq_block:pop_push_full")  # the pop makes room for the first push
        if pop and n and count == 0:
            cover("evq_block:pop_push_empty")
        if n == self.n_src:
            cover("evq_block:all_ports")
        if n and count + n - int(pop and count > 0) == self.depth and not drops:
            cover("evq_block:fill_exact")

    async def idle(self) -> None:
        """One cycle without inputs: compares the state the previous cycle left."""
        await self.cycle_step(False, [None] * self.n_src)

    async def reset(self, cycles: int = 2) -> None:
        """Reset in the middle of traffic (pushes keep arriving while it is high); the queue must
        come out empty with SEQ and DROPPED at 0, which the next `cycle_step` compares."""
        rng = random.Random(self.cycle)
        self.dut.reset.value = 1
        for _ in range(cycles):
            self.io.drive(rng.random() < 0.5, [payload(rng) if rng.random() < 0.5 else None for _ in range(self.n_src)])
            await FallingEdge(self.dut.clock)
        self.dut.reset.value = 0
        self.ref.reset()
        cover("evq_block:reset")


def payload(rng: random.Random) -> Rec:
    def edge(bits: int) -> int:
        r = rng.random()
        if r < 0.1:
            return 0
        if r < 0.2:
            return (1 << bits) - 1
        return rng.getrandbits(bits)

    return Rec(edge(8), edge(16), edge(64))


# traffic modes: (push probability per port, pop probability)
MODES = {
    "idle": (0.02, 0.1),
    "balanced": (0.05, 0.5),
    "trickle": (0.03, 0.2),  # fills slowly
    "burst": (0.3, 0.05),  # fills the queue and overflows
    "storm": (1.0, 0.3),  # every port in most cycles
    "full_churn": (0.1, 0.9),  # near full: pop and pushes together
    "drain": (0.01, 0.95),
}


async def traffic(chk: Checker, rng: random.Random, cycles: int) -> None:
    """Spans of random modes; at least one reset in the middle (at a random span boundary)."""
    left = cycles
    reset_at = rng.randrange(cycles // 4, 3 * cycles // 4 + 1)
    while left > 0:
        mode = rng.choice(list(MODES))
        p_push, p_pop = MODES[mode]
        span = min(left, rng.randrange(5, 80))
        cover(f"evq_block:mode:{mode}")
        for _ in range(span):
            pushes = [payload(rng) if rng.random() < p_push else None for _ in range(chk.n_src)]
            if mode == "storm" and rng.random() < 0.3:
                pushes = [payload(rng) for _ in range(chk.n_src)]
            lose = rng.choice([1, 2, 3]) if rng.random() < 0.01 else 0
            await chk.cycle_step(rng.random() < p_pop, pushes, lose)
        left -= span
        if rng.random() < 0.01 or left <= cycles - reset_at < left + span:
            await chk.idle()
            await chk.reset(rng.randrange(1, 3))
            cover("evq_block:reset_mid_traffic")


@cocotb.test()
async def random_traffic(dut: Any) -> None:
    seed = seed_from_env("event_queue")
    rng = random.Random(seed)
    await start(dut)
    chk = Checker(dut)
    await chk.cycle_step(False, [None] * chk.n_src)  # reset values: empty, SEQ 0, DROPPED 0
    await traffic(chk, rng, CYCLES)
    await chk.idle()
    await chk.reset()
    await chk.idle()
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def directed_corners(dut: Any) -> None:
    """Fill exactly, overflow with every port at once, pop+push on a full queue (the pop frees the
    slot the first push takes), pop on an empty queue, and a push on the last port only."""
    await start(dut)
    chk = Checker(dut)
    n, depth = chk.n_src, chk.depth
    rng = random.Random(1)
    none: list[Rec | None] = [None] * n
    await chk.cycle_step(True, none)  # pop on empty: no effect
    filled = 0
    while filled < depth:  # fill from port 0 upward, several per cycle
        k = min(n, depth - filled, 3)
        await chk.cycle_step(False, [payload(rng) if i < k else None for i in range(n)])
        filled += k
    assert chk.ref.outputs().count == depth
    await chk.cycle_step(False, [payload(rng) for _ in range(n)])  # all dropped
    assert chk.ref.dropped == n
    await chk.cycle_step(True, [payload(rng) if i in (1, n - 1) else None for i in range(n)])
    assert chk.ref.dropped == n + 1  # the pop made room for port 1 only
    for _ in range(depth + 2):  # drain, one pop per cycle, plus two pops on empty
        await chk.cycle_step(True, none)
    await chk.cycle_step(False, [payload(rng) if i == n - 1 else None for i in range(n)])
    await chk.cycle_step(True, [payload(rng) for _ in range(n)])  # pop of the single entry + n pushes
    await chk.idle()
    dump_coverage(COVERAGE_NAME)


async def poke(dut: Any, name: str, value: int) -> None:
    """Deposit a value into an internal register at a falling edge (between clock edges)."""
    getattr(dut, name).value = value
    await settle()
    await next_cycle(dut)


@cocotb.test()
async def counters_wrap_and_saturate(dut: Any) -> None:
    """SEQ wraps from 2^32-1 to 0; DROPPED saturates at 2^32-1 (too many cycles to reach by
    traffic: the registers are preset through the simulator)."""
    await start(dut)
    chk = Checker(dut)
    n, depth = chk.n_src, chk.depth
    rng = random.Random(2)
    await poke(dut, "seq", MASK32 - 2)
    chk.ref.seq = MASK32 - 2
    await poke(dut, "dropped", MASK32 - 3)
    chk.ref.dropped = MASK32 - 3
    for _ in range(depth // 2 + 1):
        await chk.cycle_step(False, [payload(rng), None, payload(rng)] + [None] * (n - 3))
    cover("evq_block:seq_wrap")
    for _ in range(3):  # full: every push dropped, DROPPED reaches and stays at 2^32-1
        await chk.cycle_step(rng.random() < 0.5, [payload(rng) for _ in range(n)])
    assert chk.ref.dropped == MASK32
    cover("evq_block:dropped_saturated")
    for _ in range(depth + 1):
        await chk.cycle_step(True, [None] * n)
    await chk.idle()
    dump_coverage(COVERAGE_NAME)
