# SPDX-License-Identifier: Apache-2.0
"""ScrubEngine on its own: the bench plays the core's write arbiter and the memory side.
Released chunks are enqueued at random (single, back to back, and up to a full FIFO with VALID
held while READY is low); AW and W see random READY stalls, either paired per burst as
CxlTrackCore's arbiter grants them (one grant = one AW + its 64 W beats) or as two independent
channels; the memory answers each burst (AW accepted and its last W beat seen) with a random
delay, in order, one `bDone` per cycle.

A reference written here (docs/spec.md section 7: FIFO of released chunks, zero fill in 4 KiB
bursts, at most 4 outstanding, SCRUB_DONE after the last write end's table effects) is compared
every cycle: ENQ ready (FIFO not full), the chunk taken from the FIFO, AW valid whenever the engine
may issue (fewer than 4 outstanding, bursts left) and its address, W valid and WLAST (beat 63 of
each burst), `endPage` of the burst being answered, `finish` exactly once per chunk, in enqueue
order, in the third cycle after its last `bDone` (the two-cycle wait), and `idle` exactly when
nothing is queued or in flight. Independently, a memory-side monitor checks the AXI view: every
chunk produces chunk_size/4096 bursts at its consecutive 4 KiB addresses, 64 beats each with
WLAST on beat 63 only, AW/W held stable until accepted, never more than 4 bursts outstanding
(AW accepted minus B returned).

W and AW order: the engine offers the data of its next burst independently of that burst's AW
(AXI allows W before or after AW; the core's arbiter pairs them per grant). The rule checked: the
W bursts of a chunk are its bursts in AW order (the j-th W burst is the data of the j-th AW), a
chunk never sends more than its bursts' data, and no W beat of a chunk is offered before the
chunk is taken from the FIFO or after its `finish`. With paired grants W never leads its AW's
grant; with independent channels W may lead AW by several bursts (covered).

The seed is printed (CXLTRACK_SEED reproduces a run); CXLTRACK_BLOCK_CYCLES sets the length of
the random run."""

from __future__ import annotations

import os
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "ScrubEngine"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
COVERAGE_NAME = "block_scrub_engine"
BURST = 4096  # bytes per burst: 64 beats of 64 bytes
BEATS = 64
MAX_OUT = 4
FINISH_WAIT = 3  # finish in the third cycle after the last bDone (its table effects land two cycles after it)


@dataclass(frozen=True)
class Outputs:
    enq_ready: int
    aw_valid: int
    aw_addr: int
    w_valid: int
    w_last: int
    end_page: int
    finish_valid: int
    finish_chunk: int
    idle: int


@dataclass(frozen=True)
class Inputs:
    enq: int | None  # chunk offered (VALID) or None
    aw_ready: int
    w_ready: int
    b_done: int


@dataclass
class Run:
    """The chunk being scrubbed, as the reference sees it."""

    chunk: int
    issued: int = 0  # AW accepted
    beats: int = 0  # W beats accepted
    answered: int = 0  # bDone counted
    last_b: int = -1  # cycle of the last bDone


@dataclass
class Burst:
    """One burst on the memory side, in AW order (global over chunks)."""

    addr: int | None = None
    beats: int = 0
    complete_at: int | None = None  # cycle in which both AW and the last W beat were seen
    delay: int = 1


@dataclass
class Memory:
    """The memory side: bursts in AW order, answered in order after a random delay."""

    bursts: deque[Burst] = field(default_factory=deque)  # not yet answered
    aw_seen: int = 0  # AWs accepted since reset (index into the global burst order)
    w_seen: int = 0  # W bursts completed since reset
    answered: int = 0
    last_b: int = -10


