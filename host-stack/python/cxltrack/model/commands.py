# SPDX-License-Identifier: Apache-2.0
"""The command engine (docs/spec.md section 5).

Each command runs as a generator: every `yield` is a point where other
requests may interleave, and everything between two yields is one atomic step
of the hardware (one 64-page harvest word, one 64-byte merge line). Commands
without a yield are atomic as a whole.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cxltrack import regs
from cxltrack.regs import ChunkState, Event, Op, SlotState, Status

from .tables import WORD, Association

if TYPE_CHECKING:
    from .device import Device

MAX_BITMAP = regs.HARVEST_MAX_BITMAP_PAGES  # one bit per page in RESULT
MAX_HOTNESS = regs.HARVEST_MAX_HOTNESS_PAGES  # one byte per page in RESULT
ALIGN = regs.HARVEST_ALIGN_PAGES
DMA_ALIGN = 64  # bytes: ARG2 of a DMA harvest (docs/spec.md section 5.3)
MAX_OWNER = regs.MAX_OWNER
_BAT1 = regs.LAYOUTS["BAT_RESULT1"]
_SQ0 = regs.LAYOUTS["SLOT_QUERY_RESULT0"]


@dataclass(frozen=True)
class Completion:
    code: Status
    result0: int = 0
    result1: int = 0
    window: bytes | None = None  # bytes written at RESULT offset 0


@dataclass(frozen=True)
class Launch:
    op: int
    clear: bool
    decay: bool
    rsvd: int
    dma: bool
    arg0: int
    arg1: int
    arg2: int
    list: bool = False  # CMD_OP.LIST (section 5.4)


Steps = Generator[None, None, Completion]

HARVESTS = {Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS}
LISTS = {Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED}  # the harvests LIST applies to (section 5.4)
RECORD = regs.DMA_LIST_RECORD_BYTES


def run(dev: Device, cmd: Launch) -> Steps:
    """Validate, then execute. Validation order: opcode, flags, alignment,
    ranges, state (docs/spec.md section 5)."""
    try:
        op = Op(cmd.op)
    except ValueError:
        return Completion(Status.UNKNOWN_OP)
    if cmd.rsvd or ((cmd.clear or cmd.decay) and op not in HARVESTS):
        return Completion(Status.FLAGS)
    if cmd.decay and (op != Op.HARVEST_HOTNESS or cmd.clear):
        return Completion(Status.FLAGS)
    if cmd.dma and (op not in HARVESTS or not dev.dma_addr_bits):
        return Completion(Status.FLAGS)
    if cmd.list and (not cmd.dma or op not in LISTS or not dev.dma_list):
        return Completion(Status.FLAGS)
    if op == Op.CHUNK_COPY and not dev.dma_copy:
        return Completion(Status.FLAGS)
    handler = _HANDLERS.get(op)
    if handler is None:
        return Completion(Status.OK)  # NOP
    result = yield from handler(dev, cmd)
    return result


def _harvest_range(dev: Device, cmd: Launch, limit: int, nbytes: int) -> Status | None:
    """ALIGN and RANGE of a harvest; nbytes = what a DMA harvest writes to host memory."""
    start, count = cmd.arg0, cmd.arg1
    if start % ALIGN or count % ALIGN or (cmd.dma and cmd.arg2 % DMA_ALIGN):
        return Status.ALIGN
    if count == 0 or start + count > dev.cfg.pages:
        return Status.RANGE
    if not cmd.dma and count > limit:  # RESULT's size; a DMA harvest may cover the whole device
        return Status.RANGE
    if cmd.dma and cmd.arg2 + nbytes > 1 << dev.dma_addr_bits:  # also catches a wrap of 2^64
        return Status.RANGE
    return None


def _dma_done(cmd: Launch, ok: bool, result0: int, remark: Callable[[], None], result1: int = 0) -> Completion:
    """The end of a DMA harvest (docs/spec.md section 5.3): after every step and every write.
    A failed write costs the host the range's data, so the range is marked again (never lose a
    dirty bit), as the steps left it. result1: records written by a list harvest (5.4)."""
    if ok:
        return Completion(Status.OK, result0, result1, None)
    remark()
    return Completion(Status.DMA_ERROR, 0, 0, None)


def _harvest_bits(dev: Device, cmd: Launch) -> Steps:
    # with LIST the buffer must hold the worst case, one record per word (section 5.4)
    nbytes = cmd.arg1 // WORD * RECORD if cmd.list else cmd.arg1 // 8
    err = _harvest_range(dev, cmd, MAX_BITMAP, nbytes)
    if err is not None:
        return Completion(err)
    bitmap = dev.tables.dirty if cmd.op == Op.HARVEST_DIRTY else dev.tables.accessed
    out = bytearray()
    total = 0
    records = 0
    ok = True
    first = cmd.arg0 // WORD
    for word in range(first, (cmd.arg0 + cmd.arg1) // WORD):
        value = bitmap.take_word(word, cmd.clear)
        data = value.to_bytes(8, "little")
        total += value.bit_count()
        if cmd.list:
            if value:  # a record per non-zero word, packed in page order
                rec = (word * WORD).to_bytes(8, "little") + data
                ok = dev.host.dma_write(cmd.arg2 + RECORD * records, rec) and ok
                records += 1
        elif cmd.dma:
            # The engine runs every step even after a failed write (the design's rule).
            ok = dev.host.dma_write(cmd.arg2 + 8 * (word - first), data) and ok
        else:
            out += data
        yield
    if not cmd.dma:
        return Completion(Status.OK, total, 0, bytes(out))

    def remark() -> None:
        if cmd.clear:
            for word in range(first, (cmd.arg0 + cmd.arg1) // WORD):
                bitmap.words[word] = (1 << WORD) - 1

    return _dma_done(cmd, ok, total, remark, records)


def _harvest_hotness(dev: Device, cmd: Launch) -> Steps:
    err = _harvest_range(dev, cmd, MAX_HOTNESS, cmd.arg1)
    if err is not None:
        return Completion(err)
    hot = dev.tables.hot
    out = bytearray()
    nonzero = 0
    ok = True
    for base in range(cmd.arg0, cmd.arg0 + cmd.arg1, WORD):
        chunk = bytes(hot[base : base + WORD])
        nonzero += sum(1 for c in chunk if c)
        if cmd.clear:
            hot[base : base + WORD] = bytes(WORD)
        elif cmd.decay:
            hot[base : base + WORD] = bytes(c >> 1 for c in chunk)
        if cmd.dma:
            ok = dev.host.dma_write(cmd.arg2 + base - cmd.arg0, chunk) and ok
        else:
            out += chunk
        yield
    if not cmd.dma:
        return Completion(Status.OK, nonzero, 0, bytes(out))

    def remark() -> None:
        if cmd.clear or cmd.decay:
            for page in range(cmd.arg0, cmd.arg0 + cmd.arg1):
                hot[page] = max(hot[page], 1)

    return _dma_done(cmd, ok, nonzero, remark)


def _page_ok(dev: Device, page: int) -> bool:
    return page < dev.cfg.pages


def _bat_result(disk: int, valid: bool) -> int:
    return _BAT1.field("DISK").put(disk) | _BAT1.field("VALID").put(int(valid))


def _bat_set(dev: Device, cmd: Launch) -> Steps:
    page, block, disk = cmd.arg0, cmd.arg1, cmd.arg2
    cfg = dev.cfg
    if not _page_ok(dev, page) or block >> cfg.bat_block_bits or disk >> cfg.bat_disk_bits:
        return Completion(Status.RANGE)
    dev.tables.bat[page] = Association(disk, block)
    return Completion(Status.OK)
    yield  # pragma: no cover - makes this a generator


def _bat_get(dev: Device, cmd: Launch) -> Steps:
    if not _page_ok(dev, cmd.arg0):
        return Completion(Status.RANGE)
    entry = dev.tables.bat.get(cmd.arg0)
    if entry is None:
        return Completion(Status.OK, 0, _bat_result(0, False))
    return Completion(Status.OK, entry.block, _bat_result(entry.disk, True))
    yield  # pragma: no cover


def _bat_clear(dev: Device, cmd: Launch) -> Steps:
    if not _page_ok(dev, cmd.arg0):
        return Completion(Status.RANGE)
    dev.tables.bat.pop(cmd.arg0, None)
    return Completion(Status.OK)
    yield  # pragma: no cover


def _bat_discard(dev: Device, cmd: Launch) -> Steps:
    if not _page_ok(dev, cmd.arg0):
        return Completion(Status.RANGE)
    entry = dev.tables.bat.pop(cmd.arg0, None)  # read and clear: one atomic step
    if entry is None:
        return Completion(Status.OK, 0, 0)
    return Completion(Status.OK, entry.block, _bat_result(entry.disk, True))
    yield  # pragma: no cover


def _slot_alloc(dev: Device, cmd: Launch) -> Steps:
    for index, slot in enumerate(dev.slots):
        if slot.state == SlotState.FREE:
            slot.open(cmd.arg0, dev.now)
            return Completion(Status.OK, index)
    return Completion(Status.NO_RESOURCE)
    yield  # pragma: no cover


def _slot_merge(dev: Device, cmd: Launch) -> Steps:
    index, page = cmd.arg0, cmd.arg1
    if index >= len(dev.slots) or not _page_ok(dev, page):
        return Completion(Status.RANGE)
    slot = dev.slots[index]
    if slot.state != SlotState.OPEN:
        return Completion(Status.STATE)
    slot.state = SlotState.MERGING
    base = page << dev.cfg.page_shift
    valid = slot.valid_bytes
    for line in range(regs.SLOT_SIZE // 64):
        data, enables = slot.line(line)
        if any(enables):
            dev.internal_write(base + line * 64, data, enables)
        yield
    slot.free()
    dev.push_event(Event.MERGE_DONE, index, page)
    return Completion(Status.OK, valid)


def _slot_release(dev: Device, cmd: Launch) -> Steps:
    if cmd.arg0 >= len(dev.slots):
        return Completion(Status.RANGE)
    slot = dev.slots[cmd.arg0]
    if slot.state != SlotState.OPEN:
        return Completion(Status.STATE)
    slot.free()
    return Completion(Status.OK)
    yield  # pragma: no cover


def _slot_query(dev: Device, cmd: Launch) -> Steps:
    if cmd.arg0 >= len(dev.slots):
        return Completion(Status.RANGE)
    slot = dev.slots[cmd.arg0]
    r0 = (
        _SQ0.field("STATE").put(int(slot.state))
        | _SQ0.field("FULL").put(int(slot.full))
        | _SQ0.field("VALID_BYTES").put(slot.valid_bytes)
    )
    mask = slot.mask.to_bytes(512, "little")
    return Completion(Status.OK, r0, slot.tag, mask)
    yield  # pragma: no cover


def _chunk_args(dev: Device, cmd: Launch, owner_may_be_zero: bool) -> bool:
    lowest = 0 if owner_may_be_zero else 1
    return cmd.arg0 < len(dev.chunks) and lowest <= cmd.arg1 <= MAX_OWNER


def _chunk_assign(dev: Device, cmd: Launch) -> Steps:
    if not _chunk_args(dev, cmd, False):
        return Completion(Status.RANGE)
    chunk = dev.chunks[cmd.arg0]
    if chunk.state != ChunkState.FREE:
        return Completion(Status.BUSY)
    chunk.state = ChunkState.OWNED
    chunk.owner = cmd.arg1
    return Completion(Status.OK)
    yield  # pragma: no cover


def _not_owned(dev: Device, cmd: Launch) -> Status | None:
    """The state checks of a command by owner ARG1 on its chunk ARG0 (CHUNK_RELEASE, CHUNK_COPY):
    STATE unless the chunk is OWNED, then PERM unless ARG1 owns it."""
    chunk = dev.chunks[cmd.arg0]
    if chunk.state != ChunkState.OWNED:
        return Status.STATE
    if chunk.owner != cmd.arg1:
        return Status.PERM
    return None


def _chunk_release(dev: Device, cmd: Launch) -> Steps:
    if not _chunk_args(dev, cmd, False):
        return Completion(Status.RANGE)
    bad = _not_owned(dev, cmd)
    if bad is not None:
        return Completion(bad)
    chunk = dev.chunks[cmd.arg0]
    chunk.state = ChunkState.SCRUBBING
    dev.chunks.scrub_fifo.append(cmd.arg0)
    return Completion(Status.OK)
    yield  # pragma: no cover


def _chunk_query(dev: Device, cmd: Launch) -> Steps:
    if cmd.arg0 >= len(dev.chunks):
        return Completion(Status.RANGE)
    chunk = dev.chunks[cmd.arg0]
    return Completion(Status.OK, int(chunk.state), chunk.owner)
    yield  # pragma: no cover


def _chunk_list(dev: Device, cmd: Launch) -> Steps:
    owner = cmd.arg1
    if owner > MAX_OWNER:
        return Completion(Status.RANGE)
    bits = 0
    for i, chunk in enumerate(dev.chunks.chunks):
        free = owner == 0 and chunk.state == ChunkState.FREE
        mine = owner != 0 and chunk.state == ChunkState.OWNED and chunk.owner == owner
        if free or mine:
            bits |= 1 << i
    nbytes = (len(dev.chunks) + 7) // 8
    return Completion(Status.OK, bits.bit_count(), 0, bits.to_bytes(nbytes, "little"))
    yield  # pragma: no cover


def _chunk_copy(dev: Device, cmd: Launch) -> Steps:
    """CHUNK_COPY (docs/spec.md section 7.1): the chunk's bytes to host memory by DMA, one
    64-byte line per step. The engine's reads are not requests: no dirty, accessed, hotness or
    association effect, so a copy can neither hide a write nor make the whole tier look hot."""
    if cmd.arg2 % DMA_ALIGN:
        return Completion(Status.ALIGN)
    size = dev.cfg.chunk_size
    if not _chunk_args(dev, cmd, False) or cmd.arg2 + size > 1 << dev.dma_addr_bits:
        return Completion(Status.RANGE)
    bad = _not_owned(dev, cmd)
    if bad is not None:
        return Completion(bad)
    base = cmd.arg0 << dev.cfg.chunk_shift
    ok = True
    for off in range(0, size, 64):
        # Every line is read and written even after a failed write: the status reports it.
        ok = dev.host.dma_write(cmd.arg2 + off, dev.mem.read(base + off, 64)) and ok
        yield
    if not ok:
        return Completion(Status.DMA_ERROR, 0, 0, None)
    return Completion(Status.OK, size, 0, None)


_HANDLERS = {
    Op.HARVEST_DIRTY: _harvest_bits,
    Op.HARVEST_ACCESSED: _harvest_bits,
    Op.HARVEST_HOTNESS: _harvest_hotness,
    Op.BAT_SET: _bat_set,
    Op.BAT_GET: _bat_get,
    Op.BAT_CLEAR: _bat_clear,
    Op.BAT_DISCARD: _bat_discard,
    Op.SLOT_ALLOC: _slot_alloc,
    Op.SLOT_MERGE: _slot_merge,
    Op.SLOT_RELEASE: _slot_release,
    Op.SLOT_QUERY: _slot_query,
    Op.CHUNK_ASSIGN: _chunk_assign,
    Op.CHUNK_RELEASE: _chunk_release,
    Op.CHUNK_QUERY: _chunk_query,
    Op.CHUNK_LIST: _chunk_list,
    Op.CHUNK_COPY: _chunk_copy,
}
