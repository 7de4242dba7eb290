# SPDX-License-Identifier: Apache-2.0
"""The harvest engine alone (HarvestBench) at the default configuration (65 536 pages: 128 rows of 512 pages, one
summary bit per row, three 64-row summary words): random dirty/accessed harvests with and without CLEAR over random
ranges (any 64-page alignment, up to 32 768 pages, so that rows are partly inside the range and the RESULT lines are
written at every 8-byte rotation), while pages are set on both tables before and during the commands, concentrated on
a few rows. Each command is checked against the reference of tb.harvest.driver with its exact cycle timing: the rows
stepped follow the summary as the scan saw it, RESULT0, every RESULT byte of the range (zero for the rows not
stepped; the bytes beyond the range keep their contents), and the busy cycles (1 with no row marked, k + 3 with k).
The seed is printed (CXLTRACK_SEED reproduces a run); CXLTRACK_HARVEST_CMDS sets the number of commands."""

from __future__ import annotations

import os
import random
from typing import Any

import cocotb

from cxltrack import regs

from ..env import cover, dump_coverage, seed_from_env
from .driver import ACCESSED, DIRTY, ROW, HarvestDut, Reference, dma_command, list_records, op_value

COMMANDS = int(os.environ.get("CXLTRACK_HARVEST_CMDS", "120"))
_OP_REG = regs.REGISTERS["CMD_OP"]


