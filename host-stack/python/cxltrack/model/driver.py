# SPDX-License-Identifier: Apache-2.0
"""Register-level helpers for driving a model Device the way host software
does: write the arguments, launch, run to completion, read the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cxltrack import regs
from cxltrack.cmdregs import launch_writes
from cxltrack.regs import Op, Status

from .device import Device

_ST = regs.REGISTERS["CMD_STATUS"]


@dataclass(frozen=True)
class CmdResult:
    code: Status
    result0: int
    result1: int


class ModelDriver:
    def __init__(self, dev: Device) -> None:
        self.dev = dev

    def launch(
        self,
        op: Op | int,
        arg0: int = 0,
        arg1: int = 0,
        arg2: int = 0,
        *,
        clear: bool = False,
        decay: bool = False,
        dma: bool = False,
        rsvd: int = 0,
        list_: bool = False,
    ) -> None:
        writes = launch_writes(op, (arg0, arg1, arg2), clear=clear, decay=decay, dma=dma, rsvd=rsvd, list_=list_)
        for offset, value in writes:
            self.dev.reg_write(offset, value)

    def result(self) -> CmdResult:
        d = self.dev
        status = d.reg_read(regs.CMD_STATUS)
        if _ST.field("BUSY").get(status):
            raise RuntimeError("command still busy")
        r0 = d.reg_read(regs.CMD_RESULT0_LO) | d.reg_read(regs.CMD_RESULT0_HI) << 32
        r1 = d.reg_read(regs.CMD_RESULT1_LO) | d.reg_read(regs.CMD_RESULT1_HI) << 32
        return CmdResult(Status(_ST.field("CODE").get(status)), r0, r1)

    def finish(self) -> CmdResult:
        """Run the launched command to completion (the scrub engine may keep running)."""
        while self.dev.busy:
            self.dev.step()
        return self.result()

    def cmd(self, op: Op | int, *args: int, **flags: Any) -> CmdResult:
        """launch() and finish(); flags as for launch()."""
        self.launch(op, *args, **flags)
        return self.finish()

    def harvest(self, op: Op, start: int, count: int, clear: bool = True) -> set[int]:
        """Pages whose bit is set, as a set of page numbers."""
        res = self.cmd(op, start, count, clear=clear)
        if res.code != Status.OK:
            raise RuntimeError(f"{op.name}: {res.code.name}")
        bits = int.from_bytes(self.dev.result[: count // 8], "little")
        return {start + i for i in range(count) if bits >> i & 1}

    def window_write(self, slot: int, offset: int, data: bytes) -> None:
        """Write bytes into a slot window with aligned accesses of up to 8 bytes."""
        base = regs.SLOT + slot * regs.SLOT_STRIDE
        i = 0
        while i < len(data):
            addr = offset + i
            size = 8
            while size > 1 and (addr % size or i + size > len(data)):
                size //= 2
            self.dev.reg_write(base + addr, int.from_bytes(data[i : i + size], "little"), size)
            i += size

    def pop_events(self) -> list[tuple[int, int, int, int]]:
        """Drain the event queue: (type, index, seq, arg) per event."""
        d = self.dev
        out = []
        h0 = regs.REGISTERS["EVT_HEAD0"]
        while d.reg_read(regs.EVQ_COUNT):
            w0 = d.reg_read(regs.EVT_HEAD0)
            seq = d.reg_read(regs.EVT_HEAD1)
            arg = d.reg_read(regs.EVT_ARG_LO) | d.reg_read(regs.EVT_ARG_HI) << 32
            out.append((h0.field("TYPE").get(w0), h0.field("INDEX").get(w0), seq, arg))
            d.reg_write(regs.EVQ_POP, 1)
        return out
