# SPDX-License-Identifier: Apache-2.0
"""TrackTable on its own: every port gets a random request (READ, ZERO, HALVE, SET, CLEAR, INC, MARK
on a random word and lane) in most cycles, concentrated on a few words so that requests collide
in one cycle (combined, only the last port writes) and in consecutive cycles (forwarding from
the previous cycle's write). A reference written here applies the requests cycle by cycle in
port order; every answer (the word before the port's own operation, two cycles after the
request) and the `done` echo are compared, and a final sweep reads every word. Reset in the
middle of traffic must leave every word zero. The seed is printed (CXLTRACK_SEED reproduces a
run); CXLTRACK_BLOCK_CYCLES sets the length of the random run."""

from __future__ import annotations

import os
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "TrackTable"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
COVERAGE_NAME = "block_track_table"


def _ops() -> tuple[str, ...]:
    """Operation names by code, as TrackTable.scala's TableOp defines them (Blocks writes them
    into block.json, so the bench has no second copy of the codes)."""
    codes = {k.removeprefix("op_"): v for k, v in block_params().items() if k.startswith("op_")}
    names = tuple(sorted(codes, key=codes.__getitem__))
    assert [codes[n] for n in names] == list(range(len(names))), f"op codes not dense: {codes}"
    return names


OPS = _ops()
LATENCY = 2


@dataclass(frozen=True)
class Req:
    word: int
    lane: int
    op: int
    mask: int = -1  # ZERO/HALVE/MARK: the 64-lane groups they apply to (all by default)


