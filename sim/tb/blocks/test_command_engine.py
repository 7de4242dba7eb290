# SPDX-License-Identifier: Apache-2.0
"""CommandEngine on its own: the bench plays the register port (launches with random arguments, RESULT read back a line
at a time), the per-page tables (each harvest step answered two cycles later with the row as it was at the step, its
CLEAR/DECAY applied to the masked words; the summary bits of the bitmap rows, mostly "row not zero" but at random
wrong in both directions, as a write in flight leaves them; BAT payload one cycle and valid bit two cycles after the
request; words changed at random between and during commands, as traffic does), the slot buffer (slot states, counts
and tags; MERGE_DONE and the query's mask words after random delays) and the scrub engine (finish of released chunks
in release order).

A reference written here (docs/spec.md section 5) decides each command's status from its arguments and the state in
the spec's order (opcode, flags, alignment, ranges, state), and the timing from CommandEngine's description: the
check one cycle after the launch; completion in the check cycle, or for a hotness harvest of n words one step per
cycle and the done two cycles after the last step, for a bitmap harvest the summary scanned in the check cycle, one
step per marked row of the range (lowest first, from the next cycle; its words in the range as mask) and the done two
cycles after the last step or in the check cycle when no row is marked (RESULT then zero over the range),
BAT_GET/BAT_DISCARD two cycles after the check, CHUNK_LIST one RESULT word per cycle, merge and query when the slot
buffer reports done. Compared every cycle: BUSY, SEQ, status code, results, CMD_OP as launched, the done pulse, every
request to the tables (word, table, operation; BAT operation, page, payload), to the slot buffer (the lowest FREE
slot for ALLOC) and to the scrub FIFO, SCRUB_DONE with the chunk's owner, ready after the RESULT clearing. RESULT is
read back after each command and must hold exactly what it produced (the harvest answers, the query masks, the chunk
bitmap) and keep every other byte. The seed is printed (CXLTRACK_SEED reproduces a run); CXLTRACK_BLOCK_CYCLES sets
the length of the random run."""

from __future__ import annotations

import os
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import cocotb

from cxltrack import regs
from cxltrack.regs import ChunkState, Event, Op, SlotState, Status

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "CommandEngine"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
COVERAGE_NAME = "block_command_engine"
HARVESTS = (Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS)
_OP = regs.REGISTERS["CMD_OP"]
_BAT1 = regs.LAYOUTS["BAT_RESULT1"]
_QUERY0 = regs.LAYOUTS["SLOT_QUERY_RESULT0"]


@dataclass
class Running:
    """The command between its launch and its completion, as the reference sees it."""

    op: int
    clear: bool
    decay: bool
    rsvd: int
    args: tuple[int, int, int]
    value: int  # CMD_OP as written
    phase: str = "check"  # check, harvest, bat, merge, query, list
    start_cycle: int = 0
    steps: int = 0  # harvest: steps issued; list: words written
    words: int = 0  # harvest: words to step (hotness)
    rows: list[int] = field(default_factory=list)  # bitmap harvest: the marked rows still to step
    stepped: list[tuple[int, int]] = field(default_factory=list)  # bitmap harvest: (row, mask) stepped, in order
    expected: int = 0  # harvest: answers to collect
    answers: list[int] = field(default_factory=list)  # harvest: the words answered (bitmap or packed hotness)
    arrived: int = 0  # harvest: answers delivered to the engine
    merge_count: int = 0  # SLOT_MERGE, SLOT_QUERY: the slot's valid bytes at the check
    query_masks: list[tuple[int, int]] = field(default_factory=list)  # SLOT_QUERY: (line, mask) delivered
    outcome: tuple[int, int, int] | None = None  # (status, result0, result1) once decided
    window: dict[int, int] = field(default_factory=dict)  # RESULT bytes this command writes
    copy_at: int = 0  # CHUNK_COPY: the cycle the bench's DMA writer reports done
    copy_err: bool = False  # CHUNK_COPY: with a failed write


