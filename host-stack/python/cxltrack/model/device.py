# SPDX-License-Identifier: Apache-2.0
"""The executable form of docs/spec.md: one cxltrack device.

Concurrency is expressed at request granularity. A memory write is two
events, `write_begin` (request accepted) and `write_end` (data in memory);
`mem_write` does both at once. A command is launched by a register write and
advanced by `step()`, one atomic hardware step at a time; `settle()` runs the
command and the scrub engine to completion. Time (for slot timeouts) advances
only with `tick()`. A test interleaves these calls to express any race.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cxltrack import regs
from cxltrack.config import DeviceConfig
from cxltrack.regs import ChunkState, Event

from .chunks import ChunkTable
from .commands import Completion, Launch, Steps, run
from .events import EventQueue
from .memory import HostMemory, Memory
from .slots import SLOT_BYTES, Slot
from .tables import TrackingTables

LINE = 64
R = regs.REGISTERS
_ERR = R["ERR_STATUS"]
_INT = R["INT_STATUS"]
_ACCESS_ERRORS = ("BAD_REG", "BAD_WIDTH", "CMD_OVERRUN", "SLOT_WRITE")
_OFFSETS = {r.offset: r for r in R.values()}  # decoded by offset & ~3
# Registers software may write (every field of the others is read-only).
_WRITABLE = {r.name for r in R.values() if any("w" in f.sw for f in r.fields)}


class MemResp(enum.Enum):
    OKAY = "okay"
    DECERR = "decerr"


@dataclass(frozen=True)
class WriteToken:
    """A write request between its acceptance and its completion."""

    addr: int
    page: int


class Device:
    def __init__(
        self,
        cfg: DeviceConfig,
        dma_addr_bits: int = 64,
        host: HostMemory | None = None,
        dma_copy: bool | None = None,
        dma_list: bool = True,
    ) -> None:
        """dma_addr_bits: CAP_DMA.ADDR_BITS, a property of the implementation, not of the
        configuration (QEMU and the RTL drive 64-bit bus addresses); 0 = no DMA. host: the host
        memory DMA harvests write to (docs/spec.md section 5.3); a device reset keeps it.
        dma_list: CAP_DMA.LIST (list harvests, section 5.4); only with DMA.
        dma_copy: CAP_DMA.COPY (CHUNK_COPY, docs/spec.md section 7.1); by default present
        exactly when DMA is; it needs DMA."""
        if not 0 <= dma_addr_bits <= 64:
            raise ValueError(f"dma_addr_bits must be 0..64, not {dma_addr_bits}")
        self.dma_list = dma_list and dma_addr_bits > 0
        if dma_copy is None:
            dma_copy = dma_addr_bits > 0
        if dma_copy and not dma_addr_bits:
            raise ValueError("dma_copy needs DMA (dma_addr_bits > 0)")
        self.dma_copy = dma_copy
        self.cfg = cfg
        self.mem = Memory(cfg.capacity_bytes, cfg.page_size)
        self.dma_addr_bits = dma_addr_bits
        self.host = host if host is not None else HostMemory()
        self.reset()

    # ------------------------------------------------------------------ reset
    def reset(self) -> None:
        """Device reset (docs/spec.md section 11): tables and registers, not memory."""
        cfg = self.cfg
        self.tables = TrackingTables(cfg.pages, cfg.hot_max)
        self.slots = [Slot() for _ in range(cfg.slots)]
        self.chunks = ChunkTable(cfg.chunks)
        self.events = EventQueue(cfg.evq_depth)
        self.now = 0
        self.regs: dict[str, int] = {r.name: r.reset for r in R.values()}
        self.args = [0, 0, 0]
        self.result = bytearray(regs.RESULT_SIZE)
        self.stats = {"reads": 0, "writes": 0, "decerr": 0, "bat_inv": 0}
        self.err_count = 0
        self._cmd: Steps | None = None
        self._scrub: tuple[int, int] | None = None  # (chunk, next page offset)
        self.msi_count = 0
        self._irq = False

    # --------------------------------------------------------- memory path
    def _decode(self, addr: int, length: int) -> int | None:
        if addr < 0 or length <= 0 or addr + length > self.cfg.capacity_bytes:
            return None
        if addr // LINE != (addr + length - 1) // LINE:
            raise ValueError(f"request {addr:#x}+{length} crosses a 64-byte line")
        return addr >> self.cfg.page_shift

    @property
    def tracking(self) -> bool:
        return bool(R["CTRL"].field("TRACK_EN").get(self.regs["CTRL"]))

    def mem_read(self, addr: int, length: int) -> tuple[MemResp, bytes]:
        page = self._decode(addr, length)
        if page is None:
            self.stats["decerr"] = min(self.stats["decerr"] + 1, 0xFFFFFFFF)
            return MemResp.DECERR, bytes(length)
        self.stats["reads"] += 1
        if self.tracking:
            self.tables.touch(page)
        return MemResp.OKAY, self.mem.read(addr, length)

    def write_begin(self, addr: int, length: int) -> WriteToken | None:
        """The write request is accepted. None: decode error (nothing happened)."""
        page = self._decode(addr, length)
        if page is None:
            self.stats["decerr"] = min(self.stats["decerr"] + 1, 0xFFFFFFFF)
            return None
        self.stats["writes"] += 1
        if self.tracking:
            self.tables.touch(page)
        self._invalidate(page)
        return WriteToken(addr, page)

    def write_end(self, token: WriteToken, data: bytes, enables: bytes | None = None) -> None:
        """The write's data is in device memory."""
        self.mem.write(token.addr, data, enables)
        if self.tracking:
            self.tables.dirty.set(token.page)
        self._invalidate(token.page)

    def mem_write(self, addr: int, data: bytes, enables: bytes | None = None) -> MemResp:
        token = self.write_begin(addr, len(data))
        if token is None:
            return MemResp.DECERR
        self.write_end(token, data, enables)
        return MemResp.OKAY

    def internal_write(self, addr: int, data: bytes, enables: bytes | None = None) -> None:
        """A write by the device itself (merge, scrub, sanitize): write-end effects only."""
        self.mem.write(addr, data, enables)
        page = addr >> self.cfg.page_shift
        if self.tracking:
            self.tables.dirty.set(page)
        self._invalidate(page)

    def _invalidate(self, page: int) -> None:
        if self.tables.invalidate(page):
            self.stats["bat_inv"] = min(self.stats["bat_inv"] + 1, 0xFFFFFFFF)
            if R["CTRL"].field("BAT_INV_EVT_EN").get(self.regs["CTRL"]):
                self.push_event(Event.BAT_INVALIDATED, 0, page)

    # -------------------------------------------------------------- events
    def push_event(self, type_: Event, index: int, arg: int) -> None:
        if not self.events.push(type_, index, arg):
            self._set_error("EVQ_OVERFLOW", None)
        self._update_irq()

    def _set_error(self, name: str, offset: int | None) -> None:
        field = _ERR.field(name)
        status = self.regs["ERR_STATUS"]
        was_set = bool(field.get(status))
        access_errors = sum(_ERR.field(n).mask for n in _ACCESS_ERRORS)
        if offset is not None and not status & access_errors:
            self.regs["ERR_ADDR"] = offset
        self.regs["ERR_STATUS"] = status | field.mask
        if offset is not None:
            self.err_count = min(self.err_count + 1, 0xFFFFFFFF)
        if not was_set:
            self.regs["INT_STATUS"] |= _INT.field("ERROR").mask
            if offset is not None:
                self.push_event(Event.ERROR, field.lsb, offset)
        self._update_irq()

    # ----------------------------------------------------------- interrupt
    def _int_status(self) -> int:
        value = self.regs["INT_STATUS"] & ~_INT.field("EVQ").mask
        if self.events.queue:
            value |= _INT.field("EVQ").mask
        return value

    @property
    def irq(self) -> bool:
        return bool(self._int_status() & self.regs["INT_ENABLE"])

    def _update_irq(self, rearm: bool = False) -> None:
        line = self.irq
        if line and (not self._irq or rearm):
            self.msi_count += 1
        self._irq = line

    # ---------------------------------------------------------- registers
    def reg_read(self, offset: int, size: int = 4) -> int:
        if regs.SLOT <= offset < regs.SLOT + regs.SLOT_COUNT * regs.SLOT_STRIDE:
            return self._window_read(offset, size)
        if regs.RESULT <= offset < regs.RESULT + regs.RESULT_SIZE:
            if size not in (4, 8) or offset % size:
                self._set_error("BAD_WIDTH", offset)
                return 0
            base = offset - regs.RESULT
            return int.from_bytes(self.result[base : base + size], "little")
        reg = _OFFSETS.get(offset & ~3)
        if reg is None or reg.name == "EVQ_POP":
            self._set_error("BAD_REG", offset)
            return 0
        if size != 4 or offset % 4:
            self._set_error("BAD_WIDTH", offset)
            return 0
        return self._register_value(reg.name)

    def _register_value(self, name: str) -> int:
        cfg = self.cfg
        head = self.events.head()
        match name:
            case "CAP_PAGES_LO":
                return cfg.pages & 0xFFFFFFFF
            case "CAP_PAGES_HI":
                return cfg.pages >> 32
            case "CAP_GEOM":
                g = R["CAP_GEOM"]
                return (
                    g.field("PAGE_SHIFT").put(cfg.page_shift)
                    | g.field("NUM_SLOTS").put(cfg.slots)
                    | g.field("HOT_BITS").put(cfg.hot_bits)
                    | g.field("EVQ_DEPTH_LOG2").put(cfg.evq_depth_log2)
                )
            case "CAP_CHUNK":
                c = R["CAP_CHUNK"]
                return c.field("CHUNK_SHIFT").put(cfg.chunk_shift) | c.field("NUM_CHUNKS").put(cfg.chunks)
            case "CAP_BAT":
                b = R["CAP_BAT"]
                return b.field("DISK_BITS").put(cfg.bat_disk_bits) | b.field("BLOCK_BITS").put(cfg.bat_block_bits)
            case "CAP_TICK":
                return cfg.tick_ns
            case "CAP_DMA":
                d = R["CAP_DMA"]
                bits = self.dma_addr_bits
                return (
                    d.field("PRESENT").put(int(bits > 0))
                    | d.field("LIST").put(int(self.dma_list))
                    | d.field("COPY").put(int(self.dma_copy))
                    | d.field("ADDR_BITS").put(bits)
                )
            case "INT_STATUS":
                return self._int_status()
            case "ERR_COUNT":
                return self.err_count
            case "CMD_ARG0_LO" | "CMD_ARG1_LO" | "CMD_ARG2_LO":
                return self.args[int(name[7])] & 0xFFFFFFFF
            case "CMD_ARG0_HI" | "CMD_ARG1_HI" | "CMD_ARG2_HI":
                return self.args[int(name[7])] >> 32
            case "EVQ_COUNT":
                return len(self.events.queue)
            case "EVQ_DROPPED":
                return self.events.dropped
            case "EVT_HEAD0":
                if head is None:
                    return 0
                h = R["EVT_HEAD0"]
                return h.field("TYPE").put(int(head.type)) | h.field("INDEX").put(head.index)
            case "EVT_HEAD1":
                return 0 if head is None else head.seq
            case "EVT_ARG_LO":
                return 0 if head is None else head.arg & 0xFFFFFFFF
            case "EVT_ARG_HI":
                return 0 if head is None else head.arg >> 32
            case "STAT_READS_LO" | "STAT_WRITES_LO":
                return self.stats[name[5:-3].lower()] & 0xFFFFFFFF
            case "STAT_READS_HI" | "STAT_WRITES_HI":
                return (self.stats[name[5:-3].lower()] >> 32) & 0xFFFFFFFF
            case "STAT_DECERR":
                return self.stats["decerr"]
            case "STAT_BAT_INV":
                return self.stats["bat_inv"]
        return self.regs[name]

    def reg_write(self, offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        """A BAR write of size bytes; strobe (a byte mask within the access)
        models an AXI4-Lite write with partial strobes."""
        full = (1 << size) - 1
        strobe = full if strobe is None else strobe & full
        # an illegal write records its first enabled byte (its word when no byte is enabled)
        first = offset + (strobe & -strobe).bit_length() - 1 if strobe else offset & ~3
        if regs.SLOT <= offset < regs.SLOT + regs.SLOT_COUNT * regs.SLOT_STRIDE:
            self._window_write(offset, value, size, strobe, first)
            return
        if regs.RESULT <= offset < regs.RESULT + regs.RESULT_SIZE:
            self._set_error("BAD_REG", first)
            return
        reg = _OFFSETS.get(offset & ~3)
        if reg is None or reg.name not in _WRITABLE:
            self._set_error("BAD_REG", first)
            return
        if size != 4 or offset % 4 or strobe != full:
            self._set_error("BAD_WIDTH", first)
            return
        value &= 0xFFFFFFFF
        name = reg.name
        if name in ("INT_STATUS", "ERR_STATUS"):
            w1c = sum(f.mask for f in reg.fields if f.woclr)
            self.regs[name] &= ~(value & w1c)
            if name == "INT_STATUS":
                self._update_irq(rearm=True)
            return
        if name == "EVQ_POP":
            if value & 1:
                self.events.pop()
                self._update_irq()
            return
        if name.startswith("CMD_ARG"):
            i = int(name[7])
            if name.endswith("_LO"):
                self.args[i] = (self.args[i] & ~0xFFFFFFFF) | value
            else:
                self.args[i] = (self.args[i] & 0xFFFFFFFF) | value << 32
            return
        if name == "CMD_OP":
            self._launch(value, offset)
            return
        writable = sum(f.mask for f in reg.fields if "w" in f.sw)
        self.regs[name] = value & writable
        self._update_irq(rearm=name == "INT_ENABLE")

    # ------------------------------------------------------------- windows
    def _slot_at(self, offset: int) -> tuple[int, int]:
        rel = offset - regs.SLOT
        return rel // regs.SLOT_STRIDE, rel % regs.SLOT_STRIDE

    def _window_read(self, offset: int, size: int) -> int:
        index, off = self._slot_at(offset)
        if index >= self.cfg.slots:
            self._set_error("BAD_REG", offset)
            return 0
        if size not in (4, 8) or off % size:
            self._set_error("BAD_WIDTH", offset)
            return 0
        return int.from_bytes(self.slots[index].load(off, size), "little")

    def _window_write(self, offset: int, value: int, size: int, strobe: int, first: int) -> None:
        index, off = self._slot_at(offset)
        if index >= self.cfg.slots:
            self._set_error("BAD_REG", first)
            return
        if size not in (1, 2, 4, 8) or off % size:
            self._set_error("BAD_WIDTH", first)
            return
        slot = self.slots[index]
        if slot.state != regs.SlotState.OPEN:
            self._set_error("SLOT_WRITE", first)
            return
        data = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        enables = bytes((strobe >> i) & 1 for i in range(size))
        slot.store(off, data, enables)
        if slot.full and not slot.full_reported:
            slot.full_reported = True
            self.push_event(Event.SLOT_FULL, index, slot.tag)

    # ------------------------------------------------------------ commands
    @property
    def busy(self) -> bool:
        return self._cmd is not None

    def _launch(self, value: int, offset: int) -> None:
        if self.busy:
            self._set_error("CMD_OVERRUN", offset)
            return
        reg = R["CMD_OP"]
        self.regs["CMD_OP"] = value
        cmd = Launch(
            op=reg.field("OP").get(value),
            clear=bool(reg.field("CLEAR").get(value)),
            decay=bool(reg.field("DECAY").get(value)),
            rsvd=reg.field("RSVD").get(value),
            dma=bool(reg.field("DMA").get(value)),
            list=bool(reg.field("LIST").get(value)),
            arg0=self.args[0],
            arg1=self.args[1],
            arg2=self.args[2],
        )
        st = R["CMD_STATUS"]
        seq = (st.field("SEQ").get(self.regs["CMD_STATUS"]) + 1) & 0xFFFF
        code = st.field("CODE").get(self.regs["CMD_STATUS"])
        self.regs["CMD_STATUS"] = st.field("BUSY").put(1) | st.field("CODE").put(code) | st.field("SEQ").put(seq)
        for name in ("CMD_RESULT0_LO", "CMD_RESULT0_HI", "CMD_RESULT1_LO", "CMD_RESULT1_HI"):
            self.regs[name] = 0
        self._cmd = run(self, cmd)

    def _complete(self, done: Completion) -> None:
        self._cmd = None
        st = R["CMD_STATUS"]
        seq = st.field("SEQ").get(self.regs["CMD_STATUS"])
        self.regs["CMD_STATUS"] = st.field("CODE").put(int(done.code)) | st.field("SEQ").put(seq)
        self.regs["CMD_RESULT0_LO"] = done.result0 & 0xFFFFFFFF
        self.regs["CMD_RESULT0_HI"] = done.result0 >> 32 & 0xFFFFFFFF
        self.regs["CMD_RESULT1_LO"] = done.result1 & 0xFFFFFFFF
        self.regs["CMD_RESULT1_HI"] = done.result1 >> 32 & 0xFFFFFFFF
        if done.window is not None:
            self.result[: len(done.window)] = done.window
        self.regs["INT_STATUS"] |= _INT.field("CMD_DONE").mask
        self._update_irq()

    def step(self) -> bool:
        """Advance the command engine and the scrub engine by one atomic step
        each. True while either has work left."""
        if self._cmd is not None:
            try:
                next(self._cmd)
            except StopIteration as stop:
                self._complete(stop.value)
        self._scrub_step()
        return self._cmd is not None or self._scrub is not None or bool(self.chunks.scrub_fifo)

    def settle(self, limit: int = 1 << 22) -> None:
        """Run every engine until idle."""
        for _ in range(limit):
            if not self.step():
                return
        raise RuntimeError("device did not settle")

    def _scrub_step(self) -> None:
        if self._scrub is None:
            if not self.chunks.scrub_fifo:
                return
            self._scrub = (self.chunks.scrub_fifo.popleft(), 0)
        chunk, page_off = self._scrub
        page = chunk * self.cfg.pages_per_chunk + page_off
        self.mem.zero_page(page)
        if self.tracking:
            self.tables.dirty.set(page)
        self._invalidate(page)
        page_off += 1
        if page_off < self.cfg.pages_per_chunk:
            self._scrub = (chunk, page_off)
            return
        self._scrub = None
        entry = self.chunks[chunk]
        owner = entry.owner
        entry.state = ChunkState.FREE
        entry.owner = 0
        self.push_event(Event.SCRUB_DONE, chunk, owner)

    # ---------------------------------------------------------------- time
    def tick(self, n: int = 1) -> None:
        limit = R["SLOT_TIMEOUT"].field("TICKS").get(self.regs["SLOT_TIMEOUT"])
        for _ in range(n):
            self.now += 1
            if not limit:
                continue
            for index, slot in enumerate(self.slots):
                if (
                    slot.state == regs.SlotState.OPEN
                    and not slot.full
                    and not slot.timeout_reported
                    and self.now - slot.opened_at >= limit
                ):
                    slot.timeout_reported = True
                    self.push_event(Event.SLOT_TIMEOUT, index, slot.tag)

    # ------------------------------------------------------------- helpers
    def sanitize(self) -> None:
        """The CXL mailbox Sanitize: zero every byte as internal writes."""
        for page in range(self.cfg.pages):
            self.mem.zero_page(page)
            if self.tracking:
                self.tables.dirty.set(page)
            self._invalidate(page)


assert SLOT_BYTES == regs.SLOT_SIZE, "slot buffer size must match the RDL window"
