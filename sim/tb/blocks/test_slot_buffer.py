# SPDX-License-Identifier: Apache-2.0
"""SlotBuffer on its own: the bench plays the command engine (ALLOC of a FREE slot, RELEASE or MERGE of an OPEN
one, QUERY; one command at a time, merge and query only when the previous one is done), the register port (window
line read in the decode cycle, word read or write in the execute cycle, writes only to OPEN slots, a write held in
decode while `writeHold`) and the data path (random READY on the merge's AW and W, each merge write answered by a
`mergeWriteEnd` after a random delay, in order).

A reference written here (docs/spec.md section 6) is compared every cycle: every slot's state, count and tag; the
window word read (buffer bytes where the mask is set, 0 elsewhere); SLOT_FULL on the write that first makes the slot
full; SLOT_TIMEOUT per slot at the tick on which an OPEN, not full slot reaches SLOT_TIMEOUT ticks, once per
allocation; and the merge/query sequencer cycle by cycle: an unwritten line is skipped in one cycle, a written line is
read (one cycle, not when the register port reads in that cycle), then written as one AW + one W with WSTRB = its mask
(lines whose mask is empty write nothing), MERGE_DONE and the slot freed once no merge write is outstanding and the
last end is two cycles past; a query emits one mask word per line, the last with `queryDone`.

Independently of the reference's sequencer, every merge is checked byte by byte: the bench's memory applies each
merge write under its strobes to the destination page, and at MERGE_DONE the page must hold the slot's bytes where
its mask was set and the page's earlier contents everywhere else (property (c)); a query's 64 words must equal the
slot's mask. The seed is printed (CXLTRACK_SEED reproduces a run); CXLTRACK_BLOCK_CYCLES sets the length."""

from __future__ import annotations

import os
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge

from cxltrack.regs import Event, SlotState

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "SlotBuffer"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
COVERAGE_NAME = "block_slot_buffer"
SLOT_BYTES = 4096
LINE = 64
LINES = SLOT_BYTES // LINE


@dataclass
class Slot:
    state: int = SlotState.FREE
    tag: int = 0
    data: bytearray = field(default_factory=lambda: bytearray(SLOT_BYTES))
    valid: list[bool] = field(default_factory=lambda: [False] * SLOT_BYTES)
    lines: list[bool] = field(default_factory=lambda: [False] * LINES)  # written since ALLOC (even with no strobe)
    age: int = 0
    full_reported: bool = False
    timeout_reported: bool = False

    @property
    def count(self) -> int:
        return sum(self.valid)

    def clear(self) -> None:
        self.valid = [False] * SLOT_BYTES
        self.lines = [False] * LINES

    def mask(self, line: int) -> int:
        return sum(1 << b for b in range(LINE) if self.valid[line * LINE + b])


@dataclass
class Access:
    """A register-port window access between its decode and execute cycles."""

    write: bool
    slot: int
    offset: int  # byte offset of the 32-bit word in the slot
    data: int = 0
    strb: int = 0
    stage: str = "decode"


@dataclass
class Sequencer:
    state: str = "idle"  # idle, merge_read, merge_wait, merge_write, merge_drain, query_read, query_wait
    slot: int = 0
    line: int = 0
    page: int = 0
    data: bytes = b""
    strb: int = 0
    aw_done: bool = False
    w_done: bool = False
    outstanding: int = 0  # merge writes whose AW was accepted and whose end has not come
    ends: deque[int] = field(default_factory=lambda: deque([0, 0], maxlen=2))  # mergeWriteEnd of the last 2 cycles


