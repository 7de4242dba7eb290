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
        if enables is None:
            i = 0
            while i < len(data):
                page, off = divmod(addr + i, self.page_size)
                n = min(len(data) - i, self.page_size - off)
                dst = self._pages.setdefault(page, bytearray(self.page_size))
                dst[off : off + n] = data[i : i + n]
                i += n
            return
        for i, b in enumerate(data):
            if not enables[i]:
                continue
            page, off = divmod(addr + i, self.page_size)
            buf = self._pages.get(page)
            if buf is None:
                buf = self._pages[page] = bytearray(self.page_size)
            buf[off] = b

    def zero_page(self, page: int) -> None:
        self._pages.pop(page, None)


class HostMemory:
    """Host memory as the device's DMA sees it (docs/spec.md section 5.3), by bus address.

    A sparse byte store (bytes never stored read as 0; tests pre-fill a pattern around a buffer
    so that a stray write shows) with fault ranges: a DMA write that touches one fails and
    stores nothing, as a bus error or an unmapped address would.
    """

    PAGE = 4096

    def __init__(self) -> None:
        self._mem = Memory(1 << 64, self.PAGE)
        self.faults: list[tuple[int, int]] = []  # [start, end)
        self.writes = 0  # DMA writes that succeeded

    def fill(self, addr: int, length: int, byte: int) -> None:
        self.store(addr, bytes([byte]) * length)

    def fault(self, addr: int, length: int) -> None:
        self.faults.append((addr, addr + length))

    def faulted(self, addr: int, length: int) -> bool:
        return any(addr < end and start < addr + length for start, end in self.faults)

    def store(self, addr: int, data: bytes) -> None:
        self._mem.write(addr, data)

    def read(self, addr: int, length: int) -> bytes:
        return self._mem.read(addr, length)

    def dma_write(self, addr: int, data: bytes) -> bool:
        """One DMA write by the device; False (nothing stored) if it touches a fault."""
        if self.faulted(addr, len(data)):
            return False
        self.store(addr, data)
        self.writes += 1
        return True
