# SPDX-License-Identifier: Apache-2.0
"""DMA harvests with the bitmaps in device DRAM: sparse sets over a span of the 1 TiB device (CXLTRACK_DRAM_DMA_PAGES,
default 2^20 pages = 4 GiB, 2 048 rows, 128 KiB of bitmap into host memory; the regression keeps it short, the bench
runs ~1 500 cycles/s), then clearing and non-clearing DMA harvests of that span with sets racing them on a few hot
rows, and short DMA harvests at odd 64-page offsets; the bitmap in host memory is checked by tb.dram.checkers.Checker.
Prints the engine's cycles per harvest (DRAM at 20/10 cycles)."""

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

ROW = 512


@cocotb.test()
async def dma_harvests(dut: Any) -> None:
    seed = seed_from_env("dram_dma")
    rng = random.Random(seed)
    p = params()
    dram = SparseDram(dut, base=p["carve_base"], size=2 * p["rows"] * 64, read_latency=20, write_latency=10, seed=seed)
    checker = Checker()
    h = DramDut(dut, dram, checker)
    await h.start()
    span = int(os.environ.get("CXLTRACK_DRAM_DMA_PAGES", str(1 << 20)))
    base = rng.randrange(0, h.pages // span) * span
    host = 0x1_0000_0000

    def sets(rate: float) -> Any:
        return lambda: tuple(base + rng.randrange(span) if rng.random() < rate else None for _ in range(2))

    hot = [base + rng.randrange(span // 512) * 512 for _ in range(4)]

    def racing() -> tuple[int | None, int | None]:
        return tuple(rng.choice(hot) + rng.randrange(512) if rng.random() < 0.2 else None for _ in range(2))  # type: ignore[return-value]

    def in_range(start: int, count: int) -> tuple[int | None, int | None]:
        a, b = (start + rng.randrange(count) if rng.random() < 0.5 else None for _ in range(2))
        return a, b

    # ~60 rows set at a rate the write-backs keep up with (the overflow bench floods the cache), then time to drain
    for _ in range(1500):
        await h.step(sets=sets(0.02)())
    for _ in range(2000):
        await h.step()
    for k, clear in enumerate((False, True, True)):
        table = k % 2
        reported, launch, done = await h.harvest(table, base, span, clear, racing, dma_addr=host)
        checker.harvest(table, base, span, clear, launch, done, reported)
        print(
            f"dram_dma: DMA harvest of {span} pages, table {table}, clear {clear}: {len(reported)} pages, "
            f"{done - launch} cycles"
        )
        cover("dram_dma:whole_range")
    for _ in range(6):
        table = rng.randrange(2)
        start = base + rng.randrange(0, span - 40000, 64)
        count = rng.randrange(64, 40000, 64)
        for _ in range(50):
            await h.step(sets=in_range(start, count))
        reported, launch, done = await h.harvest(
            table, start, count, True, racing, dma_addr=host + 0x40 * rng.randrange(64)
        )
        checker.harvest(table, start, count, True, launch, done, reported)
        cover("dram_dma:short")
    assert checker.reports > 0
    assert not dram.stats.errors, dram.stats.errors[:5]
    dump_coverage("dram_dma")