class Checker:
    def __init__(self, dut: Any, rng: random.Random) -> None:
        p = block_params()
        self.n_slots, self.page_shift, self.addr_bits = p["slots"], p["page_shift"], p["mem_addr_bits"]
        self.pages = p["pages"]
        self.dut = dut
        self.rng = rng
        self.cycle = 0
        self.log: deque[str] = deque(maxlen=12)
        self.memory: dict[int, bytearray] = {}  # destination pages the bench's memory holds
        self.p_aw = self.p_w = 1.0
        self.delay = (1, 4)
        self.timeout = 0
        self.reset_ref()

    def reset_ref(self) -> None:
        self.slots = [Slot() for _ in range(self.n_slots)]
        self.seq = Sequencer()
        self.access: Access | None = None
        self.pending_cmd: tuple[str, int, int] | None = None
        self.merge_writes: deque[tuple[int, bytes, int]] = deque()  # AW+W accepted: (addr, data, strb) awaiting B
        self.aw_addr: int | None = None  # the current merge write's AW, accepted
        self.w_beat: tuple[bytes, int] | None = None
        self.b_due: deque[int] = deque()  # cycles at which the outstanding merge writes end
        self.expected_page: bytes = b""
        self.query_words: list[int] = []
        self.merge_count = 0

    # ------------------------------------------------------------------ drive
    def d(self, name: str, value: int) -> None:
        getattr(self.dut, name).value = value

    def out(self, name: str) -> int:
        return sig(getattr(self.dut, name))

    def drive_idle(self) -> None:
        for n in ("alloc", "release", "mergeStart", "queryStart"):
            self.d(f"io_{n}_valid", 0)
        self.d("io_window_readLine_valid", 0)
        self.d("io_window_write_valid", 0)
        self.d("io_mergeAw_ready", 0)
        self.d("io_mergeW_ready", 0)
        self.d("io_mergeWriteEnd", 0)
        self.d("io_tick", 0)

    # ------------------------------------------------------------------ one cycle
    async def step(
        self, cmd: tuple[str, int, int] | None = None, access: Access | None = None, tick: bool = False
    ) -> None:
        """Drive one cycle: an engine command (kind, slot, arg), a new window access (its decode cycle), a tick."""
        s = self.seq
        window_read = False
        execute: Access | None = None
        # The engine's commands come from CMD_OP writes, so none arrives while the register port has an access in
        # flight, and the port takes no new access in the cycle the engine starts a command.
        if self.access is not None:
            cmd = None
            if self.access.stage == "execute":
                execute = self.access
        elif access is not None and cmd is None:
            self.access = access
        decode = self.access if self.access is not None and self.access.stage == "decode" else None
        hold = s.state in ("query_read", "query_wait")
        advance = decode is not None and not (decode.write and hold)
        if decode is not None and decode.write and hold:
            cover("slot_block:write_held")
        self.drive_idle()
        if cmd is not None:
            kind, slot, arg = cmd
            if kind == "alloc":
                self.d("io_alloc_valid", 1)
                self.d("io_alloc_bits_slot", slot)
                self.d("io_alloc_bits_tag", arg)
            elif kind == "release":
                self.d("io_release_valid", 1)
                self.d("io_release_bits", slot)
            elif kind == "merge":
                self.d("io_mergeStart_valid", 1)
                self.d("io_mergeStart_bits_slot", slot)
                self.d("io_mergeStart_bits_page", arg)
            elif kind == "query":
                self.d("io_queryStart_valid", 1)
                self.d("io_queryStart_bits", slot)
        if advance and decode is not None:
            window_read = True
            self.d("io_window_readLine_valid", 1)
            self.d("io_window_readLine_bits_slot", decode.slot)
            self.d("io_window_readLine_bits_line", decode.offset // LINE)
        if execute is not None:
            self.d("io_window_slot", execute.slot)
            self.d("io_window_line", execute.offset // LINE)
            self.d("io_window_word", execute.offset % LINE // 4)
            if execute.write and self.slots[execute.slot].state == SlotState.OPEN:
                self.d("io_window_write_valid", 1)
                self.d("io_window_write_bits_data", execute.data)
                self.d("io_window_write_bits_strb", execute.strb)
        aw_ready = int(self.rng.random() < self.p_aw)
        w_ready = int(self.rng.random() < self.p_w)
        self.d("io_mergeAw_ready", aw_ready)
        self.d("io_mergeW_ready", w_ready)
        end = int(bool(self.b_due) and self.b_due[0] <= self.cycle)
        self.d("io_mergeWriteEnd", end)
        self.d("io_tick", int(tick))
        self.d("io_timeout", self.timeout)
        await settle()
        self.check(execute, window_read, aw_ready, w_ready, end, tick)
        self.advance(cmd, execute, window_read, aw_ready, w_ready, end, tick)
        if decode is not None and advance:
            decode.stage = "execute"
        elif execute is not None:
            self.access = None
        self.cycle += 1
        await next_cycle(self.dut)

    def fail(self, msg: str) -> AssertionError:
        return AssertionError(f"cycle {self.cycle}: {msg}\nlast cycles:\n" + "\n".join(self.log))

    def check(
        self, execute: Access | None, window_read: bool, aw_ready: int, w_ready: int, end: int, tick: bool
    ) -> None:
        s = self.seq
        for i, slot in enumerate(self.slots):
            view = (self.out(f"io_view_{i}_state"), self.out(f"io_view_{i}_count"), self.out(f"io_view_{i}_tag"))
            view_want = (int(slot.state), slot.count, slot.tag)
            if view != view_want:
                raise self.fail(f"slot {i}: rtl (state, count, tag) {view}, reference {view_want}")
        # window
        if execute is not None and not execute.write:
            slot = self.slots[execute.slot]
            want = sum(slot.data[execute.offset + k] << 8 * k for k in range(4) if slot.valid[execute.offset + k])
            got = self.out("io_window_readData")
            if got != want:
                raise self.fail(
                    f"window read slot {execute.slot} +{execute.offset:#x}: rtl {got:#x}, reference {want:#x}"
                )
            cover("slot_block:window_read")
        hold = int(s.state in ("query_read", "query_wait"))
        if self.out("io_window_writeHold") != hold:
            raise self.fail(f"writeHold {self.out('io_window_writeHold')}, reference {hold}")
        full = 0
        if execute is not None and execute.write and self.slots[execute.slot].state == SlotState.OPEN:
            slot = self.slots[execute.slot]
            newly = sum(1 for k in range(4) if execute.strb >> k & 1 and not slot.valid[execute.offset + k])
            full = int(slot.count + newly == SLOT_BYTES and not slot.full_reported)
        self.expect_event(
            "io_fullEvent",
            full,
            Event.SLOT_FULL,
            execute.slot if full and execute else 0,
            self.slots[execute.slot].tag if full and execute else 0,
        )
        # timeouts
        for i, slot in enumerate(self.slots):
            age = min(slot.age + 1, (1 << 32) - 1)
            fire = int(
                tick and slot.state == SlotState.OPEN and slot.count != SLOT_BYTES and not slot.timeout_reported
                and self.timeout != 0 and age >= self.timeout
            )  # fmt: skip
            self.expect_event(f"io_timeoutEvent_{i}", fire, Event.SLOT_TIMEOUT, i, slot.tag)
        # sequencer
        done = int(s.state == "merge_drain" and s.outstanding == 0 and not any(s.ends))
        if self.out("io_mergeDone") != done:
            raise self.fail(f"mergeDone {self.out('io_mergeDone')}, reference {done} ({s.state}, {s.outstanding} out)")
        self.expect_event("io_mergeEvent", done, Event.MERGE_DONE, s.slot, s.page)
        want_aw = int(s.state == "merge_write" and not s.aw_done)
        want_w = int(s.state == "merge_write" and not s.w_done)
        if (self.out("io_mergeAw_valid"), self.out("io_mergeW_valid")) != (want_aw, want_w):
            raise self.fail(
                f"merge AW/W valid {self.out('io_mergeAw_valid')}/{self.out('io_mergeW_valid')}, reference "
                f"{want_aw}/{want_w} ({s.state}, line {s.line})"
            )
        if want_aw:
            addr = ((s.page << self.page_shift) + s.line * LINE) & ((1 << self.addr_bits) - 1)
            if self.out("io_mergeAw_bits") != addr:
                raise self.fail(f"merge AW addr {self.out('io_mergeAw_bits'):#x}, reference {addr:#x}")
        if want_w:
            # bytes without a strobe are not written: only the strobed bytes must match
            under = sum(0xFF << 8 * b for b in range(LINE) if s.strb >> b & 1)
            beat = (self.out("io_mergeW_bits_data") & under, self.out("io_mergeW_bits_strb"))
            want_d = int.from_bytes(s.data, "little") & under
            if beat != (want_d, s.strb):
                raise self.fail(f"merge W line {s.line}: strb rtl {beat[1]:#x} reference {s.strb:#x}, data differs: "
                                f"{beat[0] != want_d}")  # fmt: skip
        if s.state != "idle" and s.state.startswith("merge") and self.out("io_mergePage") != s.page:
            raise self.fail(f"mergePage {self.out('io_mergePage')}, reference {s.page}")
        qv, qd = 0, 0
        qmask = 0
        if s.state == "query_read" and not self.slots[s.slot].lines[s.line]:
            qv, qd = 1, int(s.line == LINES - 1)
        elif s.state == "query_wait":
            qv, qd, qmask = 1, int(s.line == LINES - 1), s.strb
        got_q = (self.out("io_queryWord_valid"), self.out("io_queryDone"))
        if got_q != (qv, qd):
            raise self.fail(f"queryWord valid/done {got_q}, reference {(qv, qd)} ({s.state} line {s.line})")
        if qv and (self.out("io_queryWord_bits_line") != s.line or self.out("io_queryWord_bits_mask") != qmask):
            raise self.fail(
                f"query word: rtl line {self.out('io_queryWord_bits_line')} mask "
                f"{self.out('io_queryWord_bits_mask'):#x}, reference line {s.line} mask {qmask:#x}"
            )
        self.log.append(
            f"cycle {self.cycle}: seq {s.state} slot {s.slot} line {s.line} out {s.outstanding} ends {list(s.ends)} "
            f"exec {execute} read {int(window_read)} aw_rdy {aw_ready} w_rdy {w_ready} end {end} tick {int(tick)}"
        )

    def expect_event(self, prefix: str, valid: int, typ: int, index: int, arg: int) -> None:
        got_v = self.out(f"{prefix}_valid")
        if got_v != valid:
            raise self.fail(f"{prefix} valid {got_v}, reference {valid}")
        if valid:
            got = (self.out(f"{prefix}_bits_typ"), self.out(f"{prefix}_bits_index"), self.out(f"{prefix}_bits_arg"))
            if got != (int(typ), index, arg):
                raise self.fail(f"{prefix}: rtl {got}, reference {(int(typ), index, arg)}")
            cover(f"slot_block:event:{Event(typ).name}")

    # ------------------------------------------------------------------ the reference's clock edge
    def advance(
        self, cmd: tuple[str, int, int] | None, execute: Access | None, window_read: bool, aw_ready: int,
        w_ready: int, end: int, tick: bool,
    ) -> None:  # fmt: skip
        s = self.seq
        # timeouts
        for slot in self.slots:
            if tick and slot.state == SlotState.OPEN:
                slot.age = min(slot.age + 1, (1 << 32) - 1)
                if slot.count != SLOT_BYTES and not slot.timeout_reported and self.timeout and slot.age >= self.timeout:
                    slot.timeout_reported = True
                    cover("slot_block:timeout")
        if (
            tick
            and sum(
                1 for sl in self.slots if sl.state == SlotState.OPEN and sl.timeout_reported and sl.age == self.timeout
            )
            > 1
        ):
            cover("slot_block:timeout_same_tick")
        # commands
        if cmd is not None:
            kind, i, arg = cmd
            slot = self.slots[i]
            if kind == "alloc":
                self.slots[i] = Slot(state=SlotState.OPEN, tag=arg, data=slot.data)
                cover("slot_block:alloc")
                if all(sl.state != SlotState.FREE for sl in self.slots):
                    cover("slot_block:all_open")
            elif kind == "release":
                slot.state = SlotState.FREE
                slot.clear()
                cover("slot_block:release")
            elif kind == "merge":
                slot.state = SlotState.MERGING
                s.state, s.slot, s.page, s.line, s.outstanding = "merge_read", i, arg, 0, 0
                page = self.memory.setdefault(arg, bytearray(self.rng.randbytes(1 << self.page_shift)))
                want = bytearray(page)
                for b in range(SLOT_BYTES):
                    if slot.valid[b]:
                        want[b] = slot.data[b]
                self.expected_page = bytes(want)
                self.merge_count = slot.count
                cover("slot_block:merge_" + ("empty" if not slot.count else "full" if slot.count == SLOT_BYTES
                                              else "partial"))  # fmt: skip
                if any(slot.lines[ln] and not slot.mask(ln) for ln in range(LINES)):
                    cover("slot_block:merge_line_without_bytes")
            elif kind == "query":
                s.state, s.slot, s.line = "query_read", i, 0
                self.query_words = []
        # sequencer
        slot = self.slots[s.slot]
        last = s.line == LINES - 1
        granted = not window_read
        if s.state in ("merge_read", "query_read") and cmd is None:
            if not slot.lines[s.line]:
                if s.state == "query_read":
                    self.query_words.append(0)
                    if last:
                        self.finish_query()
                        s.state = "idle"
                elif last:
                    s.state = "merge_drain"
                s.line = (s.line + 1) % LINES
            elif granted:
                s.data = bytes(slot.data[s.line * LINE : (s.line + 1) * LINE])
                s.strb = slot.mask(s.line)
                s.state = "merge_wait" if s.state == "merge_read" else "query_wait"
            else:
                cover("slot_block:sequencer_read_denied")
        elif s.state == "merge_wait":
            s.aw_done = s.w_done = False
            if s.strb:
                s.state = "merge_write"
            else:
                s.state = "merge_drain" if last else "merge_read"
                s.line = (s.line + 1) % LINES
        elif s.state == "merge_write":
            aw_fire = not s.aw_done and aw_ready
            w_fire = not s.w_done and w_ready
            addr = (s.page << self.page_shift) + s.line * LINE
            if aw_fire:
                self.aw_addr = addr
            if w_fire:
                self.w_beat = (s.data, s.strb)
            s.aw_done = s.aw_done or bool(aw_ready)
            s.w_done = s.w_done or bool(w_ready)
            if aw_fire:
                s.outstanding += 1
            if s.aw_done and s.w_done:
                assert self.aw_addr is not None and self.w_beat is not None
                self.merge_writes.append((self.aw_addr, *self.w_beat))
                self.b_due.append(max(self.cycle + 1, self.b_due[-1] + 1 if self.b_due else 0)
                                  + self.rng.randint(*self.delay) - 1)  # fmt: skip
                self.aw_addr = self.w_beat = None
                s.state = "merge_drain" if last else "merge_read"
                s.line = (s.line + 1) % LINES
                if aw_fire != w_fire:
                    cover("slot_block:aw_w_split")
        elif s.state == "merge_drain" and s.outstanding == 0 and not any(s.ends):
            self.finish_merge()
        elif s.state == "query_wait":
            self.query_words.append(s.strb)
            if last:
                self.finish_query()
            s.state = "idle" if last else "query_read"
            s.line = (s.line + 1) % LINES
        if end:
            self.b_due.popleft()
            addr, data, strb = self.merge_writes.popleft()
            page = self.memory[addr >> self.page_shift]
            off = addr & ((1 << self.page_shift) - 1)
            for b in range(LINE):
                if strb >> b & 1:
                    page[off + b] = data[b]
            s.outstanding -= 1
        s.ends.append(end)
        # window write commit
        if execute is not None and execute.write:
            slot = self.slots[execute.slot]
            if slot.state == SlotState.OPEN:
                ln = execute.offset // LINE
                if not slot.lines[ln]:
                    for b in range(ln * LINE, (ln + 1) * LINE):
                        slot.valid[b] = False
                slot.lines[ln] = True
                for k in range(4):
                    if execute.strb >> k & 1:
                        slot.data[execute.offset + k] = execute.data >> 8 * k & 0xFF
                        slot.valid[execute.offset + k] = True
                if slot.count == SLOT_BYTES and not slot.full_reported:
                    slot.full_reported = True
                cover("slot_block:window_write" + ("_no_strobe" if not execute.strb else ""))
            else:
                cover("slot_block:window_write_refused")

    def finish_merge(self) -> None:
        s = self.seq
        slot = self.slots[s.slot]
        page = self.memory[s.page]
        if bytes(page) != self.expected_page:
            bad = next(b for b in range(len(page)) if page[b] != self.expected_page[b])
            raise self.fail(f"merge of slot {s.slot} into page {s.page}: byte {bad} is {page[bad]:#04x}, "
                            f"expected {self.expected_page[bad]:#04x}")  # fmt: skip
        slot.state = SlotState.FREE
        slot.clear()
        s.state = "idle"
        cover("slot_block:merge_done")

    def finish_query(self) -> None:
        slot = self.slots[self.seq.slot]
        want = [slot.mask(ln) for ln in range(LINES)]
        if self.query_words != want:
            bad = next(ln for ln in range(LINES) if self.query_words[ln] != want[ln])
            raise self.fail(f"query of slot {self.seq.slot}: line {bad} mask {self.query_words[bad]:#x}, "
                            f"slot {want[bad]:#x}")  # fmt: skip
        cover("slot_block:query_done")

    # ------------------------------------------------------------------ stimulus
    def engine_busy(self) -> bool:
        return self.seq.state != "idle"

    def random_command(self) -> tuple[str, int, int] | None:
        rng = self.rng
        if self.engine_busy():
            return None
        free = [i for i, sl in enumerate(self.slots) if sl.state == SlotState.FREE]
        opened = [i for i, sl in enumerate(self.slots) if sl.state == SlotState.OPEN]
        r = rng.random()
        if r < 0.4 and free:
            return ("alloc", free[0], rng.getrandbits(64))
        if r < 0.6 and opened:
            page = rng.randrange(self.pages) if rng.random() < 0.8 else rng.choice([0, self.pages - 1])
            return ("merge", rng.choice(opened), page)
        if r < 0.75 and opened:
            return ("release", rng.choice(opened), 0)
        return ("query", rng.randrange(self.n_slots), 0)

    def random_access(self, fill: int | None = None) -> Access:
        rng = self.rng
        opened = [i for i, sl in enumerate(self.slots) if sl.state == SlotState.OPEN]
        slot = fill if fill is not None else rng.choice(opened) if opened and rng.random() < 0.85 \
            else rng.randrange(self.n_slots)  # fmt: skip
        sl = self.slots[slot]
        if fill is not None:
            missing = [w for w in range(SLOT_BYTES // 4) if not all(sl.valid[4 * w : 4 * w + 4])]
            word = rng.choice(missing) if missing else rng.randrange(SLOT_BYTES // 4)
            return Access(True, slot, 4 * word, rng.getrandbits(32), 0xF)
        word = rng.randrange(SLOT_BYTES // 4) if rng.random() < 0.5 else rng.randrange(8) + 16 * rng.randrange(4)
        if rng.random() < 0.35:
            return Access(False, slot, 4 * word)
        strb = rng.choice([0xF, 0xF, 0x1, 0x2, 0x4, 0x8, 0x3, 0xC, 0x0, rng.randrange(16)])
        return Access(True, slot, 4 * word, rng.getrandbits(32), strb)

    async def reset(self) -> None:
        self.dut.reset.value = 1
        self.drive_idle()
        for _ in range(2):
            await FallingEdge(self.dut.clock)
        self.dut.reset.value = 0
        self.reset_ref()
        cover("slot_block:reset_mid_traffic")


async def traffic(chk: Checker, rng: random.Random, cycles: int) -> None:
    """Spans of modes: window traffic with commands, filling a slot to FULL, slow or fast merge writes, timeouts."""
    left = cycles
    reset_at = rng.randrange(cycles // 4, 3 * cycles // 4 + 1)
    while left > 0:
        mode = rng.choice(["mixed", "mixed", "fill", "slow_memory", "timeouts", "reads"])
        cover(f"slot_block:mode:{mode}")
        chk.p_aw, chk.p_w, chk.delay = (0.3, 0.4, (3, 20)) if mode == "slow_memory" else (0.9, 0.9, (1, 4))
        if mode == "timeouts":
            chk.timeout = rng.randrange(1, 6)
        elif rng.random() < 0.2:
            chk.timeout = 0
        span = min(left, rng.randrange(100, 800))
        fill = None
        if mode == "fill":
            opened = [i for i, sl in enumerate(chk.slots) if sl.state == SlotState.OPEN]
            fill = rng.choice(opened) if opened else None
            span = min(left, 5000)
        for _ in range(span):
            cmd = None
            if fill is None and rng.random() < (0.02 if mode != "reads" else 0.005):
                cmd = chk.random_command()
            elif fill is not None and chk.slots[fill].count == SLOT_BYTES and rng.random() < 0.05:
                cmd = None if chk.engine_busy() else ("merge", fill, rng.randrange(chk.pages))
                fill = None if cmd else fill
            access = None
            if chk.access is None and rng.random() < 0.7:
                if fill is not None and chk.slots[fill].state != SlotState.OPEN:
                    fill = None
                access = chk.random_access(fill)
                if mode == "reads" and rng.random() < 0.7:
                    access.write = False
            tick = rng.random() < (0.2 if mode == "timeouts" else 0.01)
            await chk.step(cmd, access, tick)
        left -= span
        if left <= cycles - reset_at < left + span:
            await drain(chk)
            await chk.reset()


async def drain(chk: Checker, limit: int = 20000) -> None:
    """Finish the command in progress and the access in flight with a fast memory."""
    chk.p_aw, chk.p_w, chk.delay = 1.0, 1.0, (1, 2)
    for _ in range(limit):
        if not chk.engine_busy() and chk.access is None and not chk.b_due:
            break
        await chk.step()
    assert not chk.engine_busy(), f"sequencer still {chk.seq.state} after {limit} cycles"
    await chk.step()


@cocotb.test()
async def random_traffic(dut: Any) -> None:
    seed = seed_from_env("slot_buffer")
    rng = random.Random(seed)
    await start(dut)
    chk = Checker(dut, rng)
    await chk.step()  # reset values: every slot FREE, count 0, tag 0
    await traffic(chk, rng, CYCLES)
    await drain(chk)
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def merge_corners(dut: Any) -> None:
    """Directed: a full slot merged (every line written), a slot whose only written line has no valid byte, a
    partial slot with the first and last byte of the page, a merge whose writes wait for READY, and a query while
    the register port reads (the sequencer's read loses to the window's)."""
    rng = random.Random(5)
    await start(dut)
    chk = Checker(dut, rng)
    await chk.step(("alloc", 0, 0x1111))
    for w in range(SLOT_BYTES // 4):  # fill slot 0 completely
        await chk.step(access=Access(True, 0, 4 * w, rng.getrandbits(32), 0xF))
        while chk.access is not None:
            await chk.step()
    assert chk.slots[0].count == SLOT_BYTES
    await chk.step(("alloc", 1, 0x2222))
    await chk.step(access=Access(True, 1, 128, 0xDEADBEEF, 0x0))  # a line written without a byte
    while chk.access is not None:
        await chk.step()
    await chk.step(("alloc", 2, 0x3333))
    for off, strb in ((0, 0x1), (SLOT_BYTES - 4, 0x8)):
        await chk.step(access=Access(True, 2, off, rng.getrandbits(32), strb))
        while chk.access is not None:
            await chk.step()
    for slot, page in ((0, 3), (1, 4), (2, chk.pages - 1)):
        chk.p_aw, chk.p_w = (0.2, 0.5) if slot == 2 else (1.0, 1.0)
        await chk.step(("merge", slot, page))
        await drain(chk)
    await chk.step(("alloc", 3, 0x4444))
    await chk.step(access=Access(True, 3, 64, 0x01020304, 0xF))
    while chk.access is not None:
        await chk.step()
    await chk.step(("query", 3, 0))
    for _ in range(200):  # window reads keep the port busy while the query wants the memory
        await chk.step(access=Access(False, 3, 64) if chk.access is None else None)
    await drain(chk)
    dump_coverage(COVERAGE_NAME)
