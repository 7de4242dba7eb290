# SPDX-License-Identifier: Apache-2.0
"""Property (a) with the bitmaps in device DRAM (docs/spec.md section 13): sets race clearing harvests on the very
rows being harvested, in every cycle, while the update cache is written back and the engine waits for DRAM. Rows are
chosen so that the same row is in the cache, in the controller's hands and in DRAM at once; DRAM is slow and
back-pressured. Every harvest is checked by tb.dram.checkers.Checker: a set is never lost (it is reported by the first
clearing harvest launched 3 or more cycles after it), and a page reported was set or is in a group that overflowed.
A final quiet harvest of every row touched must find exactly the sets not yet reported. CXLTRACK_DRAM_CMDS sets the
number of harvests."""

from __future__ import annotations

import os
import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import Checker
from .driver import DramDut
from .sparse_dram import SparseDram

COMMANDS = int(os.environ.get("CXLTRACK_DRAM_CMDS", "40"))
ROW = 512


@cocotb.test()
async def races(dut: Any) -> None:
    seed = seed_from_env("dram_races")
    rng = random.Random(seed)
    p = params()
    dram = SparseDram(
        dut,
        base=p["carve_base"],
        size=2 * p["rows"] * 64,
        read_latency=rng.choice([5, 30]),
        write_latency=rng.choice([3, 25]),
        ready_prob=0.6,
        seed=seed,
    )
    checker = Checker()
    h = DramDut(dut, dram, checker)
    await h.start()
    base_row = rng.randrange(0, h.rows - 64) & ~63
    # six rows per table, all in one group: twelve entries (three quarters of the cache), so write-backs run during
    # the harvests, the same row is in the cache, in the controller's hands and in DRAM at once, and the cache
    # overflows only now and then (the overflow bench floods it)
    rows = [base_row + r for r in rng.sample(range(64), 6)]

    def sets() -> tuple[int | None, int | None]:
        return tuple(  # type: ignore[return-value]
            rng.choice(rows) * ROW + rng.randrange(ROW) if rng.random() < 0.7 else None for _ in range(2)
        )

    for _ in range(rng.randrange(50, 300)):
        await h.step(sets=sets())
    for _ in range(COMMANDS):
        table = rng.randrange(2)
        start = base_row * ROW + rng.choice([0, 64, 448, 4096])
        count = rng.choice([32768 - 4096, 8192, 512, 64])
        reported, launch, done = await h.harvest(table, start, count, True, sets)
        checker.harvest(table, start, count, True, launch, done, reported)
        for _ in range(rng.randrange(0, 40)):
            await h.step(sets=sets())
        cover("dram_races:harvest")
    # quiet: wait for write-backs, then every row once more per table; what is left must come out
    for _ in range(200):
        await h.step()
    for table in range(2):
        start = base_row * ROW
        reported, launch, done = await h.harvest(table, start, 32768, True)
        checker.harvest(table, start, 32768, True, launch, done, reported)
        left = [pg for pg in checker.t[table].required if start <= pg < start + 32768]
        assert not left, f"table {table}: pages {left[:5]} never reported"
    assert not dram.stats.errors, dram.stats.errors[:5]
    print(
        f"dram_races: {COMMANDS} racing harvests, {checker.reports} pages reported, {h.overflows} overflowing sets, "
        f"{checker.false_positives} licensed false positives, DRAM reads {dram.stats.reads} writes {dram.stats.writes}"
    )
    dump_coverage("dram_races")
