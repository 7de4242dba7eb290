# SPDX-License-Identifier: Apache-2.0
"""Write-buffer merge slots (docs/spec.md section 6)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cxltrack import regs
from cxltrack.regs import SlotState

SLOT_BYTES = regs.SLOT_SIZE
FULL_MASK = (1 << SLOT_BYTES) - 1


@dataclass
class Slot:
    state: SlotState = SlotState.FREE
    tag: int = 0
    mask: int = 0  # bit i: byte i is valid
    data: bytearray = field(default_factory=lambda: bytearray(SLOT_BYTES))
    opened_at: int = 0
    full_reported: bool = False
    timeout_reported: bool = False

    def open(self, tag: int, now: int) -> None:
        self.state = SlotState.OPEN
        self.tag = tag
        self.mask = 0
        self.data = bytearray(SLOT_BYTES)
        self.opened_at = now
        self.full_reported = False
        self.timeout_reported = False

    def free(self) -> None:
        self.state = SlotState.FREE
        self.mask = 0
        self.data = bytearray(SLOT_BYTES)

    @property
    def full(self) -> bool:
        return self.mask == FULL_MASK

    @property
    def valid_bytes(self) -> int:
        return self.mask.bit_count()

    def store(self, offset: int, data: bytes, enables: bytes) -> None:
        for i, b in enumerate(data):
            if enables[i]:
                self.data[offset + i] = b
                self.mask |= 1 << (offset + i)

    def load(self, offset: int, length: int) -> bytes:
        return bytes(self.data[offset + i] if self.mask >> (offset + i) & 1 else 0 for i in range(length))

    def line(self, n: int) -> tuple[bytes, bytes]:
        """Data and byte enables of 64-byte line n."""
        base = n * 64
        bits = self.mask >> base
        return bytes(self.data[base : base + 64]), bytes((bits >> i) & 1 for i in range(64))
