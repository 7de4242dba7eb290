# SPDX-License-Identifier: Apache-2.0
"""Chunk owner table of the shared swap tier (docs/spec.md section 7)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cxltrack.regs import ChunkState


@dataclass
class Chunk:
    state: ChunkState = ChunkState.FREE
    owner: int = 0


class ChunkTable:
    def __init__(self, count: int) -> None:
        self.chunks = [Chunk() for _ in range(count)]
        self.scrub_fifo: deque[int] = deque()  # released chunks, in release order

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, index: int) -> Chunk:
        return self.chunks[index]
