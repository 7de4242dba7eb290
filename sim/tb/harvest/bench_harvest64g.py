# SPDX-License-Identifier: Apache-2.0
"""The harvest benchmark at 64 GiB (`make bench-harvest`, sim/bench_harvest.py; not part of the regression):
HarvestBench for config/harvest64g.toml (16 Mi pages, 32 768 rows of 512 pages, one summary bit per row, dirty
bitmap only).

* dense: every page dirty, then HARVEST_DIRTY with CLEAR of the whole device as 512 commands of 32 768 pages (one
  RESULT window each). The dirty state is preset through the simulator (the table's RAM rows all ones, the live-value
  table pointing at them, every summary bit set): 16 Mi page writes at one per cycle would take this model hours,
  and a row's step costs one cycle whatever it holds. Every command must report 32 768 pages; the RESULT window of the
  first and the last is read back (all ones).
* sparse: from the clean device the dense harvest left, 1 % of the 2 MiB regions (328 of 32 768, at random) get 1-4
  page writes each through the dirty table's write-end port, then the same 512 commands. Each command's RESULT0 must
  be the pages written in its range and its busy cycles 1 (no row marked) or k + 3 (k rows).

The figure is the sum over the commands of the cycles the engine is busy (CMD_STATUS.BUSY, from the cycle after the
launch to the one in which it completes); the bench's own cycles between commands (launch, a RESULT read) are given
separately as the span.

* dense_dma, sparse_dma: the same two states (every page dirty, preset again; then the same 1 % of regions written),
  harvested with CLEAR by ONE DMA command of the whole device (docs/spec.md 5.3) into a host buffer: the 2 MiB bitmap
  as 32 768 beats of 64 bytes on the DMA port (h_axi). The host side takes AW and W at once and answers each burst
  $CXLTRACK_DMA_B_LATENCY cycles (default 200) after its last beat; the figure is the engine's busy cycles up to the
  last B response (the completion rule). The bytes written are checked: all ones (dense), exactly the pages written
  (sparse), every burst within 4 KiB and in address order.

* sparse_list, pages1pct_list, dense_list: list harvests (docs/spec.md 5.4, HARVEST_DIRTY | CLEAR | DMA | LIST of the
  whole device in one command): the same 1 % of regions written again (the records of exactly those words), then 1 %
  of all pages (167 772 of 16 Mi, uniformly at random: nearly half the 64-page words and every region non-zero), then
  every page dirty (preset; 262 144 records). The records are checked against the pages written, RESULT0 and RESULT1
  too; the host answers each burst 200 cycles after its last beat, as above.

Results go to $CXLTRACK_BENCH_OUT as JSON."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from cxltrack import regs

from ..env import seed_from_env
from .driver import DIRTY, ROW, HarvestDut, dma_command, list_records, op_value, params

WINDOW = 32768  # pages per command (HARVEST_MAX_BITMAP_PAGES)
HOST = 1 << 32  # the host buffer's bus address
B_LATENCY = int(os.environ.get("CXLTRACK_DMA_B_LATENCY", "200"))


async def harvest_dma(h: HarvestDut, written: set[int] | None) -> dict[str, int]:
    """HARVEST_DIRTY | CLEAR | DMA of the whole device in one command; `written`: the pages expected (None: all)."""
    d = h.dut
    d.h_axi_awready.value = 1
    d.h_axi_wready.value = 1
    d.h_axi_bvalid.value = 0
    d.h_axi_bresp.value = 0
    d.h_axi_bid.value = 0
    value = op_value(DIRTY, True) | regs.REGISTERS["CMD_OP"].field("DMA").put(1)
    d.io_launch_valid.value = 1
    d.io_launch_bits.value = value
    d.io_args_0.value = 0
    d.io_args_1.value = h.pages
    d.io_args_2.value = HOST
    await FallingEdge(d.clock)
    d.io_launch_valid.value = 0
    first = h.cycle
    h.cycle += 1
    nbytes = h.pages // 8
    bursts: list[tuple[int, int]] = []  # (addr, beats) in AW order
    next_w = 0  # beats received
    b_due: list[int] = []  # cycles at which the B of each completed burst is given
    burst_of_w = 0
    beat_in_burst = 0
    ones = 0
    found: set[int] = set()
    busy = 0
    while True:
        d.h_axi_bvalid.value = int(bool(b_due) and b_due[0] <= h.cycle)
        await ReadOnly()
        busy += int(d.io_busy.value)
        if int(d.h_axi_awvalid.value):
            a, n = int(d.h_axi_awaddr.value), int(d.h_axi_awlen.value) + 1
            assert (a & 0xFFF) + 64 * n <= 4096, f"burst {a:#x} x{n} crosses 4 KiB"
            assert a == HOST + 64 * sum(b for _, b in bursts), f"burst at {a:#x} out of order"
            bursts.append((a, n))
        if int(d.h_axi_wvalid.value):
            assert burst_of_w < len(bursts), "W before its AW"
            data = int(d.h_axi_wdata.value)
            assert int(d.h_axi_wstrb.value) == (1 << 64) - 1
            if written is None:
                assert data == (1 << 512) - 1, f"beat {next_w} not all ones"
                ones += 512
            elif data:
                found |= {next_w * 512 + i for i in range(512) if data >> i & 1}
            next_w += 1
            beat_in_burst += 1
            if beat_in_burst == bursts[burst_of_w][1]:
                assert int(d.h_axi_wlast.value) == 1
                b_due.append(h.cycle + B_LATENCY)
                burst_of_w += 1
                beat_in_burst = 0
        if int(d.h_axi_bvalid.value):
            b_due.pop(0)
        done = not int(d.io_busy.value)
        await FallingEdge(d.clock)
        h.cycle += 1
        if done:
            break
    code, result0 = h.status()
    assert next_w * 64 == nbytes, f"{next_w} beats written, expected {nbytes // 64}"
    assert not b_due, "done before the last B response"
    if written is None:
        assert code == 0 and result0 == h.pages and ones == h.pages, f"dense DMA: status {code}, RESULT0 {result0}"
    else:
        assert found == written, f"sparse DMA: {len(found ^ written)} pages differ"
        assert code == 0 and result0 == len(written), f"sparse DMA: status {code}, RESULT0 {result0}"
    return {
        "commands": 1,
        "busy_cycles": busy,
        "reported": result0,
        "rows": h.rows,
        "min_busy": busy,
        "max_busy": busy,
        "span_cycles": h.cycle - first,
        "bursts": len(bursts),
        "beats": next_w,
        "b_latency": B_LATENCY,
    }


async def harvest_all(h: HarvestDut, expect: dict[int, int] | None, check_lines: set[int]) -> dict[str, int]:
    """HARVEST_DIRTY with CLEAR of the whole device, one window per command. `expect`: command -> RESULT0 (None:
    every page)."""
    total_busy = reported = rows = 0
    per: list[int] = []
    first = h.cycle
    for n in range(h.pages // WINDOW):
        await h.step(launch=(op_value(DIRTY, True), n * WINDOW, WINDOW))
        busy = 0
        while True:
            await h.step()
            busy += h.busy
            if not h.busy:
                break
        code, result0 = h.status()
        want = WINDOW if expect is None else expect.get(n, 0)
        assert code == 0 and result0 == want, f"command {n}: status {code}, RESULT0 {result0}, expected {want}"
        k = 0 if busy == 1 else busy - 3
        assert busy == 1 or k >= 1, f"command {n}: {busy} busy cycles"
        if expect is None:
            assert k == WINDOW // ROW, f"command {n}: {k} rows stepped of {WINDOW // ROW}"
        total_busy += busy
        reported += result0
        rows += k
        per.append(busy)
        if n in check_lines:
            for line in range(64):
                got = await h.read_line(line)
                assert got == b"\xff" * 64, f"command {n}: RESULT line {line} not all ones"
    return {
        "commands": len(per),
        "busy_cycles": total_busy,
        "reported": reported,
        "rows": rows,
        "min_busy": min(per),
        "max_busy": max(per),
        "span_cycles": h.cycle - first,
    }


async def harvest_list(h: HarvestDut, written: set[int] | None) -> dict[str, int]:
    """HARVEST_DIRTY | CLEAR | DMA | LIST of the whole device in one command; `written`: the pages expected (None:
    all). The records must be exactly the non-zero words, in page order."""
    f = regs.REGISTERS["CMD_OP"]
    value = op_value(DIRTY, True) | f.field("DMA").put(1) | f.field("LIST").put(1)
    run = await dma_command(h, value, (0, h.pages, HOST), b_latency=B_LATENCY)
    recs = list_records(run.bytes_written())
    if written is None:
        want = [(w * 64, (1 << 64) - 1) for w in range(h.pages // 64)]
        n = h.pages
    else:
        words: dict[int, int] = {}
        for p in written:
            words[p // 64] = words.get(p // 64, 0) | 1 << (p % 64)
        want = [(w * 64, words[w]) for w in sorted(words)]
        n = len(written)
    assert recs == want, f"list: {len(recs)} records, expected {len(want)}; first difference at " + str(
        next((i for i, (a, b) in enumerate(zip(recs, want, strict=False)) if a != b), min(len(recs), len(want)))
    )
    assert (run.code, run.result0, run.result1) == (0, n, len(want)), f"list: {run.code} {run.result0} {run.result1}"
    return {
        "commands": 1,
        "busy_cycles": run.busy,
        "reported": run.result0,
        "records": run.result1,
        "rows": h.rows,
        "min_busy": run.busy,
        "max_busy": run.busy,
        "span_cycles": run.span,
        "bursts": len(run.bursts),
        "beats": len(run.beats),
        "b_latency": B_LATENCY,
    }


def preset_all_dirty(dut: Any, rows: int, packed: bool) -> None:
    """Every page dirty: the state the write-end port (port 1) leaves after writing every row: its bank replicas
    hold all ones, the live-value table names bank 1 for every row, every summary bit is set."""
    t = dut.dirty
    ones = (1 << ROW) - 1
    for m in (t.bank_1_0_ext.Memory, t.bank_1_1_ext.Memory):
        for r in range(rows):
            m[r].value = ones
    if packed:  # TrackTable packedState: bit planes of one bit per row (LVT value 1: plane 0 set, plane 1 clear)
        t.lvtP_0.value = (1 << rows) - 1
        t.lvtP_1.value = 0
        t.summaryP_0.value = (1 << rows) - 1
    else:
        for r in range(rows):
            getattr(t, f"lvt_{r}").value = 1
            getattr(t, f"summary_{r}").value = 1


@cocotb.test()
async def harvest_64gib(dut: Any) -> None:
    rng = random.Random(seed_from_env("bench_harvest64g"))
    h = HarvestDut(dut)
    await h.start()
    assert h.pages == 1 << 24 and h.rows == h.pages // ROW, f"not the 64 GiB configuration: {h.pages} pages"
    preset_all_dirty(dut, h.rows, bool(params()["packed"]))
    await h.step()
    cmds = h.pages // WINDOW
    dense = await harvest_all(h, None, {0, cmds - 1})
    # clean now: every summary bit cleared by the dense harvest's row clears
    regions = rng.sample(range(h.rows), round(h.rows / 100))
    written: set[int] = set()
    for r in regions:
        for _ in range(rng.randrange(1, 5)):
            page = r * ROW + rng.randrange(ROW)
            written.add(page)
            await h.step(sets=(page, None))
    for _ in range(3):
        await h.step()
    expect: dict[int, int] = {}
    for p in written:
        expect[p // WINDOW] = expect.get(p // WINDOW, 0) + 1
    sparse = await harvest_all(h, expect, set())
    assert sparse["reported"] == len(written) and sparse["rows"] == len(regions)
    sparse["regions_written"] = len(regions)
    sparse["pages_written"] = len(written)
    # the same two states, one DMA command each
    preset_all_dirty(dut, h.rows, bool(params()["packed"]))
    await h.step()
    dense_dma = await harvest_dma(h, None)
    for p in sorted(written):
        await h.step(sets=(p, None))
    for _ in range(3):
        await h.step()
    sparse_dma = await harvest_dma(h, written)
    # list harvests: the same sparse pattern, 1 % of all pages, every page
    for p in sorted(written):
        await h.step(sets=(p, None))
    for _ in range(3):
        await h.step()
    sparse_list = await harvest_list(h, written)
    sparse_list["regions_written"] = len(regions)
    sparse_list["pages_written"] = len(written)
    spread = set(rng.sample(range(h.pages), round(h.pages / 100)))
    for p in sorted(spread):
        await h.step(sets=(p, None))
    for _ in range(3):
        await h.step()
    pages1pct_list = await harvest_list(h, spread)
    pages1pct_list["pages_written"] = len(spread)
    preset_all_dirty(dut, h.rows, bool(params()["packed"]))
    await h.step()
    dense_list = await harvest_list(h, None)
    out = os.environ.get("CXLTRACK_BENCH_OUT")
    if out:
        result = {
            "dense": dense,
            "sparse": sparse,
            "dense_dma": dense_dma,
            "sparse_dma": sparse_dma,
            "sparse_list": sparse_list,
            "pages1pct_list": pages1pct_list,
            "dense_list": dense_list,
        }
        Path(out).write_text(json.dumps(result, indent=1))
