# SPDX-License-Identifier: Apache-2.0
"""The adversary of the update cache: slow DRAM (100-cycle reads and writes) and a set on a different row in every
cycle on both tables, so the cache fills and sets overflow into the all-dirty flag of their 64-row group. The bench
checks the all-dirty rule end to end: (1) overflows happened (else the bench proves nothing); (2) no set is lost: a
clearing harvest of each group reports every page set there (tb.dram.checkers.Checker); (3) the pages reported beyond
the sets are exactly the group's pages, i.e. whole groups all-dirty, and only groups that overflowed; (4) after that
harvest the group is clean again: a second harvest with no sets in between reports nothing. CXLTRACK_SEED reproduces
a run."""

from __future__ import annotations

import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import GROUP_PAGES, Checker
from .driver import DramDut
from .sparse_dram import SparseDram

ROW = 512


@cocotb.test()
async def overflow_marks_groups_all_dirty(dut: Any) -> None:
    seed = seed_from_env("dram_overflow")
    rng = random.Random(seed)
    p = params()
    dram = SparseDram(
        dut, base=p["carve_base"], size=2 * p["rows"] * 64, read_latency=100, write_latency=100, seed=seed
    )
    checker = Checker()
    h = DramDut(dut, dram, checker)
    await h.start()
    groups = rng.sample(range(p["rows"] // 64), 3)
    # a burst: every cycle a new row of one of the groups, on both tables
    for _ in range(300):
        g = rng.choice(groups)
        pages = tuple(g * GROUP_PAGES + rng.randrange(64) * ROW + rng.randrange(ROW) for _ in range(2))
        await h.step(sets=pages)  # type: ignore[arg-type]
    assert h.overflows > 0, "the burst never filled the update cache: the bench does not reach the all-dirty rule"
    for _ in range(50):
        await h.step()
    for table in range(2):
        overflowed = set(checker.t[table].overflows)
        for g in groups:
            start = g * GROUP_PAGES
            reported, launch, done = await h.harvest(table, start, GROUP_PAGES, True)
            checker.harvest(table, start, GROUP_PAGES, True, launch, done, reported)
            if g in overflowed:
                assert len(reported) == GROUP_PAGES, f"table {table} group {g} overflowed: {len(reported)} pages"
                cover("dram_overflow:group_all_dirty")
            again, launch, done = await h.harvest(table, start, GROUP_PAGES, True)
            checker.harvest(table, start, GROUP_PAGES, True, launch, done, again)
            assert not again, f"table {table} group {g}: {len(again)} pages still reported after a clearing harvest"
        # groups never written are clean
        other = next(x for x in range(p["rows"] // 64) if x not in groups)
        quiet, launch, done = await h.harvest(table, other * GROUP_PAGES, GROUP_PAGES, False)
        assert not quiet, f"table {table}: an untouched group reports {len(quiet)} pages"
    assert not dram.stats.errors, dram.stats.errors[:5]
    print(
        f"dram_overflow: {h.overflows} overflowing sets, {checker.false_positives} licensed false positives, "
        f"DRAM reads {dram.stats.reads} writes {dram.stats.writes}"
    )
    dump_coverage("dram_overflow")
