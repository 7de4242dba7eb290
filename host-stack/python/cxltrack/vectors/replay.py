# SPDX-License-Identifier: Apache-2.0
"""Replay shared test vectors on any implementation.

An implementation provides a Target (async, so that a cocotb bench can await
simulator triggers inside it). The engine drives everything through the
Target's register and memory accesses, exactly as host software would, and
raises Mismatch naming the case, the vector line and the field on the first
difference.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol

from cxltrack import regs
from cxltrack.cmdregs import launch_writes
from cxltrack.config import DeviceConfig
from cxltrack.model.device import Device, WriteToken
from cxltrack.regs import Event, Op, Status

from .format import Case, VOp

_ST = regs.REGISTERS["CMD_STATUS"]
_H0 = regs.REGISTERS["EVT_HEAD0"]
POLL_LIMIT = 100_000
RECORD = regs.DMA_LIST_RECORD_BYTES


class Mismatch(AssertionError):
    """An implementation disagreed with a vector."""


class Target(Protocol):
    async def reset(self) -> None: ...

    async def reg_read(self, offset: int, size: int) -> int: ...

    async def reg_write(self, offset: int, value: int, size: int, strobe: int | None) -> None: ...

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]: ...

    async def mem_write(self, addr: int, data: bytes) -> str: ...

    async def settle(self) -> None: ...

    async def tick(self, n: int) -> None: ...

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int
    ) -> None:
        """Perform reg_writes (which launch a command) and mem_writes
        concurrently; return when every memory write has completed. schedule
        selects one interleaving where the target can choose."""
        ...


class DmaTarget(Target, Protocol):
    """A Target whose device can DMA (requirement `dma`): host memory by bus address."""

    async def host_fill(self, addr: int, length: int, byte: int) -> None: ...

    async def host_read(self, addr: int, length: int) -> bytes: ...

    async def host_fault(self, addr: int, length: int) -> None:
        """Make every later DMA write that touches [addr, addr + length) fail."""
        ...


def cmd_writes(spec: dict[str, Any]) -> list[tuple[int, int]]:
    """Register writes that launch the command described by a vector's cmd fields."""
    name = spec["name"]
    return launch_writes(
        name if isinstance(name, int) else Op[name],
        spec.get("args", []),
        clear=spec.get("clear", False),
        decay=spec.get("decay", False),
        dma=spec.get("dma", False),
        rsvd=spec.get("rsvd", 0),
        list_=spec.get("list", False),
    )