class RefTable:
    """The table as the model sees it: words of `lanes` lanes, requests applied in cycle order
    and, within a cycle, in port order."""

    def __init__(self, words: int, lane_bits: int, lanes: int = 64) -> None:
        self.words, self.lanes = words, lanes
        self.max = (1 << lane_bits) - 1
        self.reset()

    def reset(self) -> None:
        self.data = [[0] * self.lanes for _ in range(self.words)]

    def value(self, word: int) -> int:
        bits = self.max.bit_length()
        return sum(v << (j * bits) for j, v in enumerate(self.data[word]))

    def apply(self, r: Req) -> int:
        """Returns the word before the operation."""
        old = self.value(r.word)
        lanes = self.data[r.word]
        name = OPS[r.op]
        mine = [bool(r.mask >> (j // 64) & 1) for j in range(self.lanes)]
        if name == "ZERO":
            lanes[:] = [0 if m else v for v, m in zip(lanes, mine, strict=True)]
        elif name == "HALVE":
            lanes[:] = [v >> 1 if m else v for v, m in zip(lanes, mine, strict=True)]
        elif name == "SET":
            lanes[r.lane] = 1
        elif name == "CLEAR":
            lanes[r.lane] = 0
        elif name == "INC":
            lanes[r.lane] = min(lanes[r.lane] + 1, self.max)
        elif name == "MARK":
            lanes[:] = [max(v, 1) if m else v for v, m in zip(lanes, mine, strict=True)]
        return old


class Checker:
    def __init__(self, dut: Any) -> None:
        p = block_params()
        self.words, self.lane_bits, self.ports = p["words"], p["lane_bits"], p["n_ports"]
        self.lanes = p["lanes"]
        self.groups = self.lanes // 64
        self.dut = dut
        dut.io_scanRow.value = 0
        self.ref = RefTable(self.words, self.lane_bits, self.lanes)
        self.pending: deque[list[tuple[Req, int] | None]] = deque([[None] * self.ports] * LATENCY)
        self.prev_words: set[int] = set()
        self.cycle = 0
        self.log: deque[str] = deque(maxlen=6)

    def drive(self, reqs: Sequence[Req | None]) -> None:
        d = self.dut
        for p, r in enumerate(reqs):
            getattr(d, f"io_req_{p}_valid").value = int(r is not None)
            if r is not None:
                getattr(d, f"io_req_{p}_bits_word").value = r.word
                getattr(d, f"io_req_{p}_bits_lane").value = r.lane
                getattr(d, f"io_req_{p}_bits_op").value = r.op
                getattr(d, f"io_req_{p}_bits_mask").value = r.mask & ((1 << self.groups) - 1)

    async def step(self, reqs: Sequence[Req | None]) -> None:
        """At a falling edge: drive this cycle's requests, check the answers due now (requests
        of two cycles ago), advance the reference, then the clock."""
        assert len(reqs) == self.ports
        self.drive(reqs)
        await settle()
        due = self.pending.popleft()
        d = self.dut
        for p, exp in enumerate(due):
            valid = sig(getattr(d, f"io_resp_{p}_valid"))
            where = f"cycle {self.cycle} port {p}"
            assert valid == int(exp is not None), f"{where}: resp valid {valid}\n" + "\n".join(self.log)
            if exp is None:
                continue
            req, old = exp
            got = sig(getattr(d, f"io_resp_{p}_bits"))
            echo = (sig(getattr(d, f"io_done_{p}_word")), sig(getattr(d, f"io_done_{p}_lane")))
            assert echo == (req.word, req.lane), f"{where}: done {echo}, request {req}"
            assert got == old, (
                f"{where}: {OPS[req.op]} word {req.word} lane {req.lane}: rtl old {got:#x}, reference {old:#x}\n"
                + "\n".join(self.log)
            )
        answers: list[tuple[Req, int] | None] = []
        for r in reqs:
            answers.append(None if r is None else (r, self.ref.apply(r)))
        self.pending.append(answers)
        self._cover(reqs)
        self.log.append(f"cycle {self.cycle}: {[None if r is None else (OPS[r.op], r.word, r.lane) for r in reqs]}")
        self.cycle += 1
        await next_cycle(d)

    def _cover(self, reqs: Sequence[Req | None]) -> None:
        words = [r.word for r in reqs if r is not None]
        for r in reqs:
            if r is not None:
                cover(f"table_block:op:{OPS[r.op]}")
        if len(words) != len(set(words)):
            cover("table_block:same_cycle_same_word")
        if set(words) & self.prev_words:
            cover("table_block:forward_previous_cycle")
        lanes = [(r.word, r.lane) for r in reqs if r is not None]
        if len(lanes) != len(set(lanes)):
            cover("table_block:same_cycle_same_page")
        self.prev_words = set(words)

    async def drain(self) -> None:
        for _ in range(LATENCY + 1):
            await self.step([None] * self.ports)

    async def sweep(self) -> None:
        """Read every word through every port (answers compared like any other)."""
        for w in range(self.words):
            await self.step([Req(w, 0, 0)] * self.ports)
        await self.drain()

    async def reset(self, rng: random.Random) -> None:
        """Reset in the middle of traffic: requests keep arriving while it is high; afterwards
        every word must read zero (the LVT's reset state) and nothing in flight may answer."""
        await self.drain()
        self.dut.reset.value = 1
        for _ in range(2):
            self.drive([random_req(rng, self) for _ in range(self.ports)])
            await FallingEdge(self.dut.clock)
        self.drive([None] * self.ports)
        self.dut.reset.value = 0
        self.ref.reset()
        cover("table_block:reset")


def random_req(rng: random.Random, chk: Checker, hot: list[int] | None = None) -> Req | None:
    if rng.random() < 0.15:
        return None
    word = rng.choice(hot) if hot and rng.random() < 0.8 else rng.randrange(chk.words)
    lane = rng.choice([0, 1, 63, chk.lanes - 1]) if rng.random() < 0.5 else rng.randrange(chk.lanes)
    # mostly the operations of the core's request ports; the harvest ones often enough to matter
    op = rng.choices(range(len(OPS)), weights=[2, 1, 1, 4, 3, 5, 1])[0]
    # ZERO/HALVE/MARK of a harvest cover some of the row's 64-lane groups (all of a 64-lane row), sometimes none
    mask = rng.getrandbits(chk.groups) if rng.random() < 0.5 else (1 << chk.groups) - 1
    return Req(word, lane, op, mask)


@cocotb.test()
async def random_requests(dut: Any) -> None:
    seed = seed_from_env("track_table")
    rng = random.Random(seed)
    await start(dut)
    chk = Checker(dut)
    await chk.sweep()  # reset state: every word zero
    left = CYCLES
    while left > 0:
        hot = [rng.randrange(chk.words) for _ in range(rng.choice([1, 2, 3]))]
        span = min(left, rng.randrange(10, 200))
        for _ in range(span):
            await chk.step([random_req(rng, chk, hot) for _ in range(chk.ports)])
        left -= span
        if rng.random() < 0.03:
            await chk.reset(rng)
            await chk.sweep()
    await chk.drain()
    await chk.sweep()
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def saturation_and_decay(dut: Any) -> None:
    """One page incremented past the maximum on every port at once, halved to zero, and a
    ZERO racing increments of the same word in the same cycle (port order decides)."""
    await start(dut)
    chk = Checker(dut)
    inc, halve, zero = OPS.index("INC"), OPS.index("HALVE"), OPS.index("ZERO")
    for _ in range((1 << chk.lane_bits) + 2):
        await chk.step([Req(0, 5, inc)] * chk.ports)
    cover("table_block:saturated")
    for _ in range(chk.lane_bits + 1):
        await chk.step([Req(0, 5, halve)] + [None] * (chk.ports - 1))
    for _ in range(4):
        await chk.step([Req(0, 7, zero)] + [Req(0, 7, inc)] * (chk.ports - 1))
        await chk.step([Req(0, 7, inc)] * (chk.ports - 1) + [Req(0, 7, zero)])
    await chk.drain()
    await chk.sweep()
    dump_coverage(COVERAGE_NAME)
