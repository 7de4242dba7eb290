# SPDX-License-Identifier: Apache-2.0
"""CopyEngine on its own: the bench plays the data path (the AR arbiter: READY at random, in modes from always to
rarely; the memory: each accepted burst's beats returned in order after a random latency, with random gaps, on an R
channel without READY, as the data path hands the copy's beats over) and the DMA writer (READY on `data` at random, in
modes from always to stalled for long stretches), and launches copies of random chunks back to back or after a pause.

A reference written here (CopyEngine's description, docs/rtl-notes.md "CHUNK_COPY") is compared every cycle:

- AR VALID exactly when a copy runs, bursts remain and the FIFO has room for the burst plus every beat requested and
  not yet arrived (fifo + outstanding + 16 <= 64); the burst's address (the chunk's base + 1 KiB per burst, in order)
  and length (16 beats); VALID and payload held until READY;
- `avail` = beats arrived and not yet taken, never above the FIFO's 64 (an R beat without room would be lost);
  `data` VALID whenever a beat is there, the beats in address order with the memory's contents;
- `end` from the cycle after the chunk's last beat arrived until the next start, `idle` when not running and empty.

Seen to fail (by hand) when the credit check forgets the beats in flight ("AR VALID 1, reference 0 (fifo 0,
outstanding 64)"). The seed is printed (CXLTRACK_SEED reproduces a run); CXLTRACK_BLOCK_CYCLES sets the length of the
random run."""

from __future__ import annotations

import os
import random
from collections import deque
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "CopyEngine"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
COVERAGE_NAME = "block_copy_engine"


class Bench:
    def __init__(self, dut: Any, rng: random.Random) -> None:
        p = block_params()
        self.chunks, self.chunk_shift = p["chunks"], p["chunk_shift"]
        self.burst, self.fifo_beats = p["burst_beats"], p["fifo_beats"]
        self.addr_mask = (1 << p["mem_addr_bits"]) - 1
        self.total = (1 << self.chunk_shift) // 64
        self.dut, self.rng = dut, rng
        self.cycle = 0
        # reference state
        self.active = False
        self.chunk = 0
        self.issued = 0  # bursts accepted
        self.received = 0  # beats arrived
        self.fifo: deque[int] = deque()  # beat data arrived, not taken
        self.taken = 0
        self.held: tuple[int, int] | None = None  # AR presented, not accepted
        # the memory: beats due on R, (cycle, data)
        self.r_plan: deque[tuple[int, int]] = deque()
        self.copies = 0
        self.p_ar, self.p_data, self.r_gap = 1.0, 1.0, 0.0
        self.stall_ar = self.stall_data = 0  # cycles left of a stretch with READY low (a busy CXL side, a slow host)
        self.stalls = True  # such stretches begin at random

    def mem(self, addr: int) -> int:
        """The memory's contents: a pattern of the beat's address (every beat different)."""
        return int.from_bytes(random.Random(addr).randbytes(64), "little")

    def mode(self) -> None:
        rng = self.rng
        self.p_ar = rng.choice([1.0, 0.7, 0.3])
        self.p_data = rng.choice([1.0, 0.8, 0.3])
        self.r_gap = rng.choice([0.0, 0.3, 0.8])
        cover(f"copy_block:mode:{self.p_ar}:{self.p_data}:{self.r_gap}")

    async def step(self, start_chunk: int | None = None) -> None:
        d, rng, c = self.dut, self.rng, self.cycle
        if start_chunk is not None and self.active:
            start_chunk = None
        d.io_start_valid.value = int(start_chunk is not None)
        d.io_start_bits.value = start_chunk or 0
        if self.stalls and not self.stall_ar and rng.random() < 0.003:
            self.stall_ar = rng.randrange(20, 200)
            cover("copy_block:ar_stall")
        if self.stalls and not self.stall_data and rng.random() < 0.003:
            self.stall_data = rng.randrange(50, 300)
            cover("copy_block:data_stall")
        self.stall_ar, self.stall_data = max(0, self.stall_ar - 1), max(0, self.stall_data - 1)
        d.io_ar_ready.value = int(not self.stall_ar and rng.random() < self.p_ar)
        r_now = bool(self.r_plan) and self.r_plan[0][0] <= c
        d.io_r_valid.value = int(r_now)
        d.io_r_bits.value = self.r_plan[0][1] if r_now else rng.getrandbits(512)
        d.io_data_ready.value = int(not self.stall_data and rng.random() < self.p_data)
        await settle()
        self.compare(r_now)
        self.advance(start_chunk, r_now)
        self.cycle += 1
        await next_cycle(d)

    def fail(self, msg: str) -> AssertionError:
        return AssertionError(f"cycle {self.cycle} (copy {self.copies}, chunk {self.chunk}): {msg}")

    def compare(self, r_now: bool) -> None:
        d = self.dut
        bursts = self.total // self.burst
        outstanding = self.issued * self.burst - self.received
        room = len(self.fifo) + outstanding + self.burst <= self.fifo_beats
        ar_valid = int(self.active and self.issued < bursts and room)
        got = sig(d.io_ar_valid)
        if got != ar_valid:
            raise self.fail(f"AR VALID {got}, reference {ar_valid} (fifo {len(self.fifo)}, outstanding {outstanding})")
        if ar_valid:
            addr = ((self.chunk << self.chunk_shift) + 64 * self.burst * self.issued) & self.addr_mask
            now = (sig(d.io_ar_bits_addr), sig(d.io_ar_bits_len))
            if now != (addr, self.burst - 1):
                raise self.fail(f"AR address {now[0]:#x} len {now[1]}, reference {addr:#x} len {self.burst - 1}")
            if self.held is not None and now != self.held:
                raise self.fail(f"AR changed while not accepted: {self.held} -> {now}")
            if not room:
                raise self.fail("AR without room")
        elif self.held is not None:
            raise self.fail("AR VALID dropped before READY")
        if sig(d.io_avail) != len(self.fifo):
            raise self.fail(f"avail {sig(d.io_avail)}, reference {len(self.fifo)}")
        if sig(d.io_data_valid) != int(bool(self.fifo)):
            raise self.fail(f"data VALID {sig(d.io_data_valid)}, reference {int(bool(self.fifo))}")
        if self.fifo and sig(d.io_data_bits) != self.fifo[0]:
            raise self.fail(f"data of beat {self.taken} is not the memory's beat")
        end = int(not self.active)
        if sig(d.io_end) != end:
            raise self.fail(f"end {sig(d.io_end)}, reference {end}")
        idle = int(not self.active and not self.fifo)
        if sig(d.io_idle) != idle:
            raise self.fail(f"idle {sig(d.io_idle)}, reference {idle}")
        if r_now and len(self.fifo) >= self.fifo_beats:
            raise self.fail(f"avail {len(self.fifo) + 1} above the FIFO's {self.fifo_beats}")

    def advance(self, start_chunk: int | None, r_now: bool) -> None:
        d, rng = self.dut, self.rng
        ar_fire = sig(d.io_ar_valid) and sig(d.io_ar_ready)
        self.held = (sig(d.io_ar_bits_addr), sig(d.io_ar_bits_len)) if sig(d.io_ar_valid) and not ar_fire else None
        if self.fifo and sig(d.io_data_ready):
            self.fifo.popleft()
            self.taken += 1
        if r_now:
            self.fifo.append(self.r_plan.popleft()[1])
            self.received += 1
            if len(self.fifo) == self.fifo_beats:
                cover("copy_block:fifo_full")
            if self.received == self.total:
                self.active = False
                cover("copy_block:copy_done")
        if ar_fire:
            base = sig(d.io_ar_bits_addr)
            t = max(self.cycle + rng.randrange(1, 12), self.r_plan[-1][0] + 1 if self.r_plan else 0)
            for k in range(self.burst):
                self.r_plan.append((t, self.mem(base + 64 * k)))
                t += 1 + (rng.randrange(1, 6) if rng.random() < self.r_gap else 0)
            self.issued += 1
            outstanding = self.issued * self.burst - self.received
            if outstanding + len(self.fifo) == self.fifo_beats:
                cover("copy_block:credits_exhausted")
        if start_chunk is not None:
            self.active, self.chunk, self.issued, self.received, self.taken = True, start_chunk, 0, 0, 0
            self.copies += 1
            cover("copy_block:start")


