# SPDX-License-Identifier: Apache-2.0
"""Generate the shared test-vector corpus (docs/vectors.md).

Each case is scripted here; the expected values are computed by running the
script on the reference model (the oracle). The corpus must cover every
command, every status code, every illegal-access class, every event type and
every race class; generation fails if it does not.

    python -m cxltrack.vectors.generate --out vectors/
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any, Literal

from cxltrack import regs
from cxltrack.config import named
from cxltrack.model import Device, ModelDriver
from cxltrack.regs import Event, Op, Status

from .format import HOST_BASE, HOST_FAULT_BASE, RACE_KINDS
from .replay import ModelTarget, cmd_writes

CONFIG = "small"
SEED = 20261121
# Error classes the corpus does not contain, with the reason (docs/vectors.md).
NOT_IN_CORPUS = {
    "err:CMD_OVERRUN": "needs a command to be busy at a register write: timing of the implementation "
    "(QEMU completes commands synchronously); covered by model and RTL tests",
}
_ERR = regs.REGISTERS["ERR_STATUS"]


class Recorder:
    """Runs operations on the model and records them with the model's answers."""

    def __init__(self, name: str, requires: list[str] | None = None, config: str = CONFIG) -> None:
        self.name = name
        self.requires = requires or []
        self.config = config
        self.cfg = named(config)
        self.target = ModelTarget(self.cfg)
        self.dev: Device = self.target.dev
        self.ops: list[dict[str, Any]] = []
        self.covers: set[str] = set()

    # -- coverage is derived from what the model did, not declared by hand
    def _note_errors(self, before: int) -> None:
        after = self.dev.regs["ERR_STATUS"]
        for f in _ERR.fields:
            if f.get(after) and not f.get(before):
                self.covers.add(f"err:{f.name}")

    def _note_events(self) -> None:
        for e in self.dev.events.queue:
            self.covers.add(f"event:{e.type.name}")

    def _do(self, op: dict[str, Any], fn: Any) -> Any:
        before = self.dev.regs["ERR_STATUS"]
        out = fn()
        self._note_errors(before)
        self._note_events()
        self.ops.append(op)
        return out

    def reg_read(self, offset: int, size: int = 4) -> int:
        op: dict[str, Any] = {"op": "reg_read", "offset": offset, "size": size}
        value = self._do(op, lambda: self.dev.reg_read(offset, size))
        op["expect"] = value
        return int(value)

    def reg_write(self, offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        op: dict[str, Any] = {"op": "reg_write", "offset": offset, "value": value, "size": size}
        if strobe is not None:
            op["strobe"] = strobe
        self._do(op, lambda: self.target_write(offset, value, size, strobe))

    def target_write(self, offset: int, value: int, size: int, strobe: int | None) -> None:
        import asyncio

        asyncio.run(self.target.reg_write(offset, value, size, strobe))

    def mem_write(self, addr: int, data: bytes) -> None:
        op = {"op": "mem_write", "addr": addr, "data": data.hex()}
        resp = self._do(op, lambda: self.dev.mem_write(addr, data))
        op["resp"] = resp.value

    def mem_read(self, addr: int, size: int = 8) -> int:
        op: dict[str, Any] = {"op": "mem_read", "addr": addr, "size": size}
        resp, data = self._do(op, lambda: self.dev.mem_read(addr, size))
        op["resp"] = resp.value
        op["expect"] = int.from_bytes(data, "little")
        return int(op["expect"])

    def settle(self) -> None:
        self._do({"op": "settle"}, self.dev.settle)

    def tick(self, n: int) -> None:
        self._do({"op": "tick", "n": n}, lambda: self.dev.tick(n))

    def _run_cmd(self, spec: dict[str, Any]) -> dict[str, Any]:
        for off, val in cmd_writes(spec):
            self.dev.reg_write(off, val)
        res = ModelDriver(self.dev).finish()
        return {"code": res.code.name, "result0": res.result0, "result1": res.result1}

    def cmd(
        self,
        name: str | int,
        *args: int,
        clear: bool = False,
        decay: bool = False,
        dma: bool = False,
        list_: bool = False,
        rsvd: int = 0,
        window: int = 0,
        label: str | None = None,
        exact: bool = True,
    ) -> dict[str, Any]:
        """Run a command; window = number of RESULT bytes to check on success.
        exact=False records only the status (results that depend on how an
        earlier race was interleaved)."""
        spec: dict[str, Any] = {"name": name}
        if args:
            spec["args"] = list(args)
        if clear:
            spec["clear"] = True
        if decay:
            spec["decay"] = True
        if dma:
            spec["dma"] = True
        if list_:
            spec["list"] = True
        if rsvd:
            spec["rsvd"] = rsvd
        op: dict[str, Any] = {"op": "cmd", **spec}
        exp: dict[str, Any] = self._do(op, lambda: self._run_cmd(spec))
        if exp["code"] == "OK" and window:
            exp["window"] = bytes(self.dev.result[:window]).hex()
        op["expect"] = exp if exact else {"code": exp["code"]}
        if label:
            op["as"] = label
        if isinstance(name, str):
            self.covers.add(f"cmd:{name}")
        self.covers.add(f"status:{exp['code']}")
        return exp

    def events(self, ordered: bool = True) -> list[dict[str, Any]]:
        evs = [{"type": e.type.name, "index": e.index, "arg": e.arg} for e in self.dev.events.queue]
        op = {"op": "events", "expect": evs, "ordered": ordered}
        self._do(op, lambda: self.dev.events.queue.clear())
        return evs

    def race(
        self,
        kind: str,
        spec: dict[str, Any],
        writes: list[tuple[int, bytes]],
        label: str,
        outcomes: list[dict[str, Any]],
    ) -> None:
        assert kind in RACE_KINDS
        op = {
            "op": "race",
            "kind": kind,
            "cmd": spec,
            "as": label,
            "writes": [{"addr": a, "data": d.hex()} for a, d in writes],
            "expect_one_of": outcomes,
        }
        # The recorded run uses schedule 0; replays try others.
        import asyncio

        self._do(op, lambda: asyncio.run(self.target.race(cmd_writes(spec), writes, 0)))
        self.covers.add(f"race:{kind}")
        self.covers.add(f"cmd:{spec['name']}")

    def host_fill(self, addr: int, length: int, byte: int) -> None:
        op = {"op": "host_fill", "addr": addr, "len": length, "byte": byte}
        self._do(op, lambda: self.dev.host.fill(addr, length, byte))

    def host_fault(self, addr: int, length: int) -> None:
        op = {"op": "host_fault", "addr": addr, "len": length}
        self._do(op, lambda: self.dev.host.fault(addr, length))

    def host_expect(self, addr: int, length: int) -> bytes:
        """Check host memory [addr, addr + length) as the model has it now."""
        data = self.dev.host.read(addr, length)
        self.ops.append({"op": "host_expect", "addr": addr, "hex": data.hex()})
        return data

    def check_union(self, labels: list[str], start: int, count: int, pages: list[int]) -> None:
        self.ops.append(
            {
                "op": "check",
                "kind": "harvest_union",
                "of": labels,
                "start": start,
                "count": count,
                "pages": sorted(pages),
            }
        )

    def lines(self) -> list[str]:
        head: dict[str, Any] = {"case": self.name, "config": self.config, "covers": sorted(self.covers)}
        if self.requires:
            head["requires"] = self.requires
        return [json.dumps(head)] + [json.dumps(op) for op in self.ops]


P = 4096  # page size of the small configuration


def _q(v: int) -> bytes:
    return v.to_bytes(8, "little")


def case_reset_values() -> Recorder:
    r = Recorder("reset_values")
    for reg in regs.REGISTERS.values():
        # CAP_DMA differs on an implementation without DMA: the dma cases read it.
        if reg.name not in ("EVQ_POP", "CAP_DMA"):
            r.reg_read(reg.offset)
    return r


HB = HOST_BASE
GUARD = 64  # bytes of pattern on each side of a DMA buffer: a stray write shows there
PAT = 0xA5


def _dma_buffer(r: Recorder, addr: int, length: int) -> None:
    """Pre-fill [addr - GUARD, addr + length + GUARD) with a pattern the harvest cannot all write."""
    r.host_fill(addr - GUARD, length + 2 * GUARD, PAT)


def _dma_check(r: Recorder, addr: int, length: int) -> None:
    """The buffer and the guards around it (which must still hold the pattern)."""
    assert r.dev.host.read(addr - GUARD, GUARD) == bytes([PAT]) * GUARD, "model wrote before the buffer"
    assert r.dev.host.read(addr + length, GUARD) == bytes([PAT]) * GUARD, "model wrote after the buffer"
    r.host_expect(addr - GUARD, length + 2 * GUARD)


def _dirty_some(r: Recorder, rng: random.Random, n: int) -> list[int]:
    pages = rng.sample(range(r.cfg.pages), n)
    for p in pages:
        r.mem_write(p * P + 8 * rng.randrange(512), _q(rng.getrandbits(64)))
    return pages


def case_dma_harvest(rng: random.Random) -> Recorder:
    """DMA harvests of dirty, accessed and hotness (docs/spec.md 5.3): the bytes land exactly at
    ARG2, RESULT is untouched, whole-device ranges in one command, CLEAR and DECAY as without DMA."""
    r = Recorder("dma_harvest", requires=["dma"])
    pages = r.cfg.pages
    # (CAP_DMA is read by the chunk_copy case: its COPY bit differs on a device with DMA
    # harvests but without CHUNK_COPY.)
    r.reg_read(regs.VERSION)
    _dirty_some(r, rng, 30)
    for p in rng.sample(range(pages), 20):
        r.mem_read(p * P + 8 * rng.randrange(512))
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)  # RESULT holds this; the DMA harvests leave it
    buf = HB
    _dma_buffer(r, buf, pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, buf, dma=True)  # whole device, peek
    _dma_check(r, buf, pages // 8)
    buf2 = HB + 0x1000
    _dma_buffer(r, buf2, 16)
    r.cmd("HARVEST_DIRTY", 64, 128, buf2, clear=True, dma=True)  # a middle range, CLEAR
    _dma_check(r, buf2, 16)
    r.cmd("HARVEST_DIRTY", 0, pages, buf, clear=True, dma=True)  # the rest
    _dma_check(r, buf, pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, buf, dma=True)  # all clear now: zeros written
    _dma_check(r, buf, pages // 8)
    r.reg_read(regs.RESULT)  # untouched by every DMA harvest
    r.reg_read(regs.RESULT + 4)
    buf3 = HB + 0x2000
    _dma_buffer(r, buf3, pages // 8)
    r.cmd("HARVEST_ACCESSED", 0, pages, buf3, clear=True, dma=True)
    _dma_check(r, buf3, pages // 8)
    r.cmd("HARVEST_ACCESSED", 0, 64, window=8)  # cleared
    for _ in range(20):  # saturate a 4-bit counter
        r.mem_read(5 * P)
    r.mem_write(6 * P + 16, _q(1))
    hb = HB + 0x3000
    _dma_buffer(r, hb, pages)
    r.cmd("HARVEST_HOTNESS", 0, pages, hb, dma=True)  # whole device: more than fits RESULT's 4096 rule
    _dma_check(r, hb, pages)
    r.cmd("HARVEST_HOTNESS", 0, pages, hb, decay=True, dma=True)
    _dma_check(r, hb, pages)
    r.cmd("HARVEST_HOTNESS", 0, 128, hb + 0x1000, clear=True, dma=True)  # no guard: fill first
    r.host_expect(hb + 0x1000, 128)
    r.cmd("HARVEST_HOTNESS", 0, 64, window=64)  # cleared counters through RESULT
    return r


def case_dma_bigger_than_result() -> Recorder:
    """A DMA harvest may exceed RESULT's limits (32768 bitmap pages, 4096 hotness pages) in one
    command: the default configuration (65536 pages), whole device."""
    r = Recorder("dma_whole_default", requires=["dma"], config="default")
    pages = r.cfg.pages
    for p in (0, 1, 4095, 4096, 32767, 32768, 40000, pages - 1):
        r.mem_write(p * r.cfg.page_size, _q(p | 1))
    r.cmd("HARVEST_DIRTY", 0, pages)  # RANGE without DMA
    r.cmd("HARVEST_HOTNESS", 0, 4160)  # RANGE without DMA
    _dma_buffer(r, HB, pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, HB, clear=True, dma=True)
    _dma_check(r, HB, pages // 8)
    hb = HB + 0x10000
    _dma_buffer(r, hb, pages)
    r.cmd("HARVEST_HOTNESS", 0, pages, hb, clear=True, dma=True)
    _dma_check(r, hb, pages)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)
    return r


def case_dma_errors(rng: random.Random) -> Recorder:
    """Every error a DMA harvest adds (docs/spec.md 5.3), in the check order, and DMA_ERROR:
    with CLEAR the range comes back marked, without it nothing changes; nothing outside the
    buffer is written."""
    r = Recorder("dma_errors", requires=["dma"])
    pages = r.cfg.pages
    written = _dirty_some(r, rng, 12)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)
    # FLAGS: DMA on commands other than the three harvests; with the usual flag rules first
    r.cmd("NOP", dma=True)
    r.cmd("BAT_GET", 0, 0, HB, dma=True)
    r.cmd("CHUNK_LIST", 0, 0, HB, dma=True)
    r.cmd("HARVEST_DIRTY", 0, 64, HB, decay=True, dma=True)
    r.cmd("HARVEST_HOTNESS", 0, 64, HB, clear=True, decay=True, dma=True)
    r.cmd(0x7F, 0, 64, HB, dma=True)  # UNKNOWN_OP before FLAGS
    # ALIGN: ARG2 not a multiple of 64 bytes (start/count as without DMA); before RANGE
    r.cmd("HARVEST_DIRTY", 0, 64, HB + 8, dma=True)
    r.cmd("HARVEST_ACCESSED", 0, 64, HB + 32, dma=True)
    r.cmd("HARVEST_HOTNESS", 0, 64, HB + 1, dma=True)
    r.cmd("HARVEST_DIRTY", 1, 64, HB, dma=True)
    r.cmd("HARVEST_DIRTY", 0, 0, HB + 4, dma=True)  # ALIGN before RANGE
    # RANGE: count 0, beyond the device, and the bytes written wrap 2^64
    r.cmd("HARVEST_DIRTY", 0, 0, HB, dma=True)
    r.cmd("HARVEST_DIRTY", pages - 64, 128, HB, dma=True)
    r.cmd("HARVEST_HOTNESS", 1 << 40, 64, HB, dma=True)
    r.cmd("HARVEST_HOTNESS", 0, pages, (1 << 64) - 192, dma=True)  # 256 bytes from 2^64 - 192
    # The last 32 bytes below 2^64 fit (no RANGE); nothing is there, so the write fails.
    r.host_fault((1 << 64) - 1024, 1024)
    r.cmd("HARVEST_DIRTY", 0, pages, (1 << 64) - 32 - 32, dma=True)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)  # none of the errors cleared anything
    # DMA_ERROR without CLEAR: nothing changes
    bad = HOST_FAULT_BASE
    r.host_fault(bad, 0x1000)
    r.cmd("HARVEST_DIRTY", 0, pages, bad, dma=True)
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)
    # DMA_ERROR with CLEAR: every page of the range is marked again (never lose a bit)
    r.cmd("HARVEST_DIRTY", 64, 128, bad + 64, clear=True, dma=True)
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)
    r.cmd("HARVEST_ACCESSED", 0, 128, bad, clear=True, dma=True)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)
    # (A buffer that straddles memory and a fault is not in the corpus: the fault window lies
    # where a runner has nothing mapped, and the memory next to it is not the runner's to fill.
    # The model's property tests and the QEMU device tests cover it.)
    # hotness: CLEAR and DECAY leave max(c, 1) as the steps left them; plain leaves everything
    for _ in range(6):
        r.mem_read(3 * P)
    r.cmd("HARVEST_HOTNESS", 0, 64, bad, dma=True)
    r.cmd("HARVEST_HOTNESS", 0, 64, window=64)
    r.cmd("HARVEST_HOTNESS", 0, 64, bad, decay=True, dma=True)
    r.cmd("HARVEST_HOTNESS", 0, 64, window=64)
    r.cmd("HARVEST_HOTNESS", 0, 128, bad, clear=True, dma=True)
    r.cmd("HARVEST_HOTNESS", 0, 128, window=128)
    # after the error the same harvest to good memory reports the re-marked range
    _dma_buffer(r, HB, pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, HB, clear=True, dma=True)
    _dma_check(r, HB, pages // 8)
    assert set(written) <= {p for p in range(pages) if r.dev.host.read(HB + p // 8, 1)[0] >> (p % 8) & 1}
    r.reg_read(regs.ERR_STATUS)  # a DMA error is a status, not an access error
    r.reg_read(regs.INT_STATUS)
    return r


def case_dma_stray() -> Recorder:
    """Adjacent buffers: a harvest into one must leave the other's bytes as they were (a runner
    whose device writes too much, or at the wrong offset, fails here)."""
    r = Recorder("dma_stray_writes", requires=["dma"])
    for p in range(0, r.cfg.pages, 3):
        r.mem_write(p * P, _q(p))
    r.host_fill(HB, 0x400, 0x5A)
    for i, (start, count) in enumerate(((0, 64), (64, 64), (192, 64), (0, 256))):
        r.cmd("HARVEST_DIRTY", start, count, HB + 0x40 * (1 + 2 * i), dma=True)
        r.host_expect(HB, 0x400)
    r.cmd("HARVEST_ACCESSED", 128, 64, HB + 0x380, dma=True)
    r.host_expect(HB, 0x400)
    return r


REC = regs.DMA_LIST_RECORD_BYTES


def _records(r: Recorder, addr: int, n: int) -> list[tuple[int, int]]:
    """The (first page, bits) records the model wrote at addr."""
    raw = r.dev.host.read(addr, n * REC)
    le: Literal["little"] = "little"
    return [
        (int.from_bytes(raw[REC * i : REC * i + 8], le), int.from_bytes(raw[REC * i + 8 : REC * i + 16], le))
        for i in range(n)
    ]


def _unwrite(r: Recorder) -> Recorder:
    """Write zeros back where the case wrote: runners keep device memory from case to case (a device
    reset does not touch it, spec section 11), and a later case's mem_read expects what it left."""
    done = [(o["addr"], o["data"]) for o in r.ops if o["op"] == "mem_write"]
    done += [(w["addr"], w["data"]) for o in r.ops if o["op"] == "race" for w in o["writes"]]
    for addr, data in done:
        r.mem_write(addr, bytes(len(data) // 2))
    return r


def _zero_first(r: Recorder, pages: list[int]) -> None:
    """Zero the lines a case will read before it relies on them (runners keep device memory from
    earlier cases), then take the dirty and accessed bits that costs, so the case starts clean."""
    for p in pages:
        r.mem_write(p * P, bytes(8))
    r.cmd("HARVEST_DIRTY", 0, r.cfg.pages, clear=True)
    r.cmd("HARVEST_ACCESSED", 0, r.cfg.pages, clear=True)


def case_list_harvest(rng: random.Random) -> Recorder:
    """List harvests (docs/spec.md 5.4): one 16-byte record per non-zero word, in page order, packed from ARG2;
    exactly records x 16 bytes written (the rest of the worst-case buffer keeps its pattern); RESULT1 = records;
    the same bits as the bitmap harvest; CLEAR; an empty list writes nothing."""
    r = Recorder("list_harvest", requires=["dma", "dma_list"])
    pages = r.cfg.pages
    worst = pages // 64 * REC
    # No CAP_DMA read: its COPY bit differs between implementations with list harvests (a core built
    # without the copy engine, RTL --dma-copy 0); the chunk_copy case reads it where both are present.
    r.reg_read(regs.VERSION)
    reads = rng.sample(range(pages), 7)
    _zero_first(r, reads)
    written = _dirty_some(r, rng, 9)
    for p in (0, 63, 64, pages - 1):  # first and last page of the device, both ends of a word
        r.mem_write(p * P, _q(p + 1))
    for p in reads:
        r.mem_read(p * P)
    bm = HB
    _dma_buffer(r, bm, pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, bm, dma=True)  # the bitmap, to compare with
    _dma_check(r, bm, pages // 8)
    buf = HB + 0x1000
    _dma_buffer(r, buf, worst)
    res = r.cmd("HARVEST_DIRTY", 0, pages, buf, dma=True, list_=True)  # whole device, peek
    _dma_check(r, buf, worst)
    recs = _records(r, buf, res["result1"])
    bits = int.from_bytes(r.dev.host.read(bm, pages // 8), "little")
    words = [(w * 64, bits >> (64 * w) & (1 << 64) - 1) for w in range(pages // 64)]
    assert recs == [w for w in words if w[1]]
    assert {p for p in written} <= {f + i for f, b in recs for i in range(64) if b >> i & 1}
    # a range that starts and ends inside a 512-page row, with CLEAR
    buf2 = HB + 0x2000
    _dma_buffer(r, buf2, 2 * REC)
    r.cmd("HARVEST_DIRTY", 64, 128, buf2, clear=True, dma=True, list_=True)
    _dma_check(r, buf2, 2 * REC)
    r.cmd("HARVEST_DIRTY", 0, pages, buf, clear=True, dma=True, list_=True)  # the words left at both ends
    _dma_check(r, buf, worst)
    r.cmd("HARVEST_DIRTY", 0, pages, buf, dma=True, list_=True)  # nothing left: no record, nothing written
    _dma_check(r, buf, worst)
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)
    buf3 = HB + 0x3000
    _dma_buffer(r, buf3, worst)
    r.cmd("HARVEST_ACCESSED", 0, pages, buf3, clear=True, dma=True, list_=True)
    _dma_check(r, buf3, worst)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)  # cleared
    r.reg_read(regs.RESULT)  # untouched by the DMA harvests
    return r


def case_list_dense() -> Recorder:
    """Every word non-zero (records fill whole 64-byte beats and a partial last one) on the default
    configuration: 1024 words in one command, then a range of 5 words (a partial beat)."""
    r = Recorder("list_dense_default", requires=["dma", "dma_list"], config="default")
    pages = r.cfg.pages
    for w in range(pages // 64):
        r.mem_write((w * 64 + w % 64) * r.cfg.page_size, _q(w))
    worst = pages // 64 * REC
    _dma_buffer(r, HB, worst)
    r.cmd("HARVEST_DIRTY", 64 * 7, 64 * 5, HB, dma=True, list_=True)
    _dma_check(r, HB, worst)
    r.cmd("HARVEST_DIRTY", 0, pages, HB, clear=True, dma=True, list_=True)
    _dma_check(r, HB, worst)
    r.cmd("HARVEST_DIRTY", 0, pages, HB, clear=True, dma=True, list_=True)  # empty now
    r.host_expect(HB, 64)
    # RANGE: the worst case (pages/64 records = pages/4 bytes) must fit below 2^64, whatever the tables
    # hold (nothing now), though the bitmap (pages/8 bytes) would; nothing is mapped there, so the
    # bitmap harvest is legal but fails
    top = (1 << 64) - pages // 8
    r.host_fault(top, pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, top, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 0, pages, top, dma=True)
    return r


def case_list_errors(rng: random.Random) -> Recorder:
    """The flags, alignment and range rules of LIST (docs/spec.md 5, 5.4) in the check order, and DMA_ERROR:
    with CLEAR the whole range comes back marked, without it nothing changes; an empty list cannot fail."""
    r = Recorder("list_errors", requires=["dma", "dma_list"])
    pages = r.cfg.pages
    _zero_first(r, [0, 1, 2])
    written = _dirty_some(r, rng, 10)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)
    # FLAGS: LIST without DMA, on hotness and other commands, with the other flag rules
    r.cmd("HARVEST_DIRTY", 0, 64, HB, list_=True)
    r.cmd("HARVEST_ACCESSED", 0, 64, HB, clear=True, list_=True)
    r.cmd("HARVEST_HOTNESS", 0, 64, HB, dma=True, list_=True)
    r.cmd("NOP", dma=True, list_=True)
    r.cmd("NOP", list_=True)
    r.cmd("CHUNK_LIST", 0, 0, HB, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 0, 64, HB, decay=True, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 0, 64, HB, dma=True, list_=True, rsvd=1)
    r.cmd(0x7F, 0, 64, HB, dma=True, list_=True)  # UNKNOWN_OP before FLAGS
    r.cmd("HARVEST_DIRTY", 1, 64, HB + 8, list_=True)  # FLAGS before ALIGN
    # ALIGN, then RANGE
    r.cmd("HARVEST_DIRTY", 0, 64, HB + 16, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 32, 64, HB, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 0, 0, HB, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", pages - 64, 128, HB, dma=True, list_=True)
    # (RANGE for a worst case beyond 2^64: list_dense_default, where it differs from the bitmap's)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)  # none of the errors cleared anything
    bad = HOST_FAULT_BASE
    r.host_fault(bad, 0x1000)
    # DMA_ERROR without CLEAR: nothing changes
    r.cmd("HARVEST_DIRTY", 0, pages, bad, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)
    # DMA_ERROR with CLEAR: every page of the range (not only the words found) is marked again
    r.cmd("HARVEST_DIRTY", 64, 128, bad + 64, clear=True, dma=True, list_=True)
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)
    # an empty list writes nothing, so a faulted buffer cannot fail it
    for p in (0, 1):
        r.mem_read(p * P)
    r.cmd("HARVEST_ACCESSED", 0, pages, HB + 0x1000, clear=True, dma=True, list_=True)
    r.cmd("HARVEST_ACCESSED", 0, pages, bad, clear=True, dma=True, list_=True)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)
    r.mem_read(2 * P)
    r.cmd("HARVEST_ACCESSED", 0, 128, bad, clear=True, dma=True, list_=True)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)
    # after the errors the same list harvest to good memory reports the re-marked range
    worst = pages // 64 * REC
    _dma_buffer(r, HB, worst)
    res = r.cmd("HARVEST_DIRTY", 0, pages, HB, clear=True, dma=True, list_=True)
    _dma_check(r, HB, worst)
    got = {f + i for f, b in _records(r, HB, res["result1"]) for i in range(64) if b >> i & 1}
    assert set(written) <= got and set(range(64, 192)) <= got
    r.reg_read(regs.ERR_STATUS)  # a DMA error is a status, not an access error
    return r


def case_list_race(rng: random.Random, n: int) -> Recorder:
    """Writes race a list harvest with CLEAR: the union of its records and the next harvest is every
    written page (property (a), docs/spec.md 5.4)."""
    r = Recorder(f"race_list_{n}", requires=["dma", "dma_list"])
    pages = r.cfg.pages
    pre = rng.sample(range(pages), 8)
    for p in pre:
        r.mem_write(p * P, _q(p))
    racing = rng.sample(range(pages), 10)
    writes = [(p * P + 8 * rng.randrange(512), _q(rng.getrandbits(64))) for p in racing]
    r.host_fill(HB, pages // 64 * REC, PAT)
    spec = {"name": "HARVEST_DIRTY", "args": [0, pages, HB], "clear": True, "dma": True, "list": True}
    r.race("harvest", spec, writes, "l1", [{"code": "OK"}])
    r.cmd("HARVEST_DIRTY", 0, pages, clear=True, label="l2", exact=False)
    r.check_union(["l1", "l2"], 0, pages, sorted(set(pre) | set(racing)))
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)  # nothing left
    return r


def case_chunk_copy(rng: random.Random) -> Recorder:
    """CHUNK_COPY (docs/spec.md 7.1): an owned chunk's bytes land exactly at ARG2; the copy has no
    tracking effect (dirty bits stay, accessed and hotness are not raised); every error in the
    check order; DMA_ERROR changes nothing on the device."""
    r = Recorder("chunk_copy", requires=["dma", "dma_copy"])
    cfg = r.cfg
    pages, size, cpages = cfg.pages, cfg.chunk_size, cfg.pages_per_chunk
    r.reg_read(regs.CAP_DMA)
    r.reg_read(regs.VERSION)
    r.cmd("CHUNK_ASSIGN", 3, 7)
    r.cmd("CHUNK_ASSIGN", 5, 9)
    r.cmd("CHUNK_ASSIGN", 6, 7)
    for _ in range(40):
        page = 3 * cpages + rng.randrange(cpages)
        r.mem_write(page * P + 8 * rng.randrange(512), _q(rng.getrandbits(64)))
    r.mem_write(6 * cpages * P, _q(0x0123456789ABCDEF))  # chunk 6: one word
    r.cmd("HARVEST_ACCESSED", 0, pages, clear=True, window=pages // 8)
    r.cmd("HARVEST_HOTNESS", 0, pages, clear=True, window=pages)
    # the whole chunk, at the buffer's exact place
    _dma_buffer(r, HB, size)
    r.cmd("CHUNK_COPY", 3, 7, HB)
    _dma_check(r, HB, size)
    assert r.dev.host.read(HB, size) == r.dev.mem.read(3 * size, size), "model copied wrong bytes"
    # no tracking effect: the dirty bits are all still there, nothing became accessed or hot
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)
    r.cmd("HARVEST_HOTNESS", 0, pages, window=pages)
    # another owner's chunk next to the first buffer; a chunk of zeros; ARG2 only 64-aligned
    b2 = HB + size + 2 * GUARD + 64
    _dma_buffer(r, b2, size)
    r.cmd("CHUNK_COPY", 6, 7, b2)
    _dma_check(r, b2, size)
    r.host_expect(HB - GUARD, size + 2 * GUARD)  # the first copy is untouched
    r.cmd("CHUNK_COPY", 5, 9, b2)
    _dma_check(r, b2, size)
    # FLAGS: the usual flag rules (CHUNK_COPY takes no flag: it always uses DMA)
    r.cmd("CHUNK_COPY", 3, 7, HB, clear=True)
    r.cmd("CHUNK_COPY", 3, 7, HB, decay=True)
    r.cmd("CHUNK_COPY", 3, 7, HB, dma=True)
    r.cmd("CHUNK_COPY", 3, 7, HB, rsvd=1)
    r.cmd("CHUNK_COPY", 3, 7, HB + 8, clear=True)  # FLAGS before ALIGN
    # ALIGN: ARG2 not a multiple of 64; before RANGE
    r.cmd("CHUNK_COPY", 3, 7, HB + 8)
    r.cmd("CHUNK_COPY", 3, 7, HB + 32)
    r.cmd("CHUNK_COPY", cfg.chunks, 7, HB + 1)
    # RANGE: chunk, owner, and the bytes written beyond 2^64; before STATE and PERM
    r.cmd("CHUNK_COPY", cfg.chunks, 7, HB)
    r.cmd("CHUNK_COPY", 3, 0, HB)
    r.cmd("CHUNK_COPY", 3, 0x10000, HB)
    r.cmd("CHUNK_COPY", 0, 0, HB)  # FREE and owner 0: RANGE first
    r.cmd("CHUNK_COPY", 3, 7, (1 << 64) - size + 64)
    # STATE: not OWNED (FREE); before PERM
    r.cmd("CHUNK_COPY", 0, 7, HB)
    r.cmd("CHUNK_COPY", 1, 9, HB)
    # PERM: another owner's chunk
    r.cmd("CHUNK_COPY", 3, 9, HB)
    r.cmd("CHUNK_COPY", 5, 7, HB)
    # DMA_ERROR: nothing changes on the device (the chunk stays OWNED, bits as they were)
    bad = HOST_FAULT_BASE
    r.host_fault(bad, size)
    r.cmd("CHUNK_COPY", 3, 7, bad)
    r.host_fault((1 << 64) - size, size)
    r.cmd("CHUNK_COPY", 3, 7, (1 << 64) - size)  # the last chunk below 2^64 fits: no RANGE
    r.cmd("CHUNK_QUERY", 3)
    r.cmd("HARVEST_DIRTY", 0, pages, clear=True, window=pages // 8)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)
    # the same copy to good memory still gives the bytes
    _dma_buffer(r, HB, size)
    r.cmd("CHUNK_COPY", 3, 7, HB)
    _dma_check(r, HB, size)
    # after the owner's release and the scrub the chunk is not copyable
    r.cmd("CHUNK_RELEASE", 3, 7)
    r.settle()
    r.cmd("CHUNK_COPY", 3, 7, HB)
    r.reg_read(regs.ERR_STATUS)
    return r


def case_illegal_access() -> Recorder:
    """Illegal accesses every control port can express (docs/spec.md 4.2)."""
    r = Recorder("illegal_access")
    r.reg_write(regs.INT_ENABLE, 0x7)
    r.reg_read(0x800)  # reserved register
    r.reg_read(regs.ERR_STATUS)
    r.reg_read(regs.ERR_ADDR)
    r.reg_write(regs.ID, 1)  # read-only
    r.reg_read(regs.EVQ_POP)  # write-only
    r.reg_write(regs.CTRL, 0, size=1)  # byte write to a register
    r.reg_write(regs.CTRL, 0, size=4, strobe=0x3)  # partial strobe
    r.reg_write(regs.RESULT, 1)  # RESULT is read-only
    r.reg_write(0x3000, 5)  # reserved window space
    r.reg_read(regs.SLOT + 7 * regs.SLOT_STRIDE)  # slot >= NUM_SLOTS (4)
    r.reg_write(regs.SLOT, 0x55, size=1)  # slot 0 is FREE
    r.reg_read(regs.SLOT + 8)  # FREE slot reads 0, no error
    r.reg_read(regs.ERR_STATUS)
    r.reg_read(regs.ERR_ADDR)
    r.reg_read(regs.ERR_COUNT)
    r.reg_read(regs.INT_STATUS)
    r.events()
    r.reg_write(regs.ERR_STATUS, 0x1)  # clear BAD_REG only
    r.reg_read(regs.ERR_STATUS)
    r.reg_write(regs.ERR_STATUS, 0xFFFFFFFF)
    r.reg_read(regs.ERR_STATUS)
    r.reg_write(regs.INT_STATUS, 0x7)
    r.reg_read(regs.INT_STATUS)
    r.reg_write(0xFFC, 1)  # ERR_ADDR latches again after clearing
    r.reg_read(regs.ERR_ADDR)
    r.events()
    r.reg_write(regs.CTRL, 0xFFFFFFFF)  # reserved bits ignored
    r.reg_read(regs.CTRL)
    return r


def case_illegal_reads_sized() -> Recorder:
    """Sub-word, 64-bit and unaligned register reads: BAD_WIDTH where the port
    carries the size of a read (requirement sized_reads)."""
    r = Recorder("illegal_reads_sized", requires=["sized_reads"])
    r.reg_read(regs.CTRL + 1, size=1)
    r.reg_read(regs.ERR_STATUS)
    r.reg_read(regs.ERR_ADDR)
    r.reg_write(regs.ERR_STATUS, 0xFFFFFFFF)
    r.reg_read(regs.VERSION, size=8)
    r.reg_read(regs.ERR_ADDR)
    r.reg_write(regs.ERR_STATUS, 0xFFFFFFFF)
    r.reg_read(regs.RESULT + 2, size=4)  # unaligned
    r.reg_read(regs.CTRL, size=2)
    r.reg_read(regs.ERR_STATUS)
    r.reg_read(regs.ERR_COUNT)
    r.events()
    return r


def case_illegal_writes_strobed() -> Recorder:
    """Sub-word and partial-strobe writes (docs/spec.md 4.2): the decode and the direction are
    checked before the width, and ERR_ADDR records the first enabled byte. Contiguous strobe
    patterns only, which every control port carries (docs/vectors.md)."""
    r = Recorder("illegal_writes_strobed")

    def expect_error(offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        r.reg_write(regs.ERR_STATUS, 0xFFFFFFFF)  # ERR_ADDR latches again, the event is queued again
        r.reg_write(offset, value, size, strobe)
        r.reg_read(regs.ERR_STATUS)
        r.reg_read(regs.ERR_ADDR)

    expect_error(regs.ERR_ADDR + 2, 0x1234, size=2)  # half-word write to a read-only register: BAD_REG
    expect_error(regs.ID, 0xFF, strobe=0b0010)  # one strobed byte of a read-only register: BAD_REG at 0x1
    expect_error(regs.STAT_READS_LO, 0, strobe=0b1100)  # read-only, partial strobe: BAD_REG
    expect_error(0x3D, 0x5A, size=1)  # byte write inside a reserved word: BAD_REG
    expect_error(0x800, 0xA5A5, strobe=0b0011)  # partial strobe to a reserved word: BAD_REG
    expect_error(regs.RESULT + 6, 0x11, size=2)  # half-word write to RESULT: BAD_REG
    expect_error(regs.INT_ENABLE, 0x7, strobe=0b1100)  # writable, partial strobe: BAD_WIDTH at 0x36
    expect_error(regs.CTRL + 1, 0x1, size=1)  # byte write inside a writable register: BAD_WIDTH
    expect_error(regs.CMD_ARG0_LO + 2, 0xBEEF, size=2)  # half-word: BAD_WIDTH, nothing stored
    r.reg_read(regs.INT_ENABLE)
    r.reg_read(regs.CTRL)
    r.reg_read(regs.CMD_ARG0_LO)
    r.reg_read(regs.ERR_COUNT)
    r.events()
    return r


def case_illegal_writes_sized() -> Recorder:
    """A 64-bit register write is BAD_WIDTH where it reaches the device as one access
    (requirement sized_writes)."""
    r = Recorder("illegal_writes_sized", requires=["sized_writes"])
    r.reg_write(regs.CMD_ARG0_LO, 0x1122334455667788, size=8)
    r.reg_read(regs.ERR_STATUS)
    r.reg_read(regs.ERR_ADDR)
    r.reg_read(regs.CMD_ARG0_LO)
    r.reg_read(regs.CMD_ARG0_HI)
    r.reg_write(regs.ERR_STATUS, 0xFFFFFFFF)
    r.reg_write(regs.CTRL, 0x99, size=8)  # CTRL and SLOT_TIMEOUT: nothing stored
    r.reg_read(regs.ERR_ADDR)
    r.reg_read(regs.CTRL)
    r.reg_read(regs.SLOT_TIMEOUT)
    r.reg_read(regs.ERR_COUNT)
    r.events()
    return r


def case_cmd_errors() -> Recorder:
    r = Recorder("cmd_errors")
    pages = r.cfg.pages
    r.cmd("NOP")
    for bad in (0x04, 0x7F, 0xFF):
        r.cmd(bad)
    r.cmd("BAT_SET", 1, 1, 1, clear=True)
    r.cmd("HARVEST_DIRTY", 0, 64, decay=True)
    r.cmd("HARVEST_HOTNESS", 0, 64, clear=True, decay=True)
    r.cmd("NOP", rsvd=1)
    r.cmd("HARVEST_DIRTY", 1, 64)
    r.cmd("HARVEST_ACCESSED", 0, 65)
    r.cmd("HARVEST_HOTNESS", 32, 64)
    r.cmd("HARVEST_DIRTY", 0, 0)
    r.cmd("HARVEST_DIRTY", pages - 64, 128)
    r.cmd("HARVEST_HOTNESS", 0, 64 * 65)
    r.cmd("HARVEST_DIRTY", 1 << 40, 64)
    r.cmd("BAT_SET", pages, 0, 0)
    r.cmd("BAT_SET", 0, 1 << r.cfg.bat_block_bits, 0)
    r.cmd("BAT_SET", 0, 0, 1 << r.cfg.bat_disk_bits)
    r.cmd("BAT_GET", pages)
    r.cmd("BAT_CLEAR", 1 << 63)
    r.cmd("BAT_DISCARD", pages + 5)
    r.cmd("SLOT_MERGE", r.cfg.slots, 0)
    r.cmd("SLOT_MERGE", 0, pages)
    r.cmd("SLOT_MERGE", 0, 0)  # FREE: STATE
    r.cmd("SLOT_RELEASE", 0)  # FREE: STATE
    r.cmd("SLOT_RELEASE", 99)
    r.cmd("SLOT_QUERY", 16)
    r.cmd("CHUNK_ASSIGN", r.cfg.chunks, 1)
    r.cmd("CHUNK_ASSIGN", 0, 0)
    r.cmd("CHUNK_ASSIGN", 0, 0x10000)
    r.cmd("CHUNK_RELEASE", 0, 1)  # FREE: STATE
    r.cmd("CHUNK_ASSIGN", 0, 1)
    r.cmd("CHUNK_ASSIGN", 0, 2)  # BUSY
    r.cmd("CHUNK_RELEASE", 0, 2)  # PERM
    r.cmd("CHUNK_QUERY", r.cfg.chunks)
    r.cmd("CHUNK_LIST", 0, 0x10000)
    for _ in range(r.cfg.slots):
        r.cmd("SLOT_ALLOC", 7)
    r.cmd("SLOT_ALLOC", 8)  # NO_RESOURCE
    r.reg_read(regs.CMD_STATUS)
    return r


def case_harvest(rng: random.Random) -> Recorder:
    r = Recorder("harvest")
    pages = r.cfg.pages
    written = rng.sample(range(pages), 40)
    read = rng.sample(range(pages), 30)
    for p in written:
        r.mem_write(p * P + 8 * rng.randrange(512), _q(rng.getrandbits(64)))
    for p in read:
        r.mem_read(p * P + 8 * rng.randrange(512))
    for p in written[:5]:
        r.mem_write(p * P, bytes([rng.getrandbits(8)]))  # 1-byte partial writes
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)  # peek, no clear
    r.cmd("HARVEST_DIRTY", 64, 128, clear=True, window=16)
    r.cmd("HARVEST_DIRTY", 0, pages, clear=True, window=pages // 8)
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)  # all clear now
    r.cmd("HARVEST_ACCESSED", 0, pages, clear=True, window=pages // 8)
    r.cmd("HARVEST_ACCESSED", 0, pages, window=pages // 8)
    for _ in range(20):  # saturate a 4-bit counter
        r.mem_read(5 * P)
    r.mem_write(6 * P + 16, _q(1))
    r.cmd("HARVEST_HOTNESS", 0, 64, window=64)
    r.cmd("HARVEST_HOTNESS", 0, pages, decay=True, window=pages)
    r.cmd("HARVEST_HOTNESS", 0, 64, clear=True, window=64)
    r.cmd("HARVEST_HOTNESS", 0, 64, window=64)
    r.reg_read(regs.STAT_READS_LO)
    r.reg_read(regs.STAT_WRITES_LO)
    # TRACK_EN = 0 stops dirty/accessed/hotness but never association invalidation
    r.cmd("BAT_SET", 9, 99, 1)
    r.reg_write(regs.CTRL, 0)
    r.mem_write(9 * P, _q(5))
    r.mem_read(10 * P)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)
    r.cmd("HARVEST_ACCESSED", 0, 64, window=8)
    r.cmd("BAT_GET", 9)
    r.reg_write(regs.CTRL, 1)
    r.reg_read(regs.STAT_WRITES_LO)
    r.reg_read(regs.STAT_BAT_INV)
    return r


def case_bat(rng: random.Random) -> Recorder:
    r = Recorder("bat")
    r.reg_write(regs.INT_ENABLE, 1)
    for p in range(8):
        r.cmd("BAT_SET", p, rng.getrandbits(r.cfg.bat_block_bits), rng.getrandbits(r.cfg.bat_disk_bits))
    r.cmd("BAT_GET", 3)
    r.mem_read(3 * P)  # reads never invalidate
    r.cmd("BAT_GET", 3)
    r.mem_write(3 * P + 4000, b"\x01")  # a 1-byte write invalidates
    r.cmd("BAT_GET", 3)
    r.cmd("BAT_DISCARD", 3)  # not clean
    r.cmd("BAT_DISCARD", 4)  # clean: answers the association and clears it
    r.cmd("BAT_DISCARD", 4)  # gone
    r.cmd("BAT_CLEAR", 5)
    r.cmd("BAT_GET", 5)
    r.cmd("BAT_SET", 6, (1 << r.cfg.bat_block_bits) - 1, (1 << r.cfg.bat_disk_bits) - 1)
    r.cmd("BAT_GET", 6)
    r.reg_write(regs.CTRL, 0x3)  # BAT_INV_EVT_EN
    r.mem_write(6 * P + 8, _q(7))
    r.mem_write(7 * P, _q(7))
    r.mem_write(7 * P + 8, _q(7))  # already invalid: no second event
    r.reg_read(regs.INT_STATUS)
    r.events()
    r.reg_read(regs.STAT_BAT_INV)
    r.cmd("BAT_GET", 0)
    r.cmd("BAT_SET", 0, 1, 1)  # re-associating makes it valid again
    r.cmd("BAT_DISCARD", 0)
    return r


def case_slots(rng: random.Random) -> Recorder:
    r = Recorder("slots")
    r.reg_write(regs.INT_ENABLE, 0x3)
    full_page = bytes(rng.getrandbits(8) for _ in range(P))
    a = r.cmd("SLOT_ALLOC", 0xABCDEF)["result0"]
    for off in range(0, P, 8):
        r.reg_write(regs.SLOT + a * regs.SLOT_STRIDE + off, int.from_bytes(full_page[off : off + 8], "little"), 8)
    r.cmd("SLOT_QUERY", a, window=512)
    r.reg_read(regs.SLOT + a * regs.SLOT_STRIDE + 128)
    r.cmd("SLOT_MERGE", a, 20)  # full page: no old content needed
    for off in (0, 8, 2048, 4088):
        r.mem_read(20 * P + off)
    r.events()
    # partial: old content in the page, slot bytes win under the mask only
    for off in range(0, 256, 8):
        r.mem_write(21 * P + off, _q(0x1111111111111111 * (1 + off % 7)))
    b = r.cmd("SLOT_ALLOC", 0x42)["result0"]
    base = regs.SLOT + b * regs.SLOT_STRIDE
    r.reg_write(base + 0, 0xAA, 1)
    r.reg_write(base + 2, 0xBBCC, 2)
    r.reg_write(base + 8, 0xDDDDDDDD, 4)
    r.reg_write(base + 16, 0x1234567890ABCDEF, 8)
    r.reg_write(base + 24, 0x99887766, 4, strobe=0b0101)
    r.reg_write(base + 0, 0xEE, 1)  # a later write to the same byte wins
    r.reg_read(base)
    r.reg_read(base + 24)
    r.cmd("SLOT_QUERY", b, window=512)
    r.cmd("BAT_SET", 21, 5, 1)
    r.cmd("HARVEST_DIRTY", 0, 64, clear=True, window=8)
    r.cmd("SLOT_MERGE", b, 21)
    for off in range(0, 40, 8):
        r.mem_read(21 * P + off)
    r.cmd("BAT_GET", 21)  # merge is an internal write: association cleared
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)  # and page dirty
    r.cmd("SLOT_QUERY", b, window=512)  # FREE again
    r.reg_write(base, 1, 4)  # window write to a FREE slot: refused
    r.reg_read(regs.ERR_STATUS)
    # empty merge writes nothing and leaves the page clean
    c = r.cmd("SLOT_ALLOC", 1)["result0"]
    r.cmd("HARVEST_DIRTY", 0, 64, clear=True, window=8)
    r.cmd("SLOT_MERGE", c, 22)
    r.cmd("HARVEST_DIRTY", 0, 64, window=8)
    # release drops contents
    d = r.cmd("SLOT_ALLOC", 2)["result0"]
    r.reg_write(regs.SLOT + d * regs.SLOT_STRIDE, 0x77, 4)
    r.cmd("SLOT_RELEASE", d)
    r.cmd("SLOT_QUERY", d, window=512)
    # timeout: only open, not-full slots, once per allocation, in index order
    r.reg_write(regs.SLOT_TIMEOUT, 5)
    e = r.cmd("SLOT_ALLOC", 0x500)["result0"]
    r.tick(3)
    f2 = r.cmd("SLOT_ALLOC", 0x600)["result0"]
    r.tick(2)
    r.events()
    r.tick(10)
    r.events()
    r.cmd("SLOT_RELEASE", e)
    r.cmd("SLOT_RELEASE", f2)
    r.reg_read(regs.EVQ_COUNT)
    return r


def case_chunks(rng: random.Random) -> Recorder:
    r = Recorder("chunks")
    r.reg_write(regs.INT_ENABLE, 0x1)
    cpages = r.cfg.pages_per_chunk
    r.cmd("CHUNK_ASSIGN", 1, 100)
    r.cmd("CHUNK_ASSIGN", 2, 100)
    r.cmd("CHUNK_ASSIGN", 5, 200)
    r.cmd("CHUNK_LIST", 0, 100, window=2)
    r.cmd("CHUNK_LIST", 0, 0, window=2)
    r.cmd("CHUNK_QUERY", 5)
    for i in range(6):
        r.mem_write((cpages + i) * P + 8 * i, _q(0xDEADBEEF00000000 | i))
    r.cmd("BAT_SET", cpages + 1, 77, 2)
    r.cmd("HARVEST_DIRTY", 0, r.cfg.pages, clear=True, window=r.cfg.pages // 8)
    r.cmd("CHUNK_RELEASE", 2, 100)
    r.cmd("CHUNK_RELEASE", 1, 100)
    r.settle()
    r.cmd("CHUNK_QUERY", 1)
    r.cmd("CHUNK_QUERY", 2)
    for i in range(6):
        r.mem_read((cpages + i) * P + 8 * i)
    r.cmd("BAT_GET", cpages + 1)
    r.cmd("HARVEST_DIRTY", 0, r.cfg.pages, clear=True, window=r.cfg.pages // 8)
    r.events()  # SCRUB_DONE in release order
    r.cmd("CHUNK_ASSIGN", 1, 300)  # reusable after the scrub
    r.cmd("CHUNK_LIST", 0, 300, window=2)
    return r


def case_event_overflow() -> Recorder:
    r = Recorder("event_overflow")
    r.reg_write(regs.CTRL, 0x3)
    r.reg_write(regs.INT_ENABLE, 0x5)
    for p in range(r.cfg.evq_depth + 3):
        r.cmd("BAT_SET", p, p, 0)
        r.mem_write(p * P, _q(p))
    r.reg_read(regs.EVQ_COUNT)
    r.reg_read(regs.EVQ_DROPPED)
    r.reg_read(regs.ERR_STATUS)
    r.reg_read(regs.INT_STATUS)
    r.reg_read(regs.EVT_HEAD0)
    r.reg_read(regs.EVT_HEAD1)
    r.reg_read(regs.EVT_ARG_LO)
    r.reg_write(regs.EVQ_POP, 0)  # writing 0 pops nothing
    r.reg_read(regs.EVQ_COUNT)
    r.events()
    r.reg_read(regs.EVT_HEAD0)  # empty queue reads zero
    r.reg_write(regs.EVQ_POP, 1)  # pop on empty: no effect
    r.reg_read(regs.EVQ_COUNT)
    r.cmd("BAT_SET", 0, 1, 0)
    r.mem_write(0, _q(1))
    r.reg_read(regs.EVT_HEAD1)  # SEQ continues past the dropped ones
    return r


def case_decerr() -> Recorder:
    r = Recorder("decode_error")
    cap = r.cfg.capacity_bytes
    r.mem_write(cap, _q(1))
    r.mem_write(cap + 4096 * 100, b"\x01")
    r.mem_read(cap + 64, 8)
    r.mem_read(cap - 8, 8)
    r.reg_read(regs.STAT_DECERR)
    r.reg_read(regs.STAT_WRITES_LO)
    r.cmd("HARVEST_DIRTY", r.cfg.pages - 64, 64, window=8)
    return r


def case_interrupt() -> Recorder:
    r = Recorder("interrupt")
    r.cmd("NOP")
    r.reg_read(regs.INT_STATUS)
    r.reg_write(regs.INT_STATUS, 0x2)
    r.reg_read(regs.INT_STATUS)
    r.reg_write(regs.INT_ENABLE, 0x7)
    r.reg_read(regs.INT_ENABLE)
    r.reg_write(regs.CTRL, 0x3)
    r.cmd("BAT_SET", 1, 1, 1)
    r.mem_write(P, _q(1))
    r.reg_write(regs.INT_STATUS, 0x7)  # EVQ is a level: stays while events are queued
    r.reg_read(regs.INT_STATUS)
    r.events()
    r.reg_read(regs.INT_STATUS)
    return r


def case_race_harvest(rng: random.Random, n: int) -> Recorder:
    r = Recorder(f"race_harvest_{n}")
    pages = r.cfg.pages
    pre = rng.sample(range(pages), 10)
    for p in pre:
        r.mem_write(p * P, _q(p))
    racing = rng.sample(range(pages), 12)
    writes = [(p * P + 8 * rng.randrange(512), _q(rng.getrandbits(64))) for p in racing]
    spec = {"name": "HARVEST_DIRTY", "args": [0, pages], "clear": True}
    r.race("harvest", spec, writes, "h1", [{"code": "OK"}])
    r.cmd("HARVEST_DIRTY", 0, pages, clear=True, label="h2", exact=False)
    r.check_union(["h1", "h2"], 0, pages, sorted(set(pre) | set(racing)))
    r.cmd("HARVEST_DIRTY", 0, pages, window=pages // 8)  # nothing left
    return r


def case_race_discard(rng: random.Random, n: int) -> Recorder:
    r = Recorder(f"race_discard_{n}")
    page, block, disk = rng.randrange(r.cfg.pages), rng.getrandbits(20), rng.getrandbits(4)
    r.cmd("BAT_SET", page, block, disk)
    spec = {"name": "BAT_DISCARD", "args": [page]}
    writes = [(page * P + 8 * rng.randrange(512), _q(rng.getrandbits(64)))]
    clean = {"code": "OK", "result0": block, "result1": disk | 1 << 32}
    dirty = {"code": "OK", "result0": 0, "result1": 0}
    r.race("discard", spec, writes, "d", [clean, dirty])
    r.cmd("BAT_GET", page)  # invalid in every interleaving
    return r


def case_race_merge(rng: random.Random, n: int) -> Recorder:
    r = Recorder(f"race_merge_{n}")
    page = 30 + n
    old = [rng.getrandbits(64) for _ in range(16)]
    for i, v in enumerate(old):
        r.mem_write(page * P + 8 * i, _q(v))
    s = r.cmd("SLOT_ALLOC", n)["result0"]
    base = regs.SLOT + s * regs.SLOT_STRIDE
    slot_vals = {}
    for i in range(0, 16, 2):  # even qwords valid in the slot
        v = rng.getrandbits(64)
        slot_vals[i] = v
        r.reg_write(base + 8 * i, v, 8)
    racing = {i: rng.getrandbits(64) for i in (1, 2, 5, 6)}
    writes = [(page * P + 8 * i, _q(v)) for i, v in racing.items()]
    spec = {"name": "SLOT_MERGE", "args": [s, page]}
    r.race("merge", spec, writes, "m", [{"code": "OK", "result0": 64}])
    r.settle()
    # The recorded run is one interleaving; the vector states what every
    # interleaving must give: slot bytes win over old content, a racing
    # write to an unmasked byte always survives, a racing write to a masked
    # byte may land before (overwritten) or after the merge.
    for i in range(16):
        op: dict[str, Any] = {"op": "mem_read", "addr": page * P + 8 * i, "size": 8, "resp": "okay"}
        if i in racing and i in slot_vals:
            op["expect_one_of"] = sorted({slot_vals[i], racing[i]})
        elif i in racing:
            op["expect"] = racing[i]
        elif i in slot_vals:
            op["expect"] = slot_vals[i]
        else:
            op["expect"] = old[i]
        r.ops.append(op)
    r.events(ordered=False)
    return r


def case_random(rng: random.Random, n: int) -> Recorder:
    """A random mix of requests and commands with the model's answers."""
    r = Recorder(f"random_{n}")
    cfg = r.cfg
    # CHUNK_COPY (spec 1.3) is not drawn: the older random cases stay as they were, and a device
    # without CAP_DMA.COPY answers it differently; its own case is 35-chunk-copy.
    names = [op.name for op in Op if op != Op.CHUNK_COPY]
    for _ in range(60):
        k = rng.randrange(10)
        page = rng.randrange(cfg.pages + 2)
        addr = page * P + 8 * rng.randrange(512)
        if k < 3:
            r.mem_write(addr, _q(rng.getrandbits(64)))
        elif k < 5:
            r.mem_read(addr)
        elif k < 9:
            name = rng.choice(names)
            a0 = rng.choice([0, 64, page, rng.randrange(cfg.slots + 1), rng.randrange(cfg.chunks + 1)])
            a1 = rng.choice([64, 128, cfg.pages, rng.randrange(4), rng.randrange(1 << 20)])
            a2 = rng.randrange(16)
            win = {
                "HARVEST_DIRTY": a1 // 8,
                "HARVEST_ACCESSED": a1 // 8,
                "HARVEST_HOTNESS": a1,
                "SLOT_QUERY": 512,
                "CHUNK_LIST": 2,
            }.get(name, 0)
            r.cmd(name, a0, a1, a2, clear=rng.random() < 0.5 and name.startswith("HARVEST"), window=win)
        else:
            r.settle()
            r.events(ordered=False)
    r.settle()
    r.events(ordered=False)
    return r


def build(seed: int = SEED) -> dict[str, list[Recorder]]:
    rng = random.Random(seed)
    drng = random.Random(seed + 25)
    lrng = random.Random(seed + 26)
    return {
        "10-registers": [
            case_reset_values(),
            case_illegal_access(),
            case_illegal_reads_sized(),
            case_illegal_writes_strobed(),
            case_illegal_writes_sized(),
            case_interrupt(),
        ],
        "20-commands": [case_cmd_errors(), case_harvest(rng), case_bat(rng), case_decerr()],
        # its own generator: adding the dma cases left every older case as it was
        "25-dma": [case_dma_harvest(drng), case_dma_bigger_than_result(), case_dma_errors(drng), case_dma_stray()],
        # its own generator too (spec 1.2)
        "26-dma-list": [_unwrite(c) for c in (case_list_harvest(lrng), case_list_dense(), case_list_errors(lrng))]
        + [_unwrite(case_list_race(lrng, i)) for i in range(2)],
        "30-slots-chunks": [case_slots(rng), case_chunks(rng), case_event_overflow()],
        # its own generator too (spec 1.3): the older cases stay as they were
        "35-chunk-copy": [case_chunk_copy(random.Random(seed + 35))],
        "40-races": [case_race_harvest(rng, i) for i in range(3)]
        + [case_race_discard(rng, i) for i in range(3)]
        + [case_race_merge(rng, i) for i in range(2)],
        "50-random": [case_random(rng, i) for i in range(6)],
    }


def required_coverage() -> set[str]:
    need = {f"cmd:{op.name}" for op in Op}
    need |= {f"status:{s.name}" for s in Status}
    need |= {f"err:{f.name}" for f in _ERR.fields}
    need |= {f"event:{e.name}" for e in Event if e != Event.NONE}
    need |= {f"race:{k}" for k in RACE_KINDS}
    return need - set(NOT_IN_CORPUS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="directory for the *.jsonl corpus")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--check", action="store_true", help="fail if the corpus in --out is stale")
    args = ap.parse_args(argv)
    files = build(args.seed)
    covered: set[str] = set()
    texts = {}
    for name, recs in files.items():
        texts[name] = "\n".join(line for rec in recs for line in rec.lines()) + "\n"
        for rec in recs:
            covered |= rec.covers
    missing = required_coverage() - covered
    if missing:
        print(f"vectors: corpus misses {sorted(missing)}", file=sys.stderr)
        return 1
    stale = 0
    for name, text in texts.items():
        path = args.out / f"{name}.jsonl"
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"vectors: {path} is stale (run `make vectors`)", file=sys.stderr)
                stale += 1
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    if not args.check:
        for old in args.out.glob("*.jsonl"):
            if old.stem not in texts:
                old.unlink()
        ncases = sum(len(r) for r in files.values())
        print(
            f"vectors: {ncases} cases in {len(files)} files under {args.out}; "
            f"coverage {len(covered)} items, all {len(required_coverage())} required "
            f"(not in corpus: {', '.join(NOT_IN_CORPUS)})"
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
