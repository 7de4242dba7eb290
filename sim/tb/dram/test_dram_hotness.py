# SPDX-License-Identifier: Apache-2.0
"""The hotness counters in device DRAM at 1 TiB (DramHarvestBench, config/dram1t.toml, sparse DRAM model with garbage in
every line never written): increments on a few hot 64-page words of one group, one page driven past saturation, stray
increments anywhere in the 2^28 pages, dirty and accessed sets sharing the update cache; hotness harvests read, clear
and decay random ranges through the RESULT window (up to 4096 pages) and by DMA (up to 32 768), with increments racing
them. Every report is checked by tb.dram.checkers.HotChecker: it lies in the interval the increments allow, exactly the
model's value when nothing raced, and one more than counted only in a group whose increment overflowed the cache. A
last quiet READ of the hot group must be exact for every counter. DRAM latency and back-pressure are drawn per run;
CXLTRACK_SEED reproduces a run, CXLTRACK_DRAM_CMDS sets the number of harvests."""

from __future__ import annotations

import os
import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import GROUP_PAGES, Checker, HotChecker
from .driver import HOT_MODES, DramDut
from .sparse_dram import drawn_dram

COMMANDS = int(os.environ.get("CXLTRACK_DRAM_CMDS", "40"))
WORD = 64
DMA_BUF = 1 << 32


@cocotb.test()
async def hotness_harvests(dut: Any) -> None:
    seed = seed_from_env("dram_hotness")
    rng = random.Random(seed)
    p = params()
    hot_max = (1 << p["hot_bits"]) - 1
    dram = drawn_dram(dut, p["carve_base"], p["carve_bytes"], rng, seed)
    hot = HotChecker(hot_max)
    h = DramDut(dut, dram, Checker(), hot)
    await h.start()
    pages = h.pages
    group = rng.randrange(pages // GROUP_PAGES)
    base = group * GROUP_PAGES
    hot_words = [base + WORD * w for w in rng.sample(range(GROUP_PAGES // WORD), 6)]
    saturating = hot_words[0] + rng.randrange(WORD)
    set_rows = [base + 512 * r for r in rng.sample(range(GROUP_PAGES // 512), 4)]

    def activity(p_inc: float) -> Any:
        def f() -> tuple[tuple[int | None, int | None], int | None]:
            inc: int | None = None
            if rng.random() < p_inc:
                r = rng.random()
                if r < 0.2:
                    inc = saturating
                elif r < 0.995:
                    inc = rng.choice(hot_words) + rng.randrange(WORD)
                else:
                    inc = rng.randrange(pages)
            # dirty and accessed sets on a few rows of the group: they share the update cache
            sets = tuple(rng.choice(set_rows) + rng.randrange(512) if rng.random() < 0.05 else None for _ in range(2))
            return sets, inc  # type: ignore[return-value]

        return f

    # drive the saturating page past the counter's maximum before the first harvest
    for _ in range(hot_max + 20):
        await h.step(inc=saturating)
    for n in range(COMMANDS):
        quiet = activity(rng.choice([0.1, 0.4]))
        for _ in range(rng.randrange(20, 300)):
            sets, inc = quiet()
            await h.step(sets=sets, inc=inc)
        mode = rng.choice(HOT_MODES)
        racing = activity(rng.choice([0.0, 0.2, 0.5]))
        if n % 5 == 4:  # by DMA: up to the whole group in one command
            count = rng.choice([GROUP_PAGES, 4096, 8192 + 64])
            start = base + rng.randrange(0, GROUP_PAGES - count + 1, WORD)
            values, launch, done = await h.harvest_hot(start, count, mode, racing, dma_addr=DMA_BUF)
            cover("dram_hotness:dma")
        else:
            count = rng.choice([64, 1024, 4096])
            anchor = rng.choice(hot_words)
            start = max(base, min(anchor - rng.randrange(0, count, WORD), base + GROUP_PAGES - count))
            values, launch, done = await h.harvest_hot(start, count, mode, racing)
        hot.harvest(start, count, mode, launch, done, values)
        cover(f"dram_hotness:{mode}")
    # quiet: nothing races the last two READs of the hot group; the first may still carry an overflow's licence, the
    # second has none, so every counter it reports is known exactly
    for _ in range(200):
        await h.step()
    for _ in range(2):
        values, launch, done = await h.harvest_hot(base, GROUP_PAGES, "read", dma_addr=DMA_BUF)
        exact_before = hot.exact
        hot.harvest(base, GROUP_PAGES, "read", launch, done, values)
    tracked = sum(1 for pg in hot.pages if base <= pg < base + GROUP_PAGES)
    assert hot.exact - exact_before == tracked, f"{hot.exact - exact_before} of {tracked} counters checked exactly"
    assert not dram.stats.errors, dram.stats.errors[:5]
    assert hot.saturated > 0, "no counter reached the saturation value: the bench does not exercise it"
    assert any(values), "the hot group reads all zero at the end: the bench does not exercise the counters"
    # beyond the model only where an increment overflowed
    assert h.hot_overflows or not hot.licensed, f"{hot.licensed} reports above the count, no overflow to explain them"
    print(
        f"dram_hotness: {COMMANDS} harvests, {hot.exact} exact reports, {hot.saturated} saturated, {hot.licensed} "
        f"licensed by {h.hot_overflows} overflowing increments, DRAM latency {dram.read_latency}/"
        f"{dram.write_latency} ready {dram.ready_prob}, DRAM reads {dram.stats.reads} writes {dram.stats.writes}, "
        f"engine held {h.stalled} cycles of {h.cycle}"
    )
    dump_coverage("dram_hotness")
