# SPDX-License-Identifier: Apache-2.0
"""Sparse device memory: pages that were never written read as zero."""

from __future__ import annotations


class Memory:
    def __init__(self, capacity: int, page_size: int) -> None:
        self.capacity = capacity
        self.page_size = page_size
        self._pages: dict[int, bytearray] = {}

    def read(self, addr: int, length: int) -> bytes:
        out = bytearray()
        while length:
            page, off = divmod(addr, self.page_size)
            n = min(length, self.page_size - off)
            buf = self._pages.get(page)
            out += buf[off : off + n] if buf is not None else bytes(n)
            addr += n
            length -= n
        return bytes(out)

    def write(self, addr: int, data: bytes, enables: bytes | None = None) -> None:
        """Store data at addr; with enables, only bytes whose enable is non-zero."""
        for i, b in enumerate(data):
            if enables is not None and not enables[i]:
                continue
            page, off = divmod(addr + i, self.page_size)
            buf = self._pages.get(page)
            if buf is None:
                buf = self._pages[page] = bytearray(self.page_size)
            buf[off] = b

    def zero_page(self, page: int) -> None:
        self._pages.pop(page, None)
