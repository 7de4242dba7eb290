# SPDX-License-Identifier: Apache-2.0
"""The adversary of the update cache for the hotness counters: slow DRAM (100-cycle reads and writes) and an increment
on a different 64-page word in every cycle, so the cache fills and increments overflow into the flag of their group of
32 768 pages. The bench checks the hotness overflow rule (docs/spec.md section 12) end to end: (1) overflows happened
(else it proves nothing); (2) the next harvest of an overflowed group reads every counter of the group at least 1, and
every counter within what tb.dram.checkers.HotChecker allows (the increments counted, at most one more); (3) a CLEAR
harvest then leaves the group all zero: a READ right after it reports nothing; (4) a group never touched reads all
zero. CXLTRACK_SEED reproduces a run."""

from __future__ import annotations

import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import GROUP_PAGES, Checker, HotChecker
from .driver import DramDut
from .sparse_dram import SparseDram

DMA_BUF = 1 << 32


@cocotb.test()
async def hot_overflow_raises_every_counter_of_the_group(dut: Any) -> None:
    seed = seed_from_env("dram_hot_overflow")
    rng = random.Random(seed)
    p = params()
    dram = SparseDram(dut, base=p["carve_base"], size=p["carve_bytes"], read_latency=100, write_latency=100, seed=seed)
    hot = HotChecker((1 << p["hot_bits"]) - 1)
    h = DramDut(dut, dram, Checker(), hot)
    await h.start()
    groups = rng.sample(range(p["pages"] // GROUP_PAGES), 2)
    for _ in range(300):  # a burst: every cycle a new word of one of the groups
        await h.step(inc=rng.choice(groups) * GROUP_PAGES + rng.randrange(GROUP_PAGES))
    assert h.hot_overflows > 0, "the burst never filled the update cache: the bench does not reach the overflow rule"
    for _ in range(50):
        await h.step()
    for g in groups:
        base = g * GROUP_PAGES
        overflowed = g in hot.overflows
        values, launch, done = await h.harvest_hot(base, GROUP_PAGES, "read", dma_addr=DMA_BUF)
        hot.harvest(base, GROUP_PAGES, "read", launch, done, values)
        if overflowed:
            zero = [base + i for i, v in enumerate(values) if v == 0]
            assert not zero, f"group {g} overflowed, yet {len(zero)} counters read 0 (first {zero[:4]})"
            cover("dram_hot_overflow:group_raised")
        values, launch, done = await h.harvest_hot(base, GROUP_PAGES, "clear", dma_addr=DMA_BUF)
        hot.harvest(base, GROUP_PAGES, "clear", launch, done, values)
        values, launch, done = await h.harvest_hot(base, GROUP_PAGES, "read", dma_addr=DMA_BUF)
        hot.harvest(base, GROUP_PAGES, "read", launch, done, values)
        assert not any(values), f"group {g}: {sum(1 for v in values if v)} counters non-zero after a clearing harvest"
    other = next(x for x in range(p["pages"] // GROUP_PAGES) if x not in groups)
    values, launch, done = await h.harvest_hot(other * GROUP_PAGES, GROUP_PAGES, "read", dma_addr=DMA_BUF)
    assert not any(values), f"an untouched group reads {sum(1 for v in values if v)} non-zero counters"
    assert not dram.stats.errors, dram.stats.errors[:5]
    print(
        f"dram_hot_overflow: {h.hot_overflows} overflowing increments, {hot.licensed} counters above the count, "
        f"DRAM reads {dram.stats.reads} writes {dram.stats.writes}"
    )
    dump_coverage("dram_hot_overflow")
