# SPDX-License-Identifier: Apache-2.0
"""The parts of a 1 TiB device a bench touched, and their comparison with the model: comparing every table of 2^28
pages (tb.env Scoreboard.compare_tables) is out of reach, and the pages nobody touched are zero in both."""

from __future__ import annotations

import random

from cxltrack import regs

from ..env import OFF, OP, R, Scoreboard, cover

WINDOW = 32768  # pages a bitmap harvest reports through RESULT
HOT_WINDOW = 4096  # pages a hotness harvest reports through RESULT


class Regions:
    """A few areas of the device the bench works in: the first pages, the last pages, and random ones in between (so
    that rows, summary words and overflow groups far apart are all used). `page()` draws a page in one of them."""

    def __init__(self, rng: random.Random, pages: int, span: int = 2048, middle: int = 2) -> None:
        self.rng = rng
        self.span = span
        bases = [0, pages - span] + [rng.randrange(span, pages - 2 * span, 64) for _ in range(middle)]
        self.bases = sorted(bases)
        self.touched: set[int] = set()

    def page(self) -> int:
        """A page of an area: half the time one touched before (so that writes find associations, harvests find
        what they cleared written again, and rows are shared)."""
        if self.touched and self.rng.random() < 0.5:
            return self.rng.choice(sorted(self.touched))
        p = self.rng.choice(self.bases) + self.rng.randrange(self.span)
        self.touched.add(p)
        return p

    def harvest_range(self, hot: bool) -> tuple[int, int]:
        """A harvest range inside one area (64-page aligned, RESULT-sized)."""
        base = self.rng.choice(self.bases)
        start = base + self.rng.randrange(0, self.span, 64)
        most = min(HOT_WINDOW if hot else WINDOW, base + self.span - start)
        return start, self.rng.randrange(64, most + 1, 64)


async def compare_touched(sb: Scoreboard, regions: Regions) -> None:
    """Every table where the bench worked, through commands (no CLEAR): the bitmaps and hotness of each area, the BAT
    entry of every page touched."""
    for base in regions.bases:
        n = regions.span
        await sb.command(OP.HARVEST_DIRTY, base, n, result_bytes=n // 8)
        await sb.command(OP.HARVEST_ACCESSED, base, n, result_bytes=n // 8)
        await sb.command(OP.HARVEST_HOTNESS, base, n, result_bytes=n)
    for page in sorted(regions.touched):
        await sb.command(OP.BAT_GET, page)


async def compare_events_unordered(sb: Scoreboard) -> None:
    """Both event queues drained and compared as sets of records: with the tables in DRAM a BAT_INVALIDATED event is
    queued when its line is written back (docs/spec.md section 12), so it may come after an event the model queued
    later (a merge's MERGE_DONE after the merge's own write invalidated an association); each record's type, index
    and argument, the SEQ numbers taken, EVQ_COUNT and EVQ_DROPPED must still agree."""
    b, m = sb.b, sb.m
    n = await b.reg_read(OFF["EVQ_COUNT"])
    assert n == m.reg_read(OFF["EVQ_COUNT"]), f"EVQ_COUNT: rtl {n} model {m.reg_read(OFF['EVQ_COUNT'])}"
    got: list[tuple[int, int, int, int]] = []
    want: list[tuple[int, int, int, int]] = []
    head = ("EVT_HEAD0", "EVT_HEAD1", "EVT_ARG_LO", "EVT_ARG_HI")
    for _ in range(n):
        got.append(record([await b.reg_read(OFF[x]) for x in head]))
        want.append(record([m.reg_read(OFF[x]) for x in head]))
        await sb.reg_write(OFF["EVQ_POP"], 1)
    for e in got:
        cover(f"event:{regs.Event(e[0]).name}")
    key = sorted(e[:3] for e in got), sorted(e[:3] for e in want)
    assert key[0] == key[1], f"events: rtl {sorted(got)} model {sorted(want)}"
    assert sorted(e[3] for e in got) == sorted(e[3] for e in want), f"SEQs: rtl {got} model {want}"
    if [e[:3] for e in got] != [e[:3] for e in want]:
        cover("dram_core:events_reordered")
    for name in ("EVQ_COUNT", "EVQ_DROPPED"):
        await sb.reg_read(OFF[name])


def record(words: list[int]) -> tuple[int, int, int, int]:
    """(type, index, arg, SEQ) of the head registers EVT_HEAD0, EVT_HEAD1, EVT_ARG_LO, EVT_ARG_HI."""
    h0, seq, lo, hi = words
    f = R["EVT_HEAD0"]
    return f.field("TYPE").get(h0), f.field("INDEX").get(h0), lo | hi << 32, seq
