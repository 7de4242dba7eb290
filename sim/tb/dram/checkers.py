# SPDX-License-Identifier: Apache-2.0
"""The checkers of the DRAM-table benches (tb.dram.driver drives DramHarvestBench): harvests and BAT commands by
property, not by cycle. With the tables in DRAM the engine waits for DRAM, so a harvest's timing depends on the
memory's latency, and the update cache may turn a region group all-dirty. What every harvest must satisfy
(docs/vectors.md, "A legal false positive"):

* no lost write: a page set at cycle t is reported by the first harvest with CLEAR covering it launched at t + 3 or
  later, unless an earlier one reported it already;
* no invented page: a reported page has a set not yet reported, or a set that raced the previous clearing harvest of
  it (launched at most 3 cycles before that harvest, or during it), or its 64-row group (32 768 pages) overflowed the
  update cache (the bench sees each overflow on `io_overflow`) at or after 3 cycles before the launch of the last
  clearing harvest of the page; that is the one legal false positive.

The checker keeps, per table, the pages with a required report, the pages whose report is optional (a racing set), the
clearing harvests done (ranges and launch cycles) and the overflows seen.

HotChecker does the same for the hotness counters, by interval: each page's counter is known to lie in [lo, hi]
(exact, lo = hi, when no increment raced the last harvest of it). An increment before the launch (3 cycles or more)
raises both ends, a racing one only hi; a harvest's report must lie in the interval and then fixes the counter again
(the step's value is the report, CLEAR or DECAY applied, plus at most the racing increments). An increment that found
the update cache full is lost but flags its group of 32 768 pages, and the group's next step makes every counter in it
at least 1 in DRAM: so such an increment raises lo to 1, and any page of a group flagged since its last harvest may
read one more than counted (1 in DRAM, plus the increments the cache still held).

BatChecker does it for the block-association table: per page, the last command that defined its entry (BAT_SET with
its payload, or BAT_CLEAR/BAT_DISCARD) and the invalidations (writes) since. A BAT_GET or BAT_DISCARD must report the
entry invalid when a write came surely after the BAT_SET took effect (at or after its completion) and surely before
the command (3 cycles or more before its launch): property (b), no false clean. It must report it valid, with the
payload of the BAT_SET, when no write came since 3 cycles before the BAT_SET's launch and no invalidation of the group
overflowed the update cache since then (an overflow makes the whole group invalid, the one legal false invalid)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

GROUP_PAGES = 512 * 64  # an overflow flag covers 64 rows of 512 pages
RACE = 3  # a set this many cycles before the launch or later may race the harvest


@dataclass
class TableState:
    required: dict[int, int] = field(default_factory=dict)  # page -> earliest set not yet reported
    last_set: dict[int, int] = field(default_factory=dict)  # page -> latest set
    optional: set[int] = field(default_factory=set)  # pages whose racing set may or may not have been reported
    clears: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, launch) of clearing harvests
    overflows: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))  # group -> cycles


class Checker:
    def __init__(self) -> None:
        self.t = [TableState(), TableState()]
        self.false_positives = 0
        self.reports = 0

    def record_set(self, table: int, cycle: int, page: int) -> None:
        s = self.t[table]
        s.required.setdefault(page, cycle)
        s.last_set[page] = cycle

    def overflow(self, table: int, cycle: int, page: int) -> None:
        self.t[table].overflows[page // GROUP_PAGES].append(cycle)

    def _last_clear(self, s: TableState, page: int) -> int:
        return max((launch for a, b, launch in s.clears if a <= page < b), default=-(10**9))

    def _licensed(self, s: TableState, page: int, done: int) -> bool:
        since = self._last_clear(s, page) - RACE
        cycles = s.overflows.get(page // GROUP_PAGES, [])
        i = bisect.bisect_left(cycles, since)
        return i < len(cycles) and cycles[i] <= done

    def harvest(
        self, table: int, start: int, count: int, clear: bool, launch: int, done: int, reported: set[int]
    ) -> None:
        """Check one harvest of [start, start + count) launched at `launch`, complete at `done`; raise on a breach."""
        s = self.t[table]
        end = start + count
        where = f"table {table} [{start}, {end}) clear {clear} launched {launch} done {done}"
        for page in sorted(reported):
            assert start <= page < end, f"{where}: page {page} reported outside the range"
            ok = (page in s.required and s.required[page] <= done) or page in s.optional
            if not ok:
                assert self._licensed(s, page, done), f"{where}: page {page} reported, never set (no overflow licence)"
                self.false_positives += 1
        self.reports += len(reported)
        for page, cycle in list(s.required.items()):
            if start <= page < end and cycle <= launch - RACE:
                assert page in reported, f"{where}: page {page} set at cycle {cycle} is not reported (a lost write)"
        if not clear:
            return
        for page in [p for p in s.required if start <= p < end and p in reported]:
            del s.required[page]
        for page in [p for p in s.optional if start <= p < end]:
            s.optional.discard(page)
        for page in reported:
            if s.last_set.get(page, -(10**9)) > launch - RACE:
                s.optional.add(page)  # a racing set: its report may have been this one or the next
        s.clears.append((start, end, launch))


@dataclass
class HotPage:
    lo: int = 0
    hi: int = 0
    last: int = -(10**9)  # launch of the last harvest that reported the page
    incs: list[list[int]] = field(default_factory=list)  # [cycle, overflowed] not yet seen by a harvest


class HotChecker:
    """The hotness counters by interval (module docstring); `hot_max` is the counters' saturation value."""

    def __init__(self, hot_max: int) -> None:
        self.max = hot_max
        self.pages: dict[int, HotPage] = {}
        self.overflows: dict[int, list[int]] = defaultdict(list)  # group -> cycles
        self.exact = 0  # reports checked against an exact value
        self.saturated = 0  # reports of the saturation value
        self.licensed = 0  # reports above the count that only an overflow explains

    def inc(self, cycle: int, page: int) -> None:
        self.pages.setdefault(page, HotPage()).incs.append([cycle, 0])

    def overflow(self, cycle: int, page: int) -> None:
        """The increment of `page` presented in `cycle` found the cache full."""
        self.pages[page].incs[-1][1] = 1
        self.overflows[page // GROUP_PAGES].append(cycle)

    def _licensed(self, page: int, since: int, done: int) -> bool:
        cycles = self.overflows.get(page // GROUP_PAGES, [])
        i = bisect.bisect_left(cycles, since - RACE)
        return i < len(cycles) and cycles[i] <= done

    def harvest(self, start: int, count: int, mode: str, launch: int, done: int, values: bytes) -> None:
        """Check one hotness harvest of [start, start + count) (`values`: a byte per page); raise on a breach."""
        assert len(values) == count
        where = f"hotness [{start}, {start + count}) {mode} launched {launch} done {done}"
        for i, got in enumerate(values):
            page = start + i
            pg = self.pages.get(page)
            if pg is None:
                if got == 0:
                    continue
                pg = self.pages[page] = HotPage()
            before = [o for c, o in pg.incs if c <= launch - RACE]
            lo = min(pg.lo + sum(1 for o in before if not o), self.max)
            if any(before):
                lo = max(lo, 1)
            hi = min(pg.hi + len(pg.incs), self.max)
            if self._licensed(page, pg.last, done):
                hi = min(hi + 1, self.max)  # max(c, 1) in DRAM, then the increments the cache held
            assert lo <= got <= hi, (
                f"{where}: page {page} reads {got}, expected {lo}..{hi} "
                f"({len(before)} increments before the launch, {len(pg.incs) - len(before)} racing)"
            )
            self.exact += lo == hi
            self.saturated += got == self.max
            self.licensed += got > min(pg.hi + len(pg.incs), self.max)
            after = 0 if mode == "clear" else got >> 1 if mode == "decay" else got
            pg.lo, pg.hi = after, min(after + len(pg.incs) - len(before), self.max)
            pg.last, pg.incs = launch, []


@dataclass
class BatPage:
    kind: str = "clear"  # the last command that defined the entry: "set" or "clear" (BAT_CLEAR, BAT_DISCARD)
    launch: int = -(10**9)
    done: int = -(10**9)
    payload: tuple[int, int] = (0, 0)  # (block, disk) of the BAT_SET
    invs: list[int] = field(default_factory=list)  # cycles of the writes since 3 cycles before `launch`


class BatChecker:
    """The association table by the order of commands and writes (module docstring)."""

    def __init__(self) -> None:
        self.pages: dict[int, BatPage] = {}
        self.overflows: dict[int, list[int]] = defaultdict(list)  # group -> cycles
        self.valid = 0  # reports of a valid entry
        self.exact_valid = 0  # of which the write-free ones that had to be valid
        self.written = 0  # reports of an entry a write surely invalidated
        self.licensed = 0  # invalid reports only an overflow explains

    def inv(self, cycle: int, page: int) -> None:
        # every page: a write that races the first BAT_SET of a page counts as well
        self.pages.setdefault(page, BatPage()).invs.append(cycle)

    def overflow(self, cycle: int, page: int) -> None:
        self.overflows[page // GROUP_PAGES].append(cycle)

    def command(
        self, op: str, page: int, launch: int, done: int, result: tuple[int, int], payload: tuple[int, int]
    ) -> None:
        """Check one BAT command (`op` a BAT_OPS key) that ran from `launch` to `done` with RESULT0/1 `result`."""
        pg = self.pages.setdefault(page, BatPage())
        where = f"BAT {op} page {page} launched {launch} done {done}"
        if op in ("get", "discard"):
            valid = bool(result[1] >> 32 & 1)
            if pg.kind == "clear":
                assert not valid, f"{where}: valid, yet the last command on the page was a clear at {pg.done}"
            else:
                surely = [c for c in pg.invs if pg.done <= c <= launch - RACE]
                maybe = [c for c in pg.invs if c > pg.launch - RACE]
                cycles = self.overflows.get(page // GROUP_PAGES, [])
                i = bisect.bisect_left(cycles, pg.launch - RACE)
                overflowed = i < len(cycles) and cycles[i] <= done
                assert not (valid and surely), (
                    f"{where}: valid, yet written at cycle {surely[0]}, after the BAT_SET of {pg.launch}..{pg.done} "
                    "(a false clean)"
                )
                if not maybe and not overflowed:
                    assert valid, f"{where}: invalid, yet nothing wrote the page since the BAT_SET of {pg.launch}"
                    self.exact_valid += 1
                self.written += bool(surely)
                self.licensed += not valid and not maybe and overflowed
            if valid:
                self.valid += 1
                got = (result[0], result[1] & 0xFFFFFFFF)
                assert got == pg.payload, f"{where}: block/disk {got}, the BAT_SET gave {pg.payload}"
            else:
                assert result == (0, 0), f"{where}: invalid, yet RESULT0/1 {result}"
        if op == "set":
            keep = [c for c in pg.invs if c > launch - RACE]
            self.pages[page] = BatPage("set", launch, done, payload, keep)
        elif op in ("clear", "discard"):
            self.pages[page] = BatPage("clear", launch, done)
