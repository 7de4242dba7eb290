# SPDX-License-Identifier: Apache-2.0
"""The event queue (docs/spec.md section 8)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cxltrack.regs import Event


@dataclass(frozen=True)
class EventRecord:
    type: Event
    index: int
    seq: int
    arg: int


class EventQueue:
    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.queue: deque[EventRecord] = deque()
        self.seq = 0
        self.dropped = 0

    def push(self, type_: Event, index: int, arg: int) -> bool:
        """Queue an event; False if it was dropped because the queue is full."""
        rec = EventRecord(type_, index & 0xFFFF, self.seq, arg & (2**64 - 1))
        self.seq = (self.seq + 1) & 0xFFFFFFFF
        if len(self.queue) >= self.depth:
            self.dropped = min(self.dropped + 1, 0xFFFFFFFF)
            return False
        self.queue.append(rec)
        return True

    def head(self) -> EventRecord | None:
        return self.queue[0] if self.queue else None

    def pop(self) -> None:
        if self.queue:
            self.queue.popleft()