class Checker:
    def __init__(self, dut: Any, rng: random.Random) -> None:
        p = block_params()
        self.chunks, self.chunk_shift = p["chunks"], p["chunk_shift"]
        self.page_shift, self.page_bits, self.addr_bits = p["page_shift"], p["page_bits"], p["mem_addr_bits"]
        self.bursts_per_chunk = 1 << (self.chunk_shift - 12)
        self.dut = dut
        self.rng = rng
        self.cycle = 0
        self.log: deque[str] = deque(maxlen=10)
        self.reset_ref()
        # arbiter: "paired" (as CxlTrackCore: grant on AW valid, hold until AW and last W) or "free"
        self.arb = "paired"
        self.p_aw = 1.0  # READY probabilities
        self.p_w = 1.0
        self.delay: tuple[int, int] = (1, 4)
        self.enq_held: int | None = None  # a chunk offered while READY was low stays offered
        self.enqueued_total = 0
        self.finished_total = 0
        self.prev_enq = False

    def reset_ref(self) -> None:
        self.queue: deque[int] = deque()
        self.run: Run | None = None
        self.order: deque[int] = deque()  # enqueued, not yet finished (reference order)
        self.mem = Memory()
        self.granted = False
        self.g_aw = False
        self.g_w = False
        self.g_idx = 0  # memory-side index of the granted burst
        self.prev: tuple[Outputs, Inputs] | None = None
        self.chunk_aw: list[int] = []  # addresses of the current chunk's AWs (memory side)

    # ------------------------------------------------------------------ signals
    def sample(self) -> Outputs:
        d = self.dut
        return Outputs(
            sig(d.io_enq_ready),
            sig(d.io_aw_valid),
            sig(d.io_aw_bits_addr),
            sig(d.io_w_valid),
            sig(d.io_w_bits_last),
            sig(d.io_endPage),
            sig(d.io_finish_valid),
            sig(d.io_finish_bits),
            sig(d.io_idle),
        )

    def drive(self, i: Inputs) -> None:
        d = self.dut
        d.io_enq_valid.value = int(i.enq is not None)
        if i.enq is not None:
            d.io_enq_bits.value = i.enq
        d.io_aw_ready.value = i.aw_ready
        d.io_w_ready.value = i.w_ready
        d.io_bDone.value = i.b_done

    # ------------------------------------------------------------------ stimulus
    def ready(self, p: float) -> int:
        return int(self.rng.random() < p)

    def choose(self, o: Outputs, enq: int | None) -> Inputs:
        """This cycle's inputs from the outputs (registered: they do not depend on the inputs)."""
        if self.enq_held is not None:
            enq = self.enq_held  # AXI-like: an offer is not withdrawn before it is taken
        if self.arb == "paired":
            if not self.granted and o.aw_valid and self.rng.random() < max(self.p_w, 0.2):
                # one grant = this AW and its data; data already sent ahead (after "free" spans) counts
                self.granted, self.g_aw, self.g_idx = True, False, self.mem.aw_seen
                self.g_w = self.mem.w_seen > self.g_idx
            aw_ready = int(self.granted and not self.g_aw and self.ready(self.p_aw))
            # data still owed to AWs accepted in a "free" span goes first, as the tail of their grant
            w_owed = not self.granted and self.mem.w_seen < self.mem.aw_seen
            w_ready = int((w_owed or (self.granted and not self.g_w)) and self.ready(self.p_w))
        else:
            aw_ready, w_ready = self.ready(self.p_aw), self.ready(self.p_w)
        m = self.mem
        b = 0
        if m.bursts and self.cycle > m.last_b:
            head = m.bursts[0]
            if head.complete_at is not None and self.cycle >= head.complete_at + head.delay:
                b = 1
        return Inputs(enq, aw_ready, w_ready, b)

    # ------------------------------------------------------------------ one cycle
    def expect(self, o: Outputs, i: Inputs) -> None:
        """Compare the outputs with the reference (state after the last rising edge)."""
        r, n = self.run, self.bursts_per_chunk
        where = f"cycle {self.cycle}"
        ctx = "\nlast cycles:\n" + "\n".join(self.log)
        assert o.enq_ready == int(len(self.queue) < self.chunks), (
            f"{where}: enq ready {o.enq_ready}, queued {len(self.queue)}{ctx}"
        )
        assert o.idle == int(r is None and not self.queue), (
            f"{where}: idle {o.idle}, run {r}, queued {list(self.queue)}{ctx}"
        )
        want_aw = int(r is not None and r.issued < n and r.issued - r.answered < MAX_OUT)
        assert o.aw_valid == want_aw, f"{where}: aw valid {o.aw_valid}, reference {want_aw} ({r}){ctx}"
        if r is not None and want_aw:
            addr = ((r.chunk << self.chunk_shift) + r.issued * BURST) & ((1 << self.addr_bits) - 1)
            assert o.aw_addr == addr, f"{where}: aw addr {o.aw_addr:#x}, reference {addr:#x} ({r}){ctx}"
        want_w = int(r is not None and r.beats < n * BEATS)
        assert o.w_valid == want_w, f"{where}: w valid {o.w_valid}, reference {want_w} ({r}){ctx}"
        if r is not None and want_w:
            assert o.w_last == int(r.beats % BEATS == BEATS - 1), f"{where}: wlast {o.w_last} at beat {r.beats}{ctx}"
        if i.b_done:
            assert r is not None and r.answered < r.issued, f"{where}: bench answers a burst not issued ({r})"
            page = ((r.chunk << self.chunk_shift) + r.answered * BURST) >> self.page_shift
            assert o.end_page == page, (
                f"{where}: endPage {o.end_page}, burst {r.answered} of chunk {r.chunk}: {page}{ctx}"
            )
        want_fin = int(r is not None and r.answered == n and self.cycle >= r.last_b + FINISH_WAIT)
        assert o.finish_valid == want_fin, f"{where}: finish {o.finish_valid}, reference {want_fin} ({r}){ctx}"
        if want_fin:
            assert r is not None and o.finish_chunk == r.chunk, f"{where}: finish chunk {o.finish_chunk}, reference {r}"

    def protocol(self, o: Outputs, i: Inputs) -> None:
        """AXI view at the memory side, independent of the reference's counters."""
        where = f"cycle {self.cycle}"
        if self.prev is not None:
            po, pi = self.prev
            if po.aw_valid and not pi.aw_ready:
                assert o.aw_valid and o.aw_addr == po.aw_addr, f"{where}: AW withdrawn or changed before READY"
            if po.w_valid and not pi.w_ready:
                assert o.w_valid and o.w_last == po.w_last, f"{where}: W withdrawn or changed before READY"
        m = self.mem
        if o.aw_valid and i.aw_ready:
            if m.aw_seen >= len(m.bursts) + m.answered:
                m.bursts.append(Burst())
            burst = m.bursts[m.aw_seen - m.answered]
            burst.addr = o.aw_addr
            burst.delay = self.rng.randint(*self.delay)
            if burst.beats == BEATS:
                burst.complete_at = self.cycle
                cover("scrub_block:w_leads_aw")
            m.aw_seen += 1
            assert m.aw_seen - m.answered <= MAX_OUT, f"{where}: {m.aw_seen - m.answered} bursts outstanding"
            if m.aw_seen - m.answered == MAX_OUT:
                cover("scrub_block:outstanding_max")
            self.chunk_aw.append(o.aw_addr)
        if o.w_valid and i.w_ready:
            if m.w_seen >= len(m.bursts) + m.answered:
                m.bursts.append(Burst())
            burst = m.bursts[m.w_seen - m.answered]
            if burst.addr is None:
                cover("scrub_block:w_beat_before_aw")
            burst.beats += 1
            last = burst.beats == BEATS
            assert o.w_last == int(last), f"{where}: wlast {o.w_last} on beat {burst.beats} of a burst"
            if last:
                m.w_seen += 1
                if burst.addr is not None:
                    burst.complete_at = self.cycle
                if m.w_seen - m.aw_seen > 1:
                    cover("scrub_block:w_leads_aw_bursts")  # data of two bursts whose AW is still to come
        if i.b_done:
            head = m.bursts.popleft()
            assert head.addr is not None and head.beats == BEATS
            m.answered += 1
            m.last_b = self.cycle

    def advance(self, o: Outputs, i: Inputs) -> None:
        """The reference's state at the rising edge."""
        r, n = self.run, self.bursts_per_chunk
        if r is not None:
            if o.aw_valid and i.aw_ready:
                r.issued += 1
                if i.b_done:
                    cover("scrub_block:aw_and_b_same_cycle")
            if o.w_valid and i.w_ready:
                r.beats += 1
            if i.b_done:
                r.answered += 1
                r.last_b = self.cycle
            if o.finish_valid:
                assert o.finish_chunk == self.order[0], (
                    f"cycle {self.cycle}: finish {o.finish_chunk}, order {list(self.order)}"
                )
                self.order.popleft()
                want = [((r.chunk << self.chunk_shift) + k * BURST) for k in range(n)]
                assert self.chunk_aw == want, f"chunk {r.chunk}: AW addresses {self.chunk_aw}, expected {want}"
                assert r.beats == n * BEATS and r.issued == n
                self.chunk_aw = []
                self.run = None
                self.finished_total += 1
                cover("scrub_block:finish")
        elif self.queue:
            self.run = Run(self.queue.popleft())
        if i.enq is not None:
            if o.enq_ready:
                self.queue.append(i.enq)
                self.order.append(i.enq)
                self.enqueued_total += 1
                self.enq_held = None
                if self.prev_enq:
                    cover("scrub_block:back_to_back")
                if self.run is not None:
                    cover("scrub_block:enq_while_active")
            else:
                self.enq_held = i.enq
                cover("scrub_block:fifo_full")
        self.prev_enq = i.enq is not None and bool(o.enq_ready)
        if self.granted:
            self.g_aw = self.g_aw or bool(o.aw_valid and i.aw_ready)
            self.g_w = self.mem.w_seen > self.g_idx
            if self.g_aw and self.g_w:
                self.granted = False
            elif not self.g_aw and self.g_w and self.arb == "paired":
                cover("scrub_block:w_before_aw_in_grant")

    async def step(self, enq: int | None = None) -> None:
        """At a falling edge: sample, choose and drive this cycle's inputs, check, advance."""
        o = self.sample()
        i = self.choose(o, enq)
        self.drive(i)
        await settle()
        o2 = self.sample()
        assert o2 == o, f"cycle {self.cycle}: outputs changed with this cycle's inputs: {o} -> {o2}"
        self.log.append(f"cycle {self.cycle}: {o} {i} run {self.run} queued {len(self.queue)}")
        self.expect(o, i)
        self.protocol(o, i)
        self.advance(o, i)
        self.prev = (o, i)
        self.cycle += 1
        await next_cycle(self.dut)

    def level(self) -> int:
        return len(self.queue) + int(self.run is not None) + int(self.enq_held is not None)

    async def drain(self, limit: int) -> None:
        """Fast memory until nothing is left; every chunk must finish."""
        self.arb, self.p_aw, self.p_w, self.delay = "paired", 1.0, 1.0, (1, 2)
        for _ in range(limit):
            if self.level() == 0 and not self.mem.bursts:
                break
            await self.step()
        assert self.level() == 0, f"not drained after {limit} cycles: run {self.run}, queued {list(self.queue)}"
        for _ in range(4):
            await self.step()

    async def reset(self) -> None:
        """Reset in the middle of traffic: the FIFO and the chunk in flight are dropped."""
        d = self.dut
        d.reset.value = 1
        self.drive(Inputs(None, 0, 0, 0))
        for _ in range(2):
            await FallingEdge(d.clock)
        d.reset.value = 0
        self.reset_ref()
        self.enq_held = None
        self.prev_enq = False
        cover("scrub_block:reset_mid_traffic")