class Replayer:
    def __init__(self, target: Target, case: Case, schedule: int = 0) -> None:
        self.t = target
        self.case = case
        self.schedule = schedule
        self.labels: dict[str, tuple[dict[str, int], bytes]] = {}
        self._seq: int | None = None

    def _where(self, vop: VOp, fld: str) -> str:
        return f"{self.case.source}:{vop.line}: case '{self.case.name}' op {vop.op} field '{fld}'"

    def _expect(self, vop: VOp, fld: str, want: Any, got: Any) -> None:
        if want != got:
            w = hex(want) if isinstance(want, int) else want
            g = hex(got) if isinstance(got, int) else got
            raise Mismatch(f"{self._where(vop, fld)}: expected {w}, got {g}")

    async def run(self) -> None:
        await self.t.reset()
        for vop in self.case.ops:
            await getattr(self, "_op_" + vop.op)(vop)

    async def _op_reset(self, vop: VOp) -> None:
        await self.t.reset()
        self._seq = 0  # a reset zeroes CMD_STATUS.SEQ (spec 11): the next launch is number 1

    async def _op_settle(self, vop: VOp) -> None:
        await self.t.settle()

    async def _op_tick(self, vop: VOp) -> None:
        await self.t.tick(vop.f["n"])

    async def _op_reg_read(self, vop: VOp) -> None:
        got = await self.t.reg_read(vop.f["offset"], vop.f.get("size", 4))
        self._expect(vop, "expect", vop.f["expect"], got)

    async def _op_reg_write(self, vop: VOp) -> None:
        await self.t.reg_write(vop.f["offset"], vop.f["value"], vop.f.get("size", 4), vop.f.get("strobe"))

    async def _op_mem_read(self, vop: VOp) -> None:
        resp, got = await self.t.mem_read(vop.f["addr"], vop.f["size"])
        self._expect(vop, "resp", vop.f["resp"], resp)
        if "expect" in vop.f:
            self._expect(vop, "expect", vop.f["expect"], got)
        elif got not in vop.f["expect_one_of"]:
            raise Mismatch(
                f"{self._where(vop, 'expect_one_of')}: got {got:#x}, not one of "
                f"{[hex(v) for v in vop.f['expect_one_of']]}"
            )

    async def _op_mem_write(self, vop: VOp) -> None:
        resp = await self.t.mem_write(vop.f["addr"], vop.f["data"])
        self._expect(vop, "resp", vop.f["resp"], resp)

    async def _wait_done(self, vop: VOp) -> dict[str, int]:
        for _ in range(POLL_LIMIT):
            status = await self.t.reg_read(regs.CMD_STATUS, 4)
            if not _ST.field("BUSY").get(status):
                break
        else:
            raise Mismatch(f"{self._where(vop, 'name')}: command still busy after {POLL_LIMIT} polls")
        seq = _ST.field("SEQ").get(status)
        if self._seq is not None and seq != (self._seq + 1) & 0xFFFF:
            raise Mismatch(f"{self._where(vop, 'name')}: CMD_STATUS.SEQ {seq} after {self._seq}: not one launch")
        self._seq = seq
        r0 = await self.t.reg_read(regs.CMD_RESULT0_LO, 4) | await self.t.reg_read(regs.CMD_RESULT0_HI, 4) << 32
        r1 = await self.t.reg_read(regs.CMD_RESULT1_LO, 4) | await self.t.reg_read(regs.CMD_RESULT1_HI, 4) << 32
        return {"code": _ST.field("CODE").get(status), "result0": r0, "result1": r1}

    async def _read_window(self, length: int) -> bytes:
        out = bytearray()
        for off in range(0, length, 4):
            out += (await self.t.reg_read(regs.RESULT + off, 4)).to_bytes(4, "little")
        return bytes(out[:length])

    async def _prime_seq(self) -> None:
        if self._seq is None:
            self._seq = _ST.field("SEQ").get(await self.t.reg_read(regs.CMD_STATUS, 4))

    async def _op_cmd(self, vop: VOp) -> None:
        await self._prime_seq()
        for off, val in cmd_writes(vop.f):
            await self.t.reg_write(off, val, 4, None)
        got = await self._wait_done(vop)
        exp = vop.f["expect"]
        self._expect(vop, "expect.code", Status[exp["code"]].name, Status(got["code"]).name)
        for k in ("result0", "result1"):
            if k in exp:
                self._expect(vop, f"expect.{k}", exp[k], got[k])
        window = b""
        if "window" in exp:
            window = await self._read_window(len(exp["window"]))
        elif "as" in vop.f and vop.f["name"] in ("HARVEST_DIRTY", "HARVEST_ACCESSED") and got["code"] == 0:
            if vop.f.get("list"):  # records of the non-zero words at ARG2 (spec 5.4): as the bitmap
                window = await self._list_bitmap(vop.f["args"], got["result1"])
            elif vop.f.get("dma"):  # the bitmap went to host memory at ARG2, RESULT is untouched
                window = await self._dma().host_read(vop.f["args"][2], vop.f["args"][1] // 8)
            else:
                window = await self._read_window(vop.f["args"][1] // 8)
        if "window" in exp and window != exp["window"]:
            diff = next(i for i in range(len(window)) if window[i] != exp["window"][i])
            raise Mismatch(
                f"{self._where(vop, 'expect.window')}: byte {diff}: expected "
                f"{exp['window'][diff]:#04x}, got {window[diff]:#04x}"
            )
        if "as" in vop.f:
            self.labels[vop.f["as"]] = (got, window)

    async def _list_bitmap(self, args: list[int], records: int) -> bytes:
        """The bitmap a list harvest's records describe (docs/spec.md 5.4), for labels and checks."""
        start, count, addr = args[0], args[1], args[2]
        raw = await self._dma().host_read(addr, records * RECORD)
        bits = 0
        for i in range(records):
            first = int.from_bytes(raw[RECORD * i : RECORD * i + 8], "little")
            if first % 64 or not start <= first < start + count:
                raise Mismatch(f"list record {i} at {addr + RECORD * i:#x}: page {first} is not a word of the range")
            bits |= int.from_bytes(raw[RECORD * i + 8 : RECORD * (i + 1)], "little") << (first - start)
        return bits.to_bytes(count // 8, "little")

    def _dma(self) -> DmaTarget:
        assert "dma" in self.case.requires  # format.py refuses host ops in a case without it
        return self.t  # type: ignore[return-value]  # a runner replays dma cases only on a DmaTarget

    async def _op_host_fill(self, vop: VOp) -> None:
        await self._dma().host_fill(vop.f["addr"], vop.f["len"], vop.f["byte"])

    async def _op_host_fault(self, vop: VOp) -> None:
        await self._dma().host_fault(vop.f["addr"], vop.f["len"])

    async def _op_host_expect(self, vop: VOp) -> None:
        want: bytes = vop.f["hex"]
        got = await self._dma().host_read(vop.f["addr"], len(want))
        if got != want:
            diff = next(i for i in range(len(want)) if got[i] != want[i])
            raise Mismatch(
                f"{self._where(vop, 'hex')}: host byte {vop.f['addr'] + diff:#x}: expected "
                f"{want[diff]:#04x}, got {got[diff]:#04x}"
            )

    async def _op_events(self, vop: VOp) -> None:
        got: list[dict[str, Any]] = []
        last_seq: int | None = None
        for _ in range(1 << 16):
            if not await self.t.reg_read(regs.EVQ_COUNT, 4):
                break
            w0 = await self.t.reg_read(regs.EVT_HEAD0, 4)
            seq = await self.t.reg_read(regs.EVT_HEAD1, 4)
            arg = await self.t.reg_read(regs.EVT_ARG_LO, 4) | await self.t.reg_read(regs.EVT_ARG_HI, 4) << 32
            await self.t.reg_write(regs.EVQ_POP, 1, 4, None)
            if last_seq is not None and not 0 < (seq - last_seq) & 0xFFFFFFFF < 1 << 31:
                raise Mismatch(f"{self._where(vop, 'expect')}: event SEQ {seq} does not follow {last_seq}")
            last_seq = seq
            got.append({"type": Event(_H0.field("TYPE").get(w0)).name, "index": _H0.field("INDEX").get(w0), "arg": arg})
        want = list(vop.f["expect"])
        if not vop.f["ordered"]:

            def key(e: dict[str, Any]) -> tuple[str, int, int]:
                return (e["type"], e["index"], e["arg"])

            want.sort(key=key)
            got.sort(key=key)
        self._expect(vop, "expect", want, got)

    async def _op_race(self, vop: VOp) -> None:
        await self._prime_seq()
        writes = [(w["addr"], w["data"]) for w in vop.f["writes"]]
        await self.t.race(cmd_writes(vop.f["cmd"]), writes, self.schedule)
        got = await self._wait_done(vop)
        ok = False
        for exp in vop.f["expect_one_of"]:
            if Status[exp["code"]] == got["code"] and all(exp[k] == got[k] for k in ("result0", "result1") if k in exp):
                ok = True
        if not ok:
            raise Mismatch(f"{self._where(vop, 'expect_one_of')}: got {got}")
        window = b""
        if vop.f["kind"] == "harvest" and vop.f["cmd"].get("list"):
            window = await self._list_bitmap(vop.f["cmd"]["args"], got["result1"])
        elif vop.f["kind"] == "harvest":
            window = await self._read_window(vop.f["cmd"]["args"][1] // 8)
        self.labels[vop.f["as"]] = (got, window)

    async def _op_check(self, vop: VOp) -> None:
        start, count = vop.f["start"], vop.f["count"]
        seen: list[set[int]] = []
        for label in vop.f["of"]:
            if label not in self.labels:
                raise Mismatch(f"{self._where(vop, 'of')}: no result labelled {label!r}")
            bits = int.from_bytes(self.labels[label][1][: count // 8], "little")
            seen.append({start + i for i in range(count) if bits >> i & 1})
        union = set().union(*seen)
        self._expect(vop, "pages", sorted(vop.f["pages"]), sorted(union))


async def replay(target: Target, case: Case, schedule: int = 0) -> None:
    await Replayer(target, case, schedule).run()


class ModelTarget:
    """The reference model as a Target. Races are interleaved at the model's
    atomic steps; `schedule` 0 puts every write before the command's first
    step, 1 after its last, others draw a random interleaving (seeded) in
    which each write's begin and end may fall at different steps."""

    def __init__(self, cfg: DeviceConfig) -> None:
        self.dev = Device(cfg)

    async def reset(self) -> None:
        self.dev.reset()

    async def reg_read(self, offset: int, size: int) -> int:
        return self.dev.reg_read(offset, size)

    async def reg_write(self, offset: int, value: int, size: int, strobe: int | None) -> None:
        self.dev.reg_write(offset, value, size, strobe)
        # Commands run to completion between register accesses, as in QEMU.
        while self.dev.busy:
            self.dev.step()

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        resp, data = self.dev.mem_read(addr, size)
        return resp.value, int.from_bytes(data, "little")

    async def mem_write(self, addr: int, data: bytes) -> str:
        return self.dev.mem_write(addr, data).value

    async def settle(self) -> None:
        self.dev.settle()

    async def tick(self, n: int) -> None:
        self.dev.tick(n)

    async def host_fill(self, addr: int, length: int, byte: int) -> None:
        self.dev.host.fill(addr, length, byte)

    async def host_read(self, addr: int, length: int) -> bytes:
        return self.dev.host.read(addr, length)

    async def host_fault(self, addr: int, length: int) -> None:
        self.dev.host.fault(addr, length)

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int
    ) -> None:
        dev = self.dev
        for off, val in reg_writes:
            dev.reg_write(off, val)
        rng = random.Random(schedule)
        todo = list(mem_writes)
        begun: list[tuple[WriteToken, bytes]] = []

        def advance(finish: bool) -> None:
            nonlocal todo
            keep = []
            for addr, data in todo:
                if finish or schedule == 0 or (schedule > 1 and rng.random() < 0.3):
                    tok = dev.write_begin(addr, len(data))
                    if tok is not None:
                        begun.append((tok, data))
                else:
                    keep.append((addr, data))
            todo = keep
            still = []
            for tok2, data in begun:
                if finish or schedule == 0 or (schedule > 1 and rng.random() < 0.5):
                    dev.write_end(tok2, data)
                else:
                    still.append((tok2, data))
            begun[:] = still

        while dev.busy:
            advance(False)
            dev.step()
        advance(True)