class Checker:
    def __init__(self, dut: Any, rng: random.Random) -> None:
        p = block_params()
        self.pages, self.slots_n, self.chunks = p["pages"], p["slots"], p["chunks"]
        self.words_n, self.hot_bits = p["words"], p["hot_bits"]
        self.rows_n, self.scan_rows = p["rows"], p["scan_rows"]
        self.row_bits = max(1, (self.rows_n - 1).bit_length())
        self.scan_drive = (0, 0)  # the summary scan bits driven this cycle (dirty, accessed)
        self.copies = 0  # CHUNK_COPY commands that reached the copy: the first fails, so DMA_ERROR is on every seed
        self.disk_bits, self.block_bits = p["bat_disk_bits"], p["bat_block_bits"]
        self.chunk_size, self.dma_addr_bits, self.dma_copy = 1 << p["chunk_shift"], p["dma_addr_bits"], p["dma_copy"]
        self.ops = {n: p[f"op_{n}"] for n in ("READ", "ZERO", "HALVE", "SET", "CLEAR", "INC")}
        self.dut, self.rng = dut, rng
        self.cycle = 0
        self.log: deque[str] = deque(maxlen=10)
        self.reset_ref()

    def reset_ref(self) -> None:
        # registered outputs
        self.busy, self.code, self.seq, self.result0, self.result1, self.cmd_op = False, 0, 0, 0, 0, 0
        self.init_left = 64  # RESULT clearing cycles after reset
        self.result = bytearray(regs.RESULT_SIZE)
        self.running: Running | None = None
        # the bench's tables
        self.bitmaps = {Op.HARVEST_DIRTY: [0] * self.words_n, Op.HARVEST_ACCESSED: [0] * self.words_n}
        self.hot = [[0] * 64 for _ in range(self.words_n)]
        self.bat_valid = [False] * self.pages
        self.bat_payload = [0] * self.pages
        self.answers: deque[tuple[int, str, int]] = deque()  # (cycle, kind, value) due to the engine
        # the bench's slot buffer and scrub engine
        self.slot_state = [SlotState.FREE] * self.slots_n
        self.slot_count = [0] * self.slots_n
        self.slot_tag = [0] * self.slots_n
        self.merge_done_at: int | None = None
        self.query_plan: deque[tuple[int, int, int]] = deque()  # (cycle, line, mask)
        self.chunk_state = [ChunkState.FREE] * self.chunks
        self.chunk_owner = [0] * self.chunks
        self.scrub_fifo: deque[int] = deque()
        self.scrub_next_at = 0
        self.pending_read: int | None = None  # RESULT line read this cycle, answered next cycle
        self.exp_done = 0
        self.answered_now = False

    def fail(self, msg: str) -> AssertionError:
        return AssertionError(f"cycle {self.cycle}: {msg}\nlast cycles:\n" + "\n".join(self.log))

    def d(self, name: str, v: int) -> None:
        getattr(self.dut, name).value = v

    def out(self, name: str) -> int:
        return sig(getattr(self.dut, name))

    # ------------------------------------------------------------------ the reference's decision (spec section 5)
    def decide(self, r: Running) -> str:
        """Status or the phase the command continues in; sets r.outcome for an immediate completion."""
        op, (a0, a1, a2) = r.op, r.args
        harvest = op in HARVESTS
        if op not in {int(o) for o in Op}:
            return self.done(r, Status.UNKNOWN_OP)
        if r.rsvd or ((r.clear or r.decay) and not harvest) or (r.decay and (op != Op.HARVEST_HOTNESS or r.clear)):
            return self.done(r, Status.FLAGS)
        if op == Op.CHUNK_COPY:  # spec 7.1: ALIGN, RANGE, STATE, PERM, then the copy until the writer's done
            if not self.dma_copy:
                return self.done(r, Status.FLAGS)
            if a2 % 64:
                return self.done(r, Status.ALIGN)
            if a0 >= self.chunks or a1 == 0 or a1 > regs.MAX_OWNER or a2 + self.chunk_size > 1 << self.dma_addr_bits:
                return self.done(r, Status.RANGE)
            if self.chunk_state[a0] != ChunkState.OWNED:
                return self.done(r, Status.STATE)
            if self.chunk_owner[a0] != a1:
                return self.done(r, Status.PERM)
            return "copy"
        if op == Op.NOP:
            return self.done(r, Status.OK)
        if harvest:
            limit = regs.HARVEST_MAX_HOTNESS_PAGES if op == Op.HARVEST_HOTNESS else regs.HARVEST_MAX_BITMAP_PAGES
            if a0 % regs.HARVEST_ALIGN_PAGES or a1 % regs.HARVEST_ALIGN_PAGES:
                return self.done(r, Status.ALIGN)
            if a1 == 0 or a1 > limit or a0 + a1 > self.pages:
                return self.done(r, Status.RANGE)
            r.words = a1 // 64
            if op == Op.HARVEST_HOTNESS:
                r.expected = r.words
                return "harvest"
            first, last = a0 // 512, (a0 + a1 - 1) // 512
            marks = self.scan_drive[0 if op == Op.HARVEST_DIRTY else 1]
            r.rows = [first + i for i in range(last - first + 1) if marks >> i & 1]
            r.expected = len(r.rows)
            if not r.rows:
                for b in range(a1 // 8):
                    r.window[b] = 0
                return self.done(r, Status.OK)
            return "harvest"
        if op in (Op.BAT_SET, Op.BAT_GET, Op.BAT_CLEAR, Op.BAT_DISCARD):
            if a0 >= self.pages or (op == Op.BAT_SET and (a1 >> self.block_bits or a2 >> self.disk_bits)):
                return self.done(r, Status.RANGE)
            return "bat" if op in (Op.BAT_GET, Op.BAT_DISCARD) else self.done(r, Status.OK)
        if op == Op.SLOT_ALLOC:
            free = [i for i in range(self.slots_n) if self.slot_state[i] == SlotState.FREE]
            return self.done(r, Status.OK, free[0]) if free else self.done(r, Status.NO_RESOURCE)
        if op in (Op.SLOT_MERGE, Op.SLOT_RELEASE, Op.SLOT_QUERY):
            if a0 >= self.slots_n or (op == Op.SLOT_MERGE and a1 >= self.pages):
                return self.done(r, Status.RANGE)
            if op == Op.SLOT_QUERY:
                return "query"
            if self.slot_state[a0] != SlotState.OPEN:
                return self.done(r, Status.STATE)
            return "merge" if op == Op.SLOT_MERGE else self.done(r, Status.OK)
        if op in (Op.CHUNK_ASSIGN, Op.CHUNK_RELEASE):
            if a0 >= self.chunks or a1 == 0 or a1 > regs.MAX_OWNER:
                return self.done(r, Status.RANGE)
            if op == Op.CHUNK_ASSIGN:
                ok = self.chunk_state[a0] == ChunkState.FREE
                return self.done(r, Status.OK if ok else Status.BUSY)
            if self.chunk_state[a0] != ChunkState.OWNED:
                return self.done(r, Status.STATE)
            return self.done(r, Status.OK if self.chunk_owner[a0] == a1 else Status.PERM)
        if op == Op.CHUNK_QUERY:
            if a0 >= self.chunks:
                return self.done(r, Status.RANGE)
            return self.done(r, Status.OK, self.chunk_state[a0], self.chunk_owner[a0])
        if a1 > regs.MAX_OWNER:  # CHUNK_LIST
            return self.done(r, Status.RANGE)
        return "list"

    def done(self, r: Running, status: int, r0: int = 0, r1: int = 0) -> str:
        r.outcome = (int(status), r0, r1)
        return "done"

    # ------------------------------------------------------------------ one cycle
    async def step(self, launch: tuple[int, tuple[int, int, int]] | None = None, read_line: int | None = None) -> None:
        """Drive a cycle: a launch (CMD_OP value, arguments) when idle, a RESULT line read."""
        c = self.cycle
        if launch is not None and (self.busy or self.init_left or self.running is not None):
            launch = None  # the register port launches only while not busy
        # ---- inputs
        self.d("io_launch_valid", int(launch is not None))
        if launch is not None:
            self.d("io_launch_bits", launch[0])
            for i in range(3):
                self.d(f"io_args_{i}", launch[1][i])
        hv = [a for a in self.answers if a[0] == c and a[1] == "harvest"]
        self.answered_now = bool(hv)
        self.d("io_harvestRow_valid", int(bool(hv)))
        if hv and self.running is not None:
            self.running.arrived += 1
        # a row answer drives both fields: the bitmap (512 bits) and the 64 hotness lanes (8 bits each)
        value = hv[0][2] if hv else self.rng.getrandbits(512)
        self.d("io_harvestRow_bits_bitmap", value & ((1 << 512) - 1))
        for j in range(64):
            self.d(f"io_harvestRow_bits_hotness_{j}", value >> (8 * j) & ((1 << self.hot_bits) - 1))
        self.scan_drive = self.summary_scan()
        for k in range(2):
            self.d(f"io_scanBits_{k}", self.scan_drive[k])
        payload = [a for a in self.answers if a[0] == c and a[1] == "payload"]
        self.d("io_batPayload", payload[0][2] if payload else self.rng.getrandbits(self.disk_bits + self.block_bits))
        bv = [a for a in self.answers if a[0] == c and a[1] == "valid"]
        self.d("io_batValid_valid", int(bool(bv)))
        self.d("io_batValid_bits", bv[0][2] if bv else self.rng.getrandbits(1))
        self.answers = deque(a for a in self.answers if a[0] > c)
        for i in range(self.slots_n):
            self.d(f"io_slots_{i}_state", self.slot_state[i])
            self.d(f"io_slots_{i}_count", self.slot_count[i])
            self.d(f"io_slots_{i}_tag", self.slot_tag[i])
        merge_done = int(self.merge_done_at == c)
        self.d("io_mergeDone", merge_done)
        qw = self.query_plan[0] if self.query_plan and self.query_plan[0][0] == c else None
        self.d("io_queryWord_valid", int(qw is not None))
        self.d("io_queryWord_bits_line", qw[1] if qw else 0)
        self.d("io_queryWord_bits_mask", qw[2] if qw else 0)
        self.d("io_queryDone", int(qw is not None and qw[1] == 63))
        finish = bool(self.scrub_fifo) and c >= self.scrub_next_at
        self.d("io_scrubFinish_valid", int(finish))
        self.d("io_scrubFinish_bits", self.scrub_fifo[0] if finish else 0)
        self.d("io_scrubEnq_ready", 1)
        r = self.running
        copy_done = r is not None and r.phase == "copy" and r.copy_at == c
        self.d("io_dmaDone_valid", int(copy_done))
        self.d(
            "io_dmaDone_bits", int(copy_done and r is not None and r.copy_err) if copy_done else self.rng.getrandbits(1)
        )
        self.d("io_resultRead_valid", int(read_line is not None))
        self.d("io_resultRead_bits", read_line or 0)
        await settle()
        self.compare(launch, merge_done, qw, finish)
        # ---- answers the bench owes for this cycle's requests
        if self.out("io_harvest_valid"):
            self.table_step(c)
        if self.out("io_bat_valid"):
            self.bat_request(c)
        if self.pending_read is not None:
            got = bytes(self.out(f"io_resultLine_{k}") for k in range(64))
            want = bytes(self.result[self.pending_read * 64 : (self.pending_read + 1) * 64])
            if got != want:
                bad = next(k for k in range(64) if got[k] != want[k])
                raise self.fail(f"RESULT line {self.pending_read} byte {bad}: rtl {got[bad]:#04x}, reference "
                                f"{want[bad]:#04x}")  # fmt: skip
            cover("engine_block:result_read")
        self.pending_read = read_line
        self.traffic()
        self.advance(launch, merge_done, qw, finish)
        self.cycle += 1
        await next_cycle(self.dut)

    def compare(self, launch: Any, merge_done: int, qw: Any, finish: bool) -> None:
        r = self.running
        want = {
            "io_busy": int(self.busy),
            "io_code": self.code,
            "io_seq": self.seq,
            "io_result0": self.result0,
            "io_result1": self.result1,
            "io_cmdOp": self.cmd_op,
            "io_ready": int(not self.init_left),
            "io_idle": int(not self.init_left and r is None),
        }
        got = {k: self.out(k) for k in want}
        if got != want:
            raise self.fail(f"registers: rtl {got}\n  reference {want}")
        # requests and completion this cycle
        exp_done = 0
        exp_harvest: tuple[int, int, int, int] | None = None
        exp_bat: tuple[int, int, int] | None = None
        exp_alloc = exp_release = exp_merge = exp_query = exp_enq = None
        exp_copy: int | None = None  # CHUNK_COPY's start: the chunk
        self.expect_valid("io_copying", int(r is not None and r.phase == "copy"))
        if r is not None:
            if r.phase == "check":
                phase = self.decide(r)
                a0, a1, a2 = r.args
                if phase == "done":
                    exp_done = 1
                    if r.op == Op.BAT_SET and r.outcome and r.outcome[0] == Status.OK:
                        exp_bat = (self.ops["SET"], a0, (a2 << self.block_bits) | a1)
                    if r.op == Op.BAT_CLEAR and r.outcome and r.outcome[0] == Status.OK:
                        exp_bat = (self.ops["CLEAR"], a0, 0)
                    if r.op == Op.SLOT_ALLOC and r.outcome and r.outcome[0] == Status.OK:
                        exp_alloc = (r.outcome[1], a0)
                    if r.op == Op.SLOT_RELEASE and r.outcome and r.outcome[0] == Status.OK:
                        exp_release = a0
                    if r.op == Op.CHUNK_RELEASE and r.outcome and r.outcome[0] == Status.OK:
                        exp_enq = a0
                elif phase == "bat":
                    exp_bat = (self.ops["READ" if r.op == Op.BAT_GET else "CLEAR"], a0, 0)
                elif phase == "merge":
                    exp_merge = (a0, a1)
                    r.merge_count = self.slot_count[a0]
                elif phase == "query":
                    exp_query = a0
                    r.merge_count = self.slot_count[a0]  # RESULT0 reports the count at the check
                elif phase == "copy":
                    exp_copy = a0
                    r.copy_at = self.cycle + self.rng.randrange(1, 40)
                    r.copy_err = self.copies == 0 or self.rng.random() < 0.25
                    self.copies += 1
                r.phase = phase
                r.start_cycle = self.cycle
            elif r.phase == "harvest":
                op = "ZERO" if r.clear else "HALVE" if r.decay else "READ"
                if r.op == Op.HARVEST_HOTNESS and r.steps < r.words:
                    exp_harvest = (r.args[0] // 64 + r.steps, r.op & 3, self.ops[op], 1)
                    r.steps += 1
                elif r.op != Op.HARVEST_HOTNESS and r.rows:
                    row = r.rows.pop(0)
                    w0, w1 = r.args[0] // 64, (r.args[0] + r.args[1]) // 64
                    mask = sum(1 << j for j in range(8) if w0 <= 8 * row + j < w1)
                    exp_harvest = (row, r.op & 3, self.ops[op], mask)
                    r.stepped.append((row, mask))
                if r.arrived == r.expected and self.answered_now:
                    self.finish_harvest(r)
                    exp_done = 1
            elif r.phase == "bat" and self.cycle == r.start_cycle + 2:
                exp_done = 1
            elif r.phase == "merge" and merge_done:
                r.outcome = (Status.OK, r.merge_count, 0)
                exp_done = 1
            elif r.phase == "query" and qw is not None and qw[1] == 63:
                self.finish_query(r)
                exp_done = 1
            elif r.phase == "copy" and self.cycle == r.copy_at:
                r.outcome = (Status.DMA_ERROR, 0, 0) if r.copy_err else (Status.OK, self.chunk_size, 0)
                cover(f"engine_block:CHUNK_COPY:{'dma_error' if r.copy_err else 'ok'}")
                exp_done = 1
            elif r.phase == "list":
                groups = (self.chunks + 63) // 64
                if r.steps == groups - 1:
                    self.finish_list(r)
                    exp_done = 1
                r.steps += 1
        self.exp_done = exp_done
        self.expect_valid("io_done", exp_done)
        self.expect_fields("io_harvest", exp_harvest, ("row", "table", "op", "mask"))
        if r is not None and r.phase in ("harvest", "done") and r.op in HARVESTS[:2] and self.cycle == r.start_cycle:
            row_mask = (1 << self.row_bits) - 1
            if self.out("io_scanRow") != (r.args[0] >> 9) & row_mask:
                raise self.fail(f"io_scanRow {self.out('io_scanRow')}, reference {(r.args[0] >> 9) & row_mask}")
        self.expect_fields(
            "io_bat", exp_bat, ("op", "page", "data"), skip_data=exp_bat is not None and exp_bat[0] != self.ops["SET"]
        )
        self.expect_fields("io_slotAlloc", exp_alloc, ("slot", "tag"))
        self.expect_one("io_slotRelease", exp_release)
        self.expect_fields("io_mergeStart", exp_merge, ("slot", "page"))
        self.expect_one("io_queryStart", exp_query)
        self.expect_one("io_scrubEnq", exp_enq)
        self.expect_one("io_copyStart", exp_copy)
        self.expect_valid("io_dmaStart_valid", int(exp_copy is not None))
        if exp_copy is not None:
            a2 = r.args[2] if r is not None else 0
            start = (self.out("io_dmaStart_bits_addr"), self.out("io_dmaStart_bits_stream"))
            if start != (a2, 1):
                raise self.fail(f"CHUNK_COPY's DMA start: rtl (addr, stream) {start}, reference {(a2, 1)}")
        self.expect_valid("io_scrubEvent_valid", int(finish))
        if finish:
            chunk = self.scrub_fifo[0]
            event = (self.out("io_scrubEvent_bits_typ"), self.out("io_scrubEvent_bits_index"),
                     self.out("io_scrubEvent_bits_arg"))  # fmt: skip
            if event != (Event.SCRUB_DONE, chunk, self.chunk_owner[chunk]):
                raise self.fail(
                    f"SCRUB_DONE: rtl {event}, reference {(Event.SCRUB_DONE, chunk, self.chunk_owner[chunk])}"
                )
        self.log.append(f"cycle {self.cycle}: {r} done {exp_done}")

    def expect_valid(self, name: str, want: int) -> None:
        if self.out(name) != want:
            raise self.fail(f"{name} {self.out(name)}, reference {want} (running {self.running})")

    def expect_one(self, prefix: str, want: int | None) -> None:
        self.expect_valid(f"{prefix}_valid", int(want is not None))
        if want is not None and self.out(f"{prefix}_bits") != want:
            raise self.fail(f"{prefix}: rtl {self.out(f'{prefix}_bits')}, reference {want}")

    def expect_fields(
        self, prefix: str, want: tuple[int, ...] | None, names: tuple[str, ...], skip_data: bool = False
    ) -> None:
        self.expect_valid(f"{prefix}_valid", int(want is not None))
        if want is None:
            return
        got = tuple(self.out(f"{prefix}_bits_{n}") for n in names)
        if skip_data:
            got, want = got[:-1], want[:-1]
        if got != want:
            rtl, ref = dict(zip(names, got, strict=False)), dict(zip(names, want, strict=False))
            raise self.fail(f"{prefix}: rtl {rtl}, reference {ref}")

    # ------------------------------------------------------------------ the bench as tables, slots, scrub
    def summary_scan(self) -> tuple[int, int]:
        """The summary bits the tables show this cycle for rows from the running command's first row: a row is
        marked when it is not zero, but one in ten is wrong (either way), as a write in flight leaves it. Random when
        no bitmap harvest is in its check cycle (the engine must not care then)."""
        r = self.running
        if r is None or r.phase != "check" or r.op not in HARVESTS[:2]:
            return self.rng.getrandbits(self.scan_rows), self.rng.getrandbits(self.scan_rows)
        first = (r.args[0] >> 9) & ((1 << self.row_bits) - 1)
        out = []
        for op in HARVESTS[:2]:
            bits = 0
            for i in range(self.scan_rows):
                row = first + i
                words = self.bitmaps[op][8 * row : 8 * row + 8] if row < self.rows_n else []
                marked = any(words)
                if self.rng.random() < 0.1:
                    marked = not marked
                    cover("engine_block:summary_stale")
                bits |= int(marked) << i
            out.append(bits)
        return out[0], out[1]

    def table_step(self, c: int) -> None:
        word = self.out("io_harvest_bits_row")
        table, op = self.out("io_harvest_bits_table"), self.out("io_harvest_bits_op")
        mask = self.out("io_harvest_bits_mask")
        if table == 3:
            lanes = self.hot[word]
            value = sum(v << (8 * j) for j, v in enumerate(lanes))
            if op == self.ops["ZERO"]:
                self.hot[word] = [0] * 64
            elif op == self.ops["HALVE"]:
                self.hot[word] = [v >> 1 for v in lanes]
        else:
            bitmap = self.bitmaps[Op(table)]
            value = 0
            for j in range(8):
                w = 8 * word + j
                if w < self.words_n:
                    value |= bitmap[w] << (64 * j)
                    if op == self.ops["ZERO"] and mask >> j & 1:
                        bitmap[w] = 0
        self.answers.append((c + 2, "harvest", value))
        assert self.running is not None
        self.running.answers.append(value)

    def bat_request(self, c: int) -> None:
        op, page, data = self.out("io_bat_bits_op"), self.out("io_bat_bits_page"), self.out("io_bat_bits_data")
        if op != self.ops["SET"]:
            self.answers.append((c + 1, "payload", self.bat_payload[page]))
        self.answers.append((c + 2, "valid", int(self.bat_valid[page])))
        r = self.running
        if r is not None and r.phase == "bat":
            valid = self.bat_valid[page]
            block, disk = (
                self.bat_payload[page] & ((1 << self.block_bits) - 1),
                self.bat_payload[page] >> self.block_bits,
            )
            r.outcome = (Status.OK, block, _BAT1.field("DISK").put(disk) | _BAT1.field("VALID").put(1)) if valid \
                else (Status.OK, 0, 0)  # fmt: skip
            cover(f"engine_block:{Op(r.op).name}:{'valid' if valid else 'invalid'}")
        if op == self.ops["SET"]:
            self.bat_valid[page], self.bat_payload[page] = True, data
        elif op == self.ops["CLEAR"]:
            self.bat_valid[page] = False

    def traffic(self) -> None:
        """Table words change between and during commands, as memory requests change them."""
        rng = self.rng
        if rng.random() < 0.3:
            w, lane = rng.randrange(self.words_n), rng.randrange(64)
            kind = rng.randrange(3)
            if kind < 2:
                self.bitmaps[HARVESTS[kind]][w] |= 1 << lane
            else:
                self.hot[w][lane] = min(self.hot[w][lane] + rng.randrange(1, 4), (1 << self.hot_bits) - 1)
        if rng.random() < 0.05:
            self.bat_valid[rng.randrange(self.pages)] = False

    def finish_harvest(self, r: Running) -> None:
        total = 0
        if r.op != Op.HARVEST_HOTNESS:  # rows not stepped read zero
            for b in range(r.args[1] // 8):
                r.window[b] = 0
        start_word = r.args[0] // 64
        for k, value in enumerate(r.answers):
            if r.op == Op.HARVEST_HOTNESS:
                lanes = [value >> (8 * j) & 0xFF for j in range(64)]
                for j, v in enumerate(lanes):
                    r.window[64 * k + j] = v
                total += sum(1 for v in lanes if v)
            else:
                row, mask = r.stepped[k]
                for j in range(8):
                    if mask >> j & 1:
                        bits = value >> (64 * j) & ((1 << 64) - 1)
                        for b in range(8):
                            r.window[8 * (8 * row + j - start_word) + b] = bits >> 8 * b & 0xFF
                        total += bin(bits).count("1")
        r.outcome = (Status.OK, total, 0)
        cover(f"engine_block:{Op(r.op).name}:OK" + (":clear" if r.clear else ":decay" if r.decay else ""))

    def finish_query(self, r: Running) -> None:
        slot = r.args[0]
        for line, mask in r.query_masks:
            for j in range(8):
                r.window[8 * line + j] = mask >> 8 * j & 0xFF
        count = r.merge_count
        q0 = _QUERY0.field("STATE").put(self.slot_state[slot]) | _QUERY0.field("VALID_BYTES").put(count) \
            | _QUERY0.field("FULL").put(int(count == regs.SLOT_SIZE))  # fmt: skip
        r.outcome = (Status.OK, q0, self.slot_tag[slot])

    def finish_list(self, r: Running) -> None:
        owner = r.args[1]
        bits = [
            (self.chunk_state[c] == ChunkState.FREE) if owner == 0
            else (self.chunk_state[c] == ChunkState.OWNED and self.chunk_owner[c] == owner)
            for c in range(self.chunks)
        ]  # fmt: skip
        for b in range((self.chunks + 7) // 8):
            r.window[b] = sum(1 << j for j in range(8) if 8 * b + j < self.chunks and bits[8 * b + j])
        r.outcome = (Status.OK, sum(bits), 0)

    # ------------------------------------------------------------------ the reference's clock edge
    def advance(self, launch: Any, merge_done: int, qw: Any, finish: bool) -> None:
        if self.init_left:
            self.init_left -= 1
            if not self.init_left:
                cover("engine_block:result_cleared")
        if finish:
            chunk = self.scrub_fifo.popleft()
            self.chunk_state[chunk], self.chunk_owner[chunk] = ChunkState.FREE, 0
            self.scrub_next_at = self.cycle + self.rng.randrange(1, 40)
            cover("engine_block:scrub_done")
        if qw is not None:
            self.query_plan.popleft()
        r = self.running
        if r is not None and self.exp_done:
            self.complete(r)
        elif r is not None:
            if r.phase == "merge" and self.merge_done_at is None:
                self.slot_state[r.args[0]] = SlotState.MERGING
                self.merge_done_at = self.cycle + self.rng.randrange(1, 30)
            if r.phase == "query" and not self.query_plan and not r.query_masks:
                t = self.cycle + 1
                for line in range(64):
                    t += self.rng.choice([0, 0, 0, 1, 3])
                    mask = self.rng.getrandbits(64) if self.rng.random() < 0.5 else 0
                    self.query_plan.append((t, line, mask))
                    r.query_masks.append((line, mask))
                    t += 1
        if launch is not None:
            value, args = launch
            self.running = Running(
                op=_OP.field("OP").get(value), clear=bool(_OP.field("CLEAR").get(value)),
                decay=bool(_OP.field("DECAY").get(value)), rsvd=_OP.field("RSVD").get(value), args=args, value=value,
            )  # fmt: skip
            self.busy, self.seq = True, (self.seq + 1) & 0xFFFF
            self.result0 = self.result1 = 0
            self.cmd_op = value

    def complete(self, r: Running) -> None:
        assert r.outcome is not None
        status, r0, r1 = r.outcome
        self.busy, self.code, self.result0, self.result1 = False, int(status), r0, r1
        for off, v in r.window.items():
            self.result[off] = v
        a0, a1, _ = r.args
        if status == Status.OK:
            if r.op == Op.SLOT_ALLOC:
                self.slot_state[r0], self.slot_tag[r0], self.slot_count[r0] = SlotState.OPEN, a0, 0
            elif r.op == Op.SLOT_RELEASE:
                self.slot_state[a0], self.slot_count[a0] = SlotState.FREE, 0
            elif r.op == Op.SLOT_MERGE:
                self.slot_state[a0], self.slot_count[a0] = SlotState.FREE, 0
                self.merge_done_at = None
            elif r.op == Op.CHUNK_ASSIGN:
                self.chunk_state[a0], self.chunk_owner[a0] = ChunkState.OWNED, a1
            elif r.op == Op.CHUNK_RELEASE:
                self.chunk_state[a0] = ChunkState.SCRUBBING
                self.scrub_fifo.append(a0)
                if len(self.scrub_fifo) == 1:
                    self.scrub_next_at = self.cycle + self.rng.randrange(1, 40)
        name = Op(r.op).name if r.op in {int(o) for o in Op} else "unknown"
        cover(f"engine_block:{name}:{Status(status).name}")
        self.running = None

    # ------------------------------------------------------------------ stimulus
    def random_launch(self) -> tuple[int, tuple[int, int, int]]:
        rng = self.rng
        ops = [int(o) for o in Op]
        op = rng.choice(ops) if rng.random() < 0.97 else rng.choice([0x04, 0x7F, 0xFF, 0x34])
        clear = rng.random() < 0.3
        decay = rng.random() < (0.3 if op == Op.HARVEST_HOTNESS else 0.03)
        rsvd = 1 if rng.random() < 0.02 else 0
        value = _OP.field("OP").put(op) | _OP.field("CLEAR").put(int(clear)) | _OP.field("DECAY").put(int(decay)) \
            | _OP.field("RSVD").put(rsvd << rng.randrange(5))  # fmt: skip
        pages, edge = self.pages, rng.random() < 0.1
        if op in HARVESTS:
            a0 = rng.randrange(0, pages, 64) if not edge else rng.choice([1, pages, 1 << 40])
            a1 = rng.choice([64, 128, pages - a0 if a0 < pages else 64]) if not edge else \
                rng.choice([0, 65, pages + 64, regs.HARVEST_MAX_HOTNESS_PAGES + 64])  # fmt: skip
            return value, (a0, a1, 0)
        if op in (Op.BAT_SET, Op.BAT_GET, Op.BAT_CLEAR, Op.BAT_DISCARD):
            page = rng.randrange(pages) if not edge else rng.choice([pages, pages - 1, 1 << 63])
            block = rng.getrandbits(self.block_bits) if rng.random() < 0.95 else 1 << self.block_bits
            disk = rng.getrandbits(self.disk_bits) if rng.random() < 0.95 else 1 << self.disk_bits
            return value, (page, block, disk)
        if op in (Op.SLOT_ALLOC, Op.SLOT_MERGE, Op.SLOT_RELEASE, Op.SLOT_QUERY):
            slot = rng.randrange(self.slots_n) if not edge else rng.choice([self.slots_n, 1 << 40])
            return value, (slot if op != Op.SLOT_ALLOC else rng.getrandbits(64), rng.randrange(pages + 1), 0)
        chunk = rng.randrange(self.chunks) if not edge else rng.choice([self.chunks, 1 << 33])
        owner = rng.randrange(1, 4) if rng.random() < 0.9 else rng.choice([0, regs.MAX_OWNER, regs.MAX_OWNER + 1])
        if op == Op.CHUNK_LIST and rng.random() < 0.3:
            owner = 0
        host = 0
        if op == Op.CHUNK_COPY:  # a host bus address: mostly aligned, at times unaligned or at the top of 2^64
            host = rng.getrandbits(40) << 6
            if rng.random() < 0.15:
                host = rng.choice([host | rng.randrange(1, 64), (1 << 64) - rng.choice([64, self.chunk_size])])
        return value, (chunk, owner, host)


async def run(chk: Checker, rng: random.Random, cycles: int) -> None:
    for _ in range(cycles):
        launch = read = None
        if chk.running is None and not chk.busy and rng.random() < 0.3:
            launch = chk.random_launch()
        elif chk.running is None and rng.random() < 0.5:
            read = rng.randrange(64)
        for i in range(chk.slots_n):  # the register port fills open slots
            if chk.slot_state[i] == SlotState.OPEN and rng.random() < 0.05:
                chk.slot_count[i] = min(regs.SLOT_SIZE, chk.slot_count[i] + rng.choice([1, 4, 8, 2048]))
        await chk.step(launch, read)


@cocotb.test()
async def random_commands(dut: Any) -> None:
    seed = seed_from_env("command_engine")
    rng = random.Random(seed)
    await start(dut)
    chk = Checker(dut, rng)
    for _ in range(70):  # RESULT clearing after reset; accesses are not taken before it ends
        await chk.step()
    for line in range(64):
        await chk.step(read_line=line)
    await run(chk, rng, CYCLES)
    for _ in range(200):
        if chk.running is None:
            break
        await chk.step()
    for line in range(64):
        await chk.step(read_line=line)
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def directed(dut: Any) -> None:
    """The largest harvest of each table with CLEAR and DECAY, every chunk owned then listed and released, every
    slot allocated then NO_RESOURCE, a BAT_DISCARD of a valid and of an invalid entry."""
    rng = random.Random(9)
    await start(dut)
    chk = Checker(dut, rng)
    for _ in range(70):
        await chk.step()

    def put(op: int, clear: bool = False, decay: bool = False) -> int:
        return _OP.field("OP").put(op) | _OP.field("CLEAR").put(int(clear)) | _OP.field("DECAY").put(int(decay))

    async def cmd(value: int, *args: int) -> None:
        a = [*args, 0, 0, 0][:3]
        await chk.step((value, (a[0], a[1], a[2])))
        while chk.running is not None:
            await chk.step()
        for line in range(64):
            await chk.step(read_line=line)

    for w in range(chk.words_n):
        chk.bitmaps[Op.HARVEST_DIRTY][w] = rng.getrandbits(64)
        chk.hot[w] = [rng.randrange(1 << chk.hot_bits) for _ in range(64)]
    await cmd(put(Op.HARVEST_DIRTY, clear=True), 0, chk.pages)
    await cmd(put(Op.HARVEST_HOTNESS, decay=True), 0, chk.pages)
    await cmd(put(Op.HARVEST_HOTNESS, clear=True), 0, chk.pages)
    for c in range(chk.chunks):
        await cmd(put(Op.CHUNK_ASSIGN), c, 1 + c % 3)
    await cmd(put(Op.CHUNK_LIST), 0, 2)
    await cmd(put(Op.CHUNK_LIST), 0, 0)
    for c in range(chk.chunks):
        await cmd(put(Op.CHUNK_RELEASE), c, 1 + c % 3)
    for _ in range(chk.slots_n + 1):
        await cmd(put(Op.SLOT_ALLOC), 7)
    await cmd(put(Op.BAT_SET), 5, 9, 1)
    await cmd(put(Op.BAT_DISCARD), 5)
    await cmd(put(Op.BAT_DISCARD), 5)
    for _ in range(50 * chk.chunks):  # every released chunk scrubbed
        await chk.step()
    await cmd(put(Op.CHUNK_LIST), 0, 0)
    dump_coverage(COVERAGE_NAME)
