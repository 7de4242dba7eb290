# SPDX-License-Identifier: Apache-2.0
"""Per-page tracking tables: dirty and accessed bitmaps, hotness counters and
the block-association table (docs/spec.md sections 2.1 and 3)."""

from __future__ import annotations

from dataclasses import dataclass

WORD = 64  # pages per bitmap word: the harvest's atomic unit


@dataclass(frozen=True)
class Association:
    disk: int
    block: int


class Bitmap:
    """A page bitmap stored as 64-page words, the unit a harvest reads and clears."""

    def __init__(self, pages: int) -> None:
        self.words = [0] * (pages // WORD)

    def set(self, page: int) -> None:
        self.words[page // WORD] |= 1 << (page % WORD)

    def test(self, page: int) -> bool:
        return bool(self.words[page // WORD] >> (page % WORD) & 1)

    def take_word(self, word: int, clear: bool) -> int:
        """Read one word and, with clear, zero it: one atomic step."""
        value = self.words[word]
        if clear:
            self.words[word] = 0
        return value


class TrackingTables:
    def __init__(self, pages: int, hot_max: int) -> None:
        self.pages = pages
        self.hot_max = hot_max
        self.dirty = Bitmap(pages)
        self.accessed = Bitmap(pages)
        self.hot = bytearray(pages)
        self.bat: dict[int, Association] = {}

    def touch(self, page: int) -> None:
        """A request was accepted: accessed bit and saturating hotness."""
        self.accessed.set(page)
        if self.hot[page] < self.hot_max:
            self.hot[page] += 1

    def invalidate(self, page: int) -> bool:
        """Clear page's association; True if one was valid."""
        return self.bat.pop(page, None) is not None
