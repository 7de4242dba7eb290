# SPDX-License-Identifier: Apache-2.0
"""Tracking and harvests with the bitmaps in device DRAM at 1 TiB (DramHarvestBench, config/dram1t.toml, sparse DRAM
model with garbage in every line never written): random dirty/accessed sets on a few hot rows and anywhere in the
2^28 pages, then harvests through the RESULT window with and without CLEAR over random ranges (any 64-page
alignment, up to 32 768 pages), with sets racing them. DRAM latency and back-pressure are drawn per run. Every
harvest is checked by tb.dram.checkers.Checker (no lost write, no invented page); at this rate the update cache never
rarely fills (only with the slowest DRAM drawn), and a false positive passes the checker only in a group that
overflowed: without overflow the fine tables are exact.
CXLTRACK_SEED reproduces a run; CXLTRACK_DRAM_CMDS sets the number of harvests."""

from __future__ import annotations

import os
import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import Checker
from .driver import DramDut
from .sparse_dram import drawn_dram

COMMANDS = int(os.environ.get("CXLTRACK_DRAM_CMDS", "40"))
ROW = 512


@cocotb.test()
async def tracking_and_harvests(dut: Any) -> None:
    seed = seed_from_env("dram_tracking")
    rng = random.Random(seed)
    p = params()
    dram = drawn_dram(dut, p["carve_base"], 2 * p["rows"] * 64, rng, seed)
    checker = Checker()
    h = DramDut(dut, dram, checker)
    await h.start()
    pages = h.pages

    def sets_fn(p_set: float, hot_rows: list[int]) -> Any:
        def f() -> tuple[int | None, int | None]:
            out: list[int | None] = []
            for _ in range(2):
                if rng.random() >= p_set:
                    out.append(None)
                elif hot_rows and rng.random() < 0.997:
                    out.append(rng.choice(hot_rows) * ROW + rng.randrange(ROW))
                else:
                    out.append(rng.randrange(pages))
            return out[0], out[1]

        return f

    for _ in range(COMMANDS):
        base_row = rng.randrange(0, h.rows - 64)
        hot_rows = [base_row + rng.randrange(64) for _ in range(rng.choice([1, 2, 4]))]
        idle = sets_fn(rng.choice([0.05, 0.2]), hot_rows)
        for _ in range(rng.randrange(20, 200)):
            await h.step(sets=idle())
        table = rng.randrange(2)
        clear = rng.random() < 0.7
        count = rng.choice([64, 512, rng.randrange(64, 32768 + 1, 64), 32768])
        start = min(base_row * ROW + rng.randrange(0, 4096, 64), pages - count)
        racing = sets_fn(rng.choice([0.0, 0.1, 0.3]), hot_rows)
        reported, launch, done = await h.harvest(table, start, count, clear, racing)
        checker.harvest(table, start, count, clear, launch, done, reported)
        cover("dram_tracking:" + ("empty" if not reported else "found"))
    assert not dram.stats.errors, dram.stats.errors[:5]
    # (the checker allows a false positive only in a group that overflowed: with no overflow the tables are exact)
    assert h.overflows or not checker.false_positives
    assert checker.reports > 0, "no harvest found anything: the bench does not exercise the tables"
    print(
        f"dram_tracking: {COMMANDS} harvests, {checker.reports} pages reported ({checker.false_positives} licensed "
        f"false positives, {h.overflows} overflowing sets), DRAM latency {dram.read_latency}/{dram.write_latency} "
        f"ready {dram.ready_prob}, DRAM reads {dram.stats.reads} "
        f"writes {dram.stats.writes} lines held {len(dram.lines)}, engine held {h.stalled} cycles of {h.cycle}"
    )
    dump_coverage("dram_tracking")
