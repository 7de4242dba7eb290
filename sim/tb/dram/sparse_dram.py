# SPDX-License-Identifier: Apache-2.0
"""A sparse model of device DRAM on an AXI4 slave port (DramHarvestBench's `d_axi`): a dict of the 64-byte lines
written, so that a 1 TiB configuration costs only what a bench touches. Knobs: read and write latency in cycles, the
probability that each ready signal is high in a cycle (back-pressure), and `garbage`: a line never written reads as
random bits (what DRAM holds after power-up), which the tables must never report (a row whose summary bit is clear is
zero whatever DRAM holds). Also a write-only model of host memory for the DMA port (`h_axi`).

Both are driven at falling edges and sample the handshakes in the read-only phase after them, as tb.harvest.driver
drives the rest of the bench; the DUT's AXI outputs come from registers, so what is sampled there is what the next
rising edge takes."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

LINE = 64


@dataclass
class DramStats:
    reads: int = 0
    writes: int = 0
    peak_lines: int = 0
    errors: list[str] = field(default_factory=list)


class SparseDram:
    """AXI4 slave with single- and multi-beat INCR bursts of 64-byte beats; one response per cycle at most."""

    def __init__(
        self,
        dut: Any,
        prefix: str = "d_axi",
        base: int = 0,
        size: int = 1 << 64,
        read_latency: int = 20,
        write_latency: int = 10,
        ready_prob: float = 1.0,
        garbage: bool = True,
        seed: int = 0,
    ) -> None:
        self.dut, self.prefix, self.base, self.size = dut, prefix, base, size
        self.read_latency, self.write_latency, self.ready_prob = read_latency, write_latency, ready_prob
        self.garbage, self.seed = garbage, seed
        self.rng = random.Random(seed)
        self.lines: dict[int, int] = {}
        self.stats = DramStats()
        self.cycle = 0
        self._reads: deque[tuple[int, int, int]] = deque()  # (due cycle, line address, beats left)
        self._aws: deque[tuple[int, int]] = deque()  # (address, beats)
        self._ws: deque[tuple[int, int, bool]] = deque()  # (data, strobes, last)
        self._bs: deque[int] = deque()  # due cycles
        self._wbeat = 0

    def sig(self, name: str) -> Any:
        return getattr(self.dut, f"{self.prefix}_{name}")

    def read_line(self, addr: int) -> int:
        if addr in self.lines:
            return self.lines[addr]
        if not self.garbage:
            return 0
        return random.Random(addr * 0x9E3779B1 ^ self.seed).getrandbits(8 * LINE)

    def _check(self, addr: int, what: str) -> None:
        if addr % LINE or not self.base <= addr < self.base + self.size:
            self.stats.errors.append(f"cycle {self.cycle}: {what} at {addr:#x} outside the carve-out or unaligned")

    def start(self) -> None:
        for name in ("arready", "awready", "wready", "rvalid", "bvalid", "rresp", "bresp", "rid", "bid", "rlast"):
            self.sig(name).value = 0
        self.sig("rdata").value = 0
        cocotb.start_soon(self._run())

    def _ready(self) -> int:
        return int(self.ready_prob >= 1.0 or self.rng.random() < self.ready_prob)

    async def _run(self) -> None:
        while True:
            await FallingEdge(self.dut.clock)
            self.cycle += 1
            ar, aw, w = self._ready(), self._ready(), self._ready()
            self.sig("arready").value = ar
            self.sig("awready").value = aw
            self.sig("wready").value = w
            rv = bool(self._reads) and self._reads[0][0] <= self.cycle
            self.sig("rvalid").value = int(rv)
            if rv:
                _, addr, left = self._reads[0]
                self.sig("rdata").value = self.read_line(addr)
                self.sig("rlast").value = int(left == 1)
            bv = bool(self._bs) and self._bs[0] <= self.cycle
            self.sig("bvalid").value = int(bv)
            await ReadOnly()
            if ar and int(self.sig("arvalid").value):
                addr = int(self.sig("araddr").value)
                beats = int(self.sig("arlen").value) + 1
                self._check(addr, "read")
                self.stats.reads += 1
                for k in range(beats):
                    self._reads.append((self.cycle + self.read_latency, addr + k * LINE, beats - k))
            if aw and int(self.sig("awvalid").value):
                addr = int(self.sig("awaddr").value)
                self._check(addr, "write")
                self._aws.append((addr, int(self.sig("awlen").value) + 1))
            if w and int(self.sig("wvalid").value):
                self._ws.append(
                    (int(self.sig("wdata").value), int(self.sig("wstrb").value), bool(self.sig("wlast").value))
                )
            if rv and int(self.sig("rready").value):
                self._reads.popleft()
            if bv and int(self.sig("bready").value):
                self._bs.popleft()
            while self._aws and self._ws:
                addr, beats = self._aws[0]
                data, strb, last = self._ws.popleft()
                line = addr + self._wbeat * LINE
                old = self.read_line(line) if strb != (1 << LINE) - 1 else 0
                mask = sum(0xFF << (8 * i) for i in range(LINE) if strb >> i & 1)
                self.lines[line] = (old & ~mask) | (data & mask)
                self.stats.writes += 1
                self.stats.peak_lines = max(self.stats.peak_lines, len(self.lines))
                self._wbeat += 1
                if self._wbeat == beats:
                    if not last:
                        self.stats.errors.append(f"cycle {self.cycle}: WLAST missing on the last beat at {addr:#x}")
                    self._aws.popleft()
                    self._wbeat = 0
                    self._bs.append(self.cycle + self.write_latency)


def drawn_dram(dut: Any, base: int, size: int, rng: random.Random, seed: int) -> SparseDram:
    """A SparseDram with its latencies and back-pressure drawn from `rng` (the benches that draw them per run)."""
    return SparseDram(
        dut,
        base=base,
        size=size,
        read_latency=rng.choice([2, 20, 60]),
        write_latency=rng.choice([1, 10, 40]),
        ready_prob=rng.choice([1.0, 0.5]),
        seed=seed,
    )


class HostMemory(SparseDram):
    """Host memory behind the DMA port (`h_axi`, write channels only): bytes written, by address."""

    def __init__(self, dut: Any, seed: int = 0, ready_prob: float = 1.0) -> None:
        super().__init__(dut, "h_axi", read_latency=1, write_latency=4, ready_prob=ready_prob, garbage=False, seed=seed)

    def start(self) -> None:
        for name in ("awready", "wready", "bvalid", "bresp", "bid"):
            self.sig(name).value = 0
        cocotb.start_soon(self._run_writes())

    def read_bytes(self, addr: int, n: int) -> bytes:
        out = bytearray()
        for a in range(addr - addr % LINE, addr + n, LINE):
            out += self.read_line(a).to_bytes(LINE, "little")
        off = addr % LINE
        return bytes(out[off : off + n])

    async def _run_writes(self) -> None:
        while True:
            await FallingEdge(self.dut.clock)
            self.cycle += 1
            aw, w = self._ready(), self._ready()
            self.sig("awready").value = aw
            self.sig("wready").value = w
            bv = bool(self._bs) and self._bs[0] <= self.cycle
            self.sig("bvalid").value = int(bv)
            await ReadOnly()
            if aw and int(self.sig("awvalid").value):
                self._aws.append((int(self.sig("awaddr").value), int(self.sig("awlen").value) + 1))
            if w and int(self.sig("wvalid").value):
                self._ws.append(
                    (int(self.sig("wdata").value), int(self.sig("wstrb").value), bool(self.sig("wlast").value))
                )
            if bv and int(self.sig("bready").value):
                self._bs.popleft()
            while self._aws and self._ws:
                addr, beats = self._aws[0]
                data, strb, _ = self._ws.popleft()
                line = addr + self._wbeat * LINE
                old = self.read_line(line)
                mask = sum(0xFF << (8 * i) for i in range(LINE) if strb >> i & 1)
                self.lines[line] = (old & ~mask) | (data & mask)
                self._wbeat += 1
                if self._wbeat == beats:
                    self._aws.popleft()
                    self._wbeat = 0
                    self._bs.append(self.cycle + self.write_latency)
