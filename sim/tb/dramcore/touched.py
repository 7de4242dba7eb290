# SPDX-License-Identifier: Apache-2.0
"""The parts of a 1 TiB device a bench touched, and their comparison with the model: comparing every table of 2^28
pages (tb.env Scoreboard.compare_tables) is out of reach, and the pages nobody touched are zero in both."""

from __future__ import annotations

import random

from ..env import OP, Scoreboard

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
