# SPDX-License-Identifier: Apache-2.0
"""DMA harvests with the bitmaps in device DRAM: sparse sets over 64 GiB of the 1 TiB device (16 Mi pages), then
clearing and non-clearing DMA harvests of that range (32 768 rows, 2 MiB of bitmap into host memory) with sets
racing them, and short DMA harvests at odd 64-page offsets; the bitmap in host memory is checked by
tb.dram.driver.Checker. Prints the engine's cycles per harvest (DRAM at 20 cycles)."""

from __future__ import annotations

import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .driver import Checker, DramDut
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
    span = 1 << 24  # 64 GiB of pages
    base = rng.randrange(0, h.pages // span) * span
    host = 0x1_0000_0000

    def sets(rate: float) -> Any:
        return lambda: tuple(base + rng.randrange(span) if rng.random() < rate else None for _ in range(2))

    for _ in range(400):
        await h.step(sets=sets(0.5)())
    for k, clear in enumerate((False, True, True)):
        table = k % 2
        reported, launch, done = await h.harvest(table, base, span, clear, sets(0.05), dma_addr=host)
        checker.harvest(table, base, span, clear, launch, done, reported)
        print(f"dram_dma: DMA harvest of 64 GiB, table {table}, clear {clear}: {len(reported)} pages, {done - launch} cycles")
        cover("dram_dma:whole_range")
    for _ in range(6):
        table = rng.randrange(2)
        start = base + rng.randrange(0, span - 40000, 64)
        count = rng.randrange(64, 40000, 64)
        for _ in range(50):
            await h.step(sets=(lambda: tuple(start + rng.randrange(count) if rng.random() < 0.5 else None for _ in range(2)))())  # type: ignore[arg-type]
        reported, launch, done = await h.harvest(table, start, count, True, sets(0.1), dma_addr=host + 0x40 * rng.randrange(64))
        checker.harvest(table, start, count, True, launch, done, reported)
        cover("dram_dma:short")
    assert checker.reports > 0
    assert not dram.stats.errors, dram.stats.errors[:5]
    dump_coverage("dram_dma")
