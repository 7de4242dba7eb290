# SPDX-License-Identifier: Apache-2.0
# Generated from regmap/cxltrack.rdl by regmap/regmap_gen.py. Do not edit.
"""Register map of the cxltrack tracker (BAR0 of PCI function 1)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    sw: str
    woclr: bool
    reset: int

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def get(self, value: int) -> int:
        return (value >> self.lsb) & ((1 << self.width) - 1)

    def put(self, value: int) -> int:
        if value >> self.width:
            raise ValueError(f'{self.name}: {value:#x} does not fit in {self.width} bits')
        return value << self.lsb


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    fields: tuple[Field, ...]

    @property
    def reset(self) -> int:
        return sum(f.reset << f.lsb for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f'{self.name} has no field {name}')


PCI_VENDOR_ID: Final = 0x1b36
PCI_DEVICE_ID: Final = 0xc7e
PCI_MEM_DEVICE_ID: Final = 0xc7f
BAR: Final = 0x0
BAR_SIZE: Final = 0x20000
HARVEST_ALIGN_PAGES: Final = 0x40
MSIX_VECTORS: Final = 0x1
HARVEST_MAX_BITMAP_PAGES: Final = 0x8000
HARVEST_MAX_HOTNESS_PAGES: Final = 0x1000
DMA_LIST_RECORD_BYTES: Final = 0x10
MAX_OWNER: Final = 0xffff
MAX_CHUNKS: Final = 0x8000
# Legal range (min, max) of each configuration field (docs/spec.md section 1.1)
CONFIG_RANGES: Final[dict[str, tuple[int, int]]] = {
    'capacity_bytes': (0x1, 0x400000000000),
    'page_shift': (0xc, 0x15),
    'slots': (0x1, 0x10),
    'hot_bits': (0x1, 0x8),
    'evq_depth_log2': (0x2, 0xc),
    'chunk_shift': (0xc, 0x1e),
    'bat_disk_bits': (0x1, 0x10),
    'bat_block_bits': (0x1, 0x30),
    'tick_ns': (0x1, 0xffffffff),
}


class ChunkState(IntEnum):
    FREE = 0x00  # Unowned and zero-filled (or never used since reset).
    OWNED = 0x01  # Assigned to OWNER.
    SCRUBBING = 0x02  # Released; being zero-filled.


class Event(IntEnum):
    NONE = 0x00  # Queue empty (EVT registers read as zero).
    SLOT_FULL = 0x01  # Every byte of slot INDEX is valid; ARG = tag.
    SLOT_TIMEOUT = 0x02  # Slot INDEX stayed open and not full for SLOT_TIMEOUT ticks; ARG = tag.
    MERGE_DONE = 0x03  # Merge of slot INDEX finished; ARG = destination page.
    SCRUB_DONE = 0x04  # Chunk INDEX is zero-filled and free; ARG = previous owner.
    BAT_INVALIDATED = 0x05  # A write cleared page ARG's association (only with CTRL.BAT_INV_EVT_EN).
    ERROR = 0x06  # An ERR_STATUS bit was set; INDEX = bit number, ARG = offending BAR offset.


class Op(IntEnum):
    NOP = 0x00  # Do nothing; completes with OK.
    HARVEST_DIRTY = 0x01  # Copy dirty bits of ARG0 (start page) .. +ARG1 (count) into RESULT; CLEAR clears them atomically.
    HARVEST_ACCESSED = 0x02  # As HARVEST_DIRTY for the accessed bitmap.
    HARVEST_HOTNESS = 0x03  # Copy one hotness byte per page into RESULT; CLEAR zeroes, DECAY halves the counters.
    BAT_SET = 0x10  # Associate page ARG0 with block ARG1 of disk ARG2; sets VALID.
    BAT_GET = 0x11  # Read the association of page ARG0: RESULT0 = block, RESULT1 = disk | VALID<<32; 0 and 0 if it is invalid.
    BAT_CLEAR = 0x12  # Clear the association of page ARG0.
    BAT_DISCARD = 0x13  # Discard-if-clean: atomically, if page ARG0's association is VALID, clear it and answer CLEAN (RESULT1 bit 32).
    SLOT_ALLOC = 0x20  # Open a free write-buffer slot tagged ARG0; RESULT0 = slot index.
    SLOT_MERGE = 0x21  # Write slot ARG0 into page ARG1 under its byte-valid mask, then free the slot; RESULT0 = valid byte count.
    SLOT_RELEASE = 0x22  # Free slot ARG0, dropping its contents.
    SLOT_QUERY = 0x23  # RESULT0 = state | FULL<<8 | valid bytes<<32, RESULT1 = tag, RESULT = 512-byte mask of slot ARG0.
    CHUNK_ASSIGN = 0x30  # Give free chunk ARG0 to owner ARG1 (1..65535).
    CHUNK_RELEASE = 0x31  # Owner ARG1 releases chunk ARG0: the chunk is scrubbed (zero-filled) in the background, then freed (SCRUB_DONE event).
    CHUNK_QUERY = 0x32  # RESULT0 = state of chunk ARG0, RESULT1 = owner.
    CHUNK_LIST = 0x33  # RESULT = bitmap of chunks owned by ARG1 (0: free chunks); RESULT0 = their count.
    CHUNK_COPY = 0x34  # Copy chunk ARG0 of owner ARG1 by DMA to host bus address ARG2 (CAP_DMA.COPY); RESULT0 = bytes written. No tracking effects.


class SlotState(IntEnum):
    FREE = 0x00  # Not allocated; window writes are refused.
    OPEN = 0x01  # Allocated; window writes land in the buffer and set mask bits.
    MERGING = 0x02  # A SLOT_MERGE is copying the slot out; window writes are refused.


class Status(IntEnum):
    OK = 0x00  # Command completed.
    UNKNOWN_OP = 0x01  # OP is not a defined opcode.
    RANGE = 0x02  # A page, count, slot, chunk, block, disk or owner argument is out of range.
    ALIGN = 0x03  # A harvest start or count is not a multiple of 64 pages.
    BUSY = 0x04  # The slot or chunk is not free (or is being scrubbed).
    STATE = 0x05  # The slot or chunk is in the wrong state for this command.
    NO_RESOURCE = 0x06  # No free slot.
    PERM = 0x07  # The chunk belongs to another owner.
    FLAGS = 0x08  # CLEAR/DECAY given to a command that takes none, both given, DMA given to a command that takes none or to a device without CAP_DMA.PRESENT, LIST without DMA, on a command other than HARVEST_DIRTY/HARVEST_ACCESSED or on a device without CAP_DMA.LIST, CHUNK_COPY on a device without CAP_DMA.COPY, or RSVD not 0.
    DMA_ERROR = 0x09  # A DMA write of the harvest's result to host memory failed; the range's bits were marked again (docs/spec.md section 5.3).


REGISTERS: Final[dict[str, Register]] = {
    'ID': Register('ID', 0x0, (Field('MAGIC', 0, 32, 'r', False, 0x43584c54),)),
    'VERSION': Register('VERSION', 0x4, (Field('MINOR', 0, 16, 'r', False, 0x3), Field('MAJOR', 16, 16, 'r', False, 0x1),)),
    'CAP_PAGES_LO': Register('CAP_PAGES_LO', 0x8, (Field('PAGES', 0, 32, 'r', False, 0x0),)),
    'CAP_PAGES_HI': Register('CAP_PAGES_HI', 0xc, (Field('PAGES', 0, 32, 'r', False, 0x0),)),
    'CAP_GEOM': Register('CAP_GEOM', 0x10, (Field('PAGE_SHIFT', 0, 6, 'r', False, 0x0), Field('NUM_SLOTS', 8, 5, 'r', False, 0x0), Field('HOT_BITS', 16, 4, 'r', False, 0x0), Field('EVQ_DEPTH_LOG2', 24, 4, 'r', False, 0x0),)),
    'CAP_CHUNK': Register('CAP_CHUNK', 0x14, (Field('CHUNK_SHIFT', 0, 6, 'r', False, 0x0), Field('NUM_CHUNKS', 8, 24, 'r', False, 0x0),)),
    'CAP_BAT': Register('CAP_BAT', 0x18, (Field('DISK_BITS', 0, 8, 'r', False, 0x0), Field('BLOCK_BITS', 8, 8, 'r', False, 0x0),)),
    'CAP_TICK': Register('CAP_TICK', 0x1c, (Field('TICK_NS', 0, 32, 'r', False, 0x0),)),
    'CTRL': Register('CTRL', 0x20, (Field('TRACK_EN', 0, 1, 'rw', False, 0x1), Field('BAT_INV_EVT_EN', 1, 1, 'rw', False, 0x0),)),
    'SLOT_TIMEOUT': Register('SLOT_TIMEOUT', 0x24, (Field('TICKS', 0, 32, 'rw', False, 0x0),)),
    'CAP_DMA': Register('CAP_DMA', 0x28, (Field('PRESENT', 0, 1, 'r', False, 0x0), Field('LIST', 1, 1, 'r', False, 0x0), Field('COPY', 2, 1, 'r', False, 0x0), Field('ADDR_BITS', 8, 8, 'r', False, 0x0),)),
    'INT_STATUS': Register('INT_STATUS', 0x30, (Field('EVQ', 0, 1, 'r', False, 0x0), Field('CMD_DONE', 1, 1, 'rw', True, 0x0), Field('ERROR', 2, 1, 'rw', True, 0x0),)),
    'INT_ENABLE': Register('INT_ENABLE', 0x34, (Field('EVQ', 0, 1, 'rw', False, 0x0), Field('CMD_DONE', 1, 1, 'rw', False, 0x0), Field('ERROR', 2, 1, 'rw', False, 0x0),)),
    'ERR_STATUS': Register('ERR_STATUS', 0x40, (Field('BAD_REG', 0, 1, 'rw', True, 0x0), Field('BAD_WIDTH', 1, 1, 'rw', True, 0x0), Field('CMD_OVERRUN', 2, 1, 'rw', True, 0x0), Field('SLOT_WRITE', 3, 1, 'rw', True, 0x0), Field('EVQ_OVERFLOW', 4, 1, 'rw', True, 0x0),)),
    'ERR_ADDR': Register('ERR_ADDR', 0x44, (Field('OFFSET', 0, 32, 'r', False, 0x0),)),
    'ERR_COUNT': Register('ERR_COUNT', 0x48, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'CMD_ARG0_LO': Register('CMD_ARG0_LO', 0x80, (Field('VALUE', 0, 32, 'rw', False, 0x0),)),
    'CMD_ARG0_HI': Register('CMD_ARG0_HI', 0x84, (Field('VALUE', 0, 32, 'rw', False, 0x0),)),
    'CMD_ARG1_LO': Register('CMD_ARG1_LO', 0x88, (Field('VALUE', 0, 32, 'rw', False, 0x0),)),
    'CMD_ARG1_HI': Register('CMD_ARG1_HI', 0x8c, (Field('VALUE', 0, 32, 'rw', False, 0x0),)),
    'CMD_ARG2_LO': Register('CMD_ARG2_LO', 0x90, (Field('VALUE', 0, 32, 'rw', False, 0x0),)),
    'CMD_ARG2_HI': Register('CMD_ARG2_HI', 0x94, (Field('VALUE', 0, 32, 'rw', False, 0x0),)),
    'CMD_OP': Register('CMD_OP', 0xa0, (Field('OP', 0, 8, 'rw', False, 0x0), Field('CLEAR', 8, 1, 'rw', False, 0x0), Field('DECAY', 9, 1, 'rw', False, 0x0), Field('DMA', 10, 1, 'rw', False, 0x0), Field('LIST', 11, 1, 'rw', False, 0x0), Field('RSVD', 12, 20, 'rw', False, 0x0),)),
    'CMD_STATUS': Register('CMD_STATUS', 0xa4, (Field('BUSY', 0, 1, 'r', False, 0x0), Field('CODE', 8, 8, 'r', False, 0x0), Field('SEQ', 16, 16, 'r', False, 0x0),)),
    'CMD_RESULT0_LO': Register('CMD_RESULT0_LO', 0xa8, (Field('VALUE', 0, 32, 'r', False, 0x0),)),
    'CMD_RESULT0_HI': Register('CMD_RESULT0_HI', 0xac, (Field('VALUE', 0, 32, 'r', False, 0x0),)),
    'CMD_RESULT1_LO': Register('CMD_RESULT1_LO', 0xb0, (Field('VALUE', 0, 32, 'r', False, 0x0),)),
    'CMD_RESULT1_HI': Register('CMD_RESULT1_HI', 0xb4, (Field('VALUE', 0, 32, 'r', False, 0x0),)),
    'EVQ_COUNT': Register('EVQ_COUNT', 0x100, (Field('COUNT', 0, 16, 'r', False, 0x0),)),
    'EVQ_DROPPED': Register('EVQ_DROPPED', 0x104, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'EVQ_POP': Register('EVQ_POP', 0x108, (Field('POP', 0, 1, 'w', False, 0x0),)),
    'EVT_HEAD0': Register('EVT_HEAD0', 0x110, (Field('TYPE', 0, 8, 'r', False, 0x0), Field('INDEX', 16, 16, 'r', False, 0x0),)),
    'EVT_HEAD1': Register('EVT_HEAD1', 0x114, (Field('SEQ', 0, 32, 'r', False, 0x0),)),
    'EVT_ARG_LO': Register('EVT_ARG_LO', 0x118, (Field('ARG', 0, 32, 'r', False, 0x0),)),
    'EVT_ARG_HI': Register('EVT_ARG_HI', 0x11c, (Field('ARG', 0, 32, 'r', False, 0x0),)),
    'STAT_READS_LO': Register('STAT_READS_LO', 0x200, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'STAT_READS_HI': Register('STAT_READS_HI', 0x204, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'STAT_WRITES_LO': Register('STAT_WRITES_LO', 0x208, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'STAT_WRITES_HI': Register('STAT_WRITES_HI', 0x20c, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'STAT_DECERR': Register('STAT_DECERR', 0x210, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
    'STAT_BAT_INV': Register('STAT_BAT_INV', 0x214, (Field('COUNT', 0, 32, 'r', False, 0x0),)),
}
LAYOUTS: Final[dict[str, Register]] = {
    'BAT_RESULT1': Register('BAT_RESULT1', 0x0, (Field('DISK', 0, 16, 'r', False, 0x0), Field('VALID', 32, 1, 'r', False, 0x0),)),
    'SLOT_QUERY_RESULT0': Register('SLOT_QUERY_RESULT0', 0x8, (Field('STATE', 0, 2, 'r', False, 0x0), Field('FULL', 8, 1, 'r', False, 0x0), Field('VALID_BYTES', 32, 13, 'r', False, 0x0),)),
    'CHUNK_QUERY_RESULT0': Register('CHUNK_QUERY_RESULT0', 0x10, (Field('STATE', 0, 2, 'r', False, 0x0),)),
}

ID: Final = 0x000
VERSION: Final = 0x004
CAP_PAGES_LO: Final = 0x008
CAP_PAGES_HI: Final = 0x00c
CAP_GEOM: Final = 0x010
CAP_CHUNK: Final = 0x014
CAP_BAT: Final = 0x018
CAP_TICK: Final = 0x01c
CTRL: Final = 0x020
SLOT_TIMEOUT: Final = 0x024
CAP_DMA: Final = 0x028
INT_STATUS: Final = 0x030
INT_ENABLE: Final = 0x034
ERR_STATUS: Final = 0x040
ERR_ADDR: Final = 0x044
ERR_COUNT: Final = 0x048
CMD_ARG0_LO: Final = 0x080
CMD_ARG0_HI: Final = 0x084
CMD_ARG1_LO: Final = 0x088
CMD_ARG1_HI: Final = 0x08c
CMD_ARG2_LO: Final = 0x090
CMD_ARG2_HI: Final = 0x094
CMD_OP: Final = 0x0a0
CMD_STATUS: Final = 0x0a4
CMD_RESULT0_LO: Final = 0x0a8
CMD_RESULT0_HI: Final = 0x0ac
CMD_RESULT1_LO: Final = 0x0b0
CMD_RESULT1_HI: Final = 0x0b4
EVQ_COUNT: Final = 0x100
EVQ_DROPPED: Final = 0x104
EVQ_POP: Final = 0x108
EVT_HEAD0: Final = 0x110
EVT_HEAD1: Final = 0x114
EVT_ARG_LO: Final = 0x118
EVT_ARG_HI: Final = 0x11c
STAT_READS_LO: Final = 0x200
STAT_READS_HI: Final = 0x204
STAT_WRITES_LO: Final = 0x208
STAT_WRITES_HI: Final = 0x20c
STAT_DECERR: Final = 0x210
STAT_BAT_INV: Final = 0x214

RESULT: Final = 0x01000
RESULT_SIZE: Final = 0x1000
RESULT_COUNT: Final = 1
RESULT_STRIDE: Final = 0x1000
SLOT: Final = 0x10000
SLOT_SIZE: Final = 0x1000
SLOT_COUNT: Final = 16
SLOT_STRIDE: Final = 0x1000