# memory-side modes: (arbiter, AW READY probability, W READY probability, B delay range)
MODES: dict[str, tuple[str, float, float, tuple[int, int]]] = {
    "fast": ("paired", 1.0, 1.0, (1, 2)),
    "stall": ("paired", 0.6, 0.6, (1, 12)),
    "slow": ("paired", 0.2, 0.3, (5, 60)),
    "aw_stall": ("paired", 0.01, 0.9, (1, 4)),  # the burst's data goes before its AW
    "b_slow": ("paired", 1.0, 1.0, (20, 120)),  # AW stops at 4 outstanding
    "free": ("free", 0.7, 0.7, (1, 8)),
    "free_b_slow": ("free", 0.9, 1.0, (150, 500)),  # W runs bursts ahead of AW (held at 4 outstanding)
}


async def traffic(chk: Checker, rng: random.Random, cycles: int) -> None:
    """Spans of random memory modes and enqueue patterns; one reset in the middle."""
    left = cycles
    reset_at = rng.randrange(cycles // 4, 3 * cycles // 4 + 1)
    while left > 0:
        mode = rng.choice(list(MODES))
        arb, chk.p_aw, chk.p_w, chk.delay = MODES[mode]
        chk.arb = arb
        chk.granted = chk.granted and arb == "paired"  # independent channels: no grant to finish
        cover(f"scrub_block:mode:{mode}")
        span = min(left, rng.randrange(50, 600))
        # enqueue pattern for the span: rarely a full FIFO (draining it is ~1000 cycles per chunk)
        target = rng.choice([0, 1, 1, 2, 3, 4]) if rng.random() > 0.05 else chk.chunks + 2
        p_enq = rng.choice([0.01, 0.1, 1.0])
        for _ in range(span):
            enq = None
            if chk.level() < target and rng.random() < p_enq:
                enq = rng.randrange(chk.chunks) if rng.random() < 0.7 else rng.choice([0, chk.chunks - 1])
            await chk.step(enq)
        left -= span
        if left <= cycles - reset_at < left + span:
            await chk.reset()


@cocotb.test()
async def random_traffic(dut: Any) -> None:
    seed = seed_from_env("scrub_engine")
    rng = random.Random(seed)
    await start(dut)
    chk = Checker(dut, rng)
    await chk.step()  # reset state: idle, FIFO empty
    await traffic(chk, rng, CYCLES)
    await chk.drain(4 * chk.bursts_per_chunk * BEATS * (chk.chunks + 2))
    assert chk.finished_total > 0, "no chunk finished"
    dut._log.info("scrub_engine: %d chunks enqueued, %d scrubbed", chk.enqueued_total, chk.finished_total)
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def fifo_full(dut: Any) -> None:
    """Back-to-back releases until the FIFO is full (one chunk in flight, `chunks` queued), a
    release held while READY is low, then everything scrubbed in order with a fast memory."""
    await start(dut)
    rng = random.Random(3)
    chk = Checker(dut, rng)
    chk.arb, chk.p_aw, chk.p_w, chk.delay = "paired", 1.0, 1.0, (1, 1)
    seq = [rng.randrange(chk.chunks) for _ in range(chk.chunks + 2)]
    for c in seq:
        await chk.step(c)
        while chk.enq_held is not None:  # held until the first chunk finishes and the FIFO takes one
            await chk.step()
    assert chk.enqueued_total == len(seq)
    await chk.drain(4 * chk.bursts_per_chunk * BEATS * (chk.chunks + 4))
    assert chk.finished_total == len(seq)
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def w_ahead_of_aw(dut: Any) -> None:
    """AW and W as independent channels with slow B: AW stops at 4 outstanding while the data
    of the following bursts goes ahead of their AW (two bursts and more)."""
    await start(dut)
    chk = Checker(dut, random.Random(4))
    chk.arb, chk.p_aw, chk.p_w, chk.delay = "free", 1.0, 1.0, (500, 500)
    await chk.step(chk.chunks - 1)
    await chk.step(0)
    for _ in range(4 * chk.bursts_per_chunk * BEATS):
        await chk.step()
    assert chk.mem.w_seen - chk.mem.aw_seen > 1 or chk.finished_total > 0
    await chk.drain(4 * chk.bursts_per_chunk * BEATS * 4)
    assert chk.finished_total == 2
    dump_coverage(COVERAGE_NAME)