def bits_to_bytes(pages: set[int], start: int, count: int) -> bytes:
    value = sum(1 << (p - start) for p in pages)
    return value.to_bytes(count // 8, "little")


@cocotb.test()
async def random_harvests(dut: Any) -> None:
    rng = random.Random(seed_from_env("harvest_wide"))
    h = HarvestDut(dut)
    await h.start()
    ref = Reference()
    pages = h.pages
    window = bytearray(4096)
    tables = [DIRTY, ACCESSED] if h.has_accessed else [DIRTY]

    def random_sets(p_set: float, hot_rows: list[int]) -> tuple[int | None, int | None]:
        out: list[int | None] = []
        for _ in range(2):
            if rng.random() >= p_set:
                out.append(None)
                continue
            if hot_rows and rng.random() < 0.8:
                out.append(rng.choice(hot_rows) * ROW + rng.randrange(ROW))
            else:
                out.append(rng.randrange(pages))
        if not h.has_accessed:
            out[1] = None
        return out[0], out[1]

    async def cycle(p_set: float, hot_rows: list[int], **kw: Any) -> None:
        sets = random_sets(p_set, hot_rows)
        for table, page in enumerate(sets):
            if page is not None:
                ref.set(table, h.cycle, page)
        await h.step(sets=sets, **kw)

    for n in range(COMMANDS):
        hot_rows = [rng.randrange(h.rows) for _ in range(rng.choice([0, 1, 3, 8]))]
        for _ in range(rng.randrange(0, 80)):
            await cycle(rng.choice([0.0, 0.3, 0.9]), hot_rows)
        table = rng.choice(tables)
        clear = rng.random() < 0.7
        if n % 10 == 0:
            start, count = rng.choice([0, 64, 448, pages - 32768]), 32768
        else:
            start = rng.randrange(0, pages, 64)
            count = rng.choice([64, 512, rng.randrange(64, 32768 + 1, 64), 32768])
            count = min(count, pages - start)
        racing = rng.choice([0.0, 0.2, 0.7])
        launch_cycle = h.cycle
        await cycle(racing, hot_rows, launch=(op_value(table, clear), start, count))
        busy = 0
        while True:
            await cycle(racing, hot_rows)
            busy += h.busy
            if not h.busy:
                break
        # sets during the last cycles are recorded; the reference needs those up to the last step
        want = ref.harvest(table, start, count, clear, launch_cycle + 1)
        code, result0 = h.status()
        where = f"command {n}: table {table} start {start} count {count} clear {clear}, rows marked {want.rows}"
        assert code == 0, f"{where}: status {code}"
        assert busy == want.busy, f"{where}: busy {busy} cycles, reference {want.busy}"
        assert result0 == len(want.reported), f"{where}: RESULT0 {result0}, reference {len(want.reported)}"
        window[: count // 8] = bits_to_bytes(want.reported, start, count)
        lines = range(64) if n % 8 == 0 else range((count // 8 + 63) // 64)
        for line in lines:
            got = await h.read_line(line)
            exp = bytes(window[64 * line : 64 * line + 64])
            if got != exp:
                bad = next(k for k in range(64) if got[k] != exp[k])
                raise AssertionError(
                    f"{where}: RESULT byte {64 * line + bad}: rtl {got[bad]:#04x}, reference {exp[bad]:#04x}"
                )
        cover("harvest_wide:" + ("empty" if not want.rows else "rows"))
        if start % ROW and want.rows and want.rows[0] == start // ROW:
            cover("harvest_wide:partial_first_row")
        if len(want.rows) > 1 and want.rows[-1] - want.rows[0] >= 64 - start // ROW % 64:
            cover("harvest_wide:second_summary_word")
    dump_coverage("harvest_wide")


@cocotb.test()
async def random_list_harvests(dut: Any) -> None:
    """List harvests (docs/spec.md 5.4) over many rows: random ranges (any 64-page alignment, up to the whole device),
    with and without CLEAR, pages set on both tables before and during the commands (racing the scan, concentrated
    on a few rows so that some rows are marked and most are skipped by the summary), the DMA port stalled at random,
    some commands with a failing burst. Checked per command: the records are in page order, inside the range, each a
    non-zero word, packed without a gap (strobes); RESULT0 = their bits, RESULT1 = their number; every page set at
    least 4 cycles before the launch and not reported since (by a CLEAR harvest that ended after the set) is
    reported (property (a)); no page is reported that was never set. After a DMA error with CLEAR the next harvest
    reports the whole range."""
    rng = random.Random(seed_from_env("harvest_list"))
    h = HarvestDut(dut)
    await h.start()
    pages = h.pages
    tables = [DIRTY, ACCESSED] if h.has_accessed else [DIRTY]
    last_set: list[dict[int, int]] = [{}, {}]  # page -> cycle of its last set
    cleared: list[dict[int, int]] = [{}, {}]  # page -> end cycle of the last CLEAR harvest that reported it
    hot_rows: list[int] = []
    p_set = 0.0

    def sets_now() -> tuple[int | None, int | None]:
        out: list[int | None] = []
        for table in range(2):
            if table not in tables or rng.random() >= p_set:
                out.append(None)
                continue
            page = rng.choice(hot_rows) * ROW + rng.randrange(ROW) if hot_rows else rng.randrange(pages)
            last_set[table][page] = h.cycle
            out.append(page)
        return out[0], out[1]

    f = _OP_REG
    for n in range(COMMANDS // 2):
        hot_rows = [rng.randrange(h.rows) for _ in range(rng.choice([1, 3, 8]))]
        p_set = rng.choice([0.3, 0.9])
        for _ in range(rng.randrange(0, 60)):
            await h.step(sets=sets_now())
        table = rng.choice(tables)
        clear = rng.random() < 0.7
        start = rng.randrange(0, pages, 64)
        count = rng.choice([64, 512, rng.randrange(64, pages - start + 1, 64), pages - start])
        count = min(count, pages - start)
        fail = rng.random() < 0.15
        p_set = rng.choice([0.0, 0.2, 0.7])
        launch = h.cycle
        value = op_value(table, clear) | f.field("DMA").put(1) | f.field("LIST").put(1)
        run = await dma_command(
            h,
            value,
            (start, count, 1 << 32),
            b_latency=rng.choice([0, 5, 40]),
            stall=rng.choice([0.0, 0.3]),
            rng=rng,
            fail_burst=0 if fail else None,
            each_cycle=sets_now,
        )
        end = h.cycle
        where = f"list {n}: table {table} start {start} count {count} clear {clear}"
        in_range = range(start, start + count)
        if fail and run.beats:
            assert (run.code, run.result0, run.result1) == (9, 0, 0), f"{where}: {run.code} {run.result0}"
            if clear:  # every page of the range is marked again: a later harvest must report it
                for p in in_range:
                    last_set[table][p] = end
            cover("harvest_list:dma_error")
            continue
        recs = list_records(run.bytes_written())
        assert run.code == 0, f"{where}: status {run.code}"
        assert run.result1 == len(recs), f"{where}: RESULT1 {run.result1}, {len(recs)} records written"
        firsts = [r[0] for r in recs]
        assert firsts == sorted(set(firsts)), f"{where}: records not in page order"
        reported: set[int] = set()
        for first, bits in recs:
            assert first % 64 == 0 and start <= first < start + count and bits, f"{where}: record {first} {bits:#x}"
            reported |= {first + i for i in range(64) if bits >> i & 1}
        assert run.result0 == len(reported), f"{where}: RESULT0 {run.result0}, records hold {len(reported)}"
        ever = set(last_set[table])
        assert reported <= ever, f"{where}: pages never set reported: {sorted(reported - ever)[:8]}"
        must = {p for p in in_range if p in last_set[table] and last_set[table][p] <= launch - 4}
        must = {p for p in must if cleared[table].get(p, -1) < last_set[table][p]}
        assert must <= reported, f"{where}: lost (property (a)): {sorted(must - reported)[:8]}"
        if clear:
            for p in reported:
                cleared[table][p] = end
        cover("harvest_list:" + ("empty" if not recs else "partial_beat" if len(recs) % 4 else "whole_beats"))
        if len(recs) > 8:
            cover("harvest_list:many_rows")
    dump_coverage("harvest_list")