@cocotb.test()
async def random_copies(dut: Any) -> None:
    seed = seed_from_env("copy_engine")
    rng = random.Random(seed)
    await start(dut)
    b = Bench(dut, rng)
    b.mode()
    cycles = 0
    # CYCLES cycles and at least 3 copies: a seed of slow modes may finish only 2 in CYCLES (seed 3004 did); 10 x CYCLES
    # is many times what 3 copies take in the slowest modes, so a hung engine still fails
    while cycles < CYCLES or (b.copies < 3 and cycles < 10 * CYCLES):
        cycles += 1
        start_chunk = None
        if not b.active and not b.fifo and rng.random() < 0.2:
            start_chunk = rng.randrange(b.chunks)
            b.mode()
        elif not b.active and b.fifo and rng.random() < 0.05:  # the next copy while the last beats are still queued
            start_chunk = rng.randrange(b.chunks)
            cover("copy_block:start_with_beats_queued")
        await b.step(start_chunk)
    while b.active or b.fifo:  # drain
        b.p_data, b.p_ar, b.stalls = 1.0, 1.0, False
        await b.step()
    assert b.copies >= 3, f"only {b.copies} copies in {cycles} cycles"
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def first_and_last_chunk(dut: Any) -> None:
    """The first and the last chunk, memory and writer always ready: the copy at one beat per cycle."""
    rng = random.Random(3)
    await start(dut)
    b = Bench(dut, rng)
    b.stalls = False  # every READY high
    for chunk in (0, b.chunks - 1):
        await b.step(chunk)
        n = 0
        while b.active or b.fifo:
            await b.step()
            n += 1
        assert n <= b.total + 40, f"chunk {chunk}: {n} cycles for {b.total} beats"
    dump_coverage(COVERAGE_NAME)
