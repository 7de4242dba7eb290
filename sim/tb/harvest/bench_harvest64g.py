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
separately as the span. Results go to $CXLTRACK_BENCH_OUT as JSON."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import cocotb

from ..env import seed_from_env
from .driver import DIRTY, ROW, HarvestDut, op_value, params

WINDOW = 32768  # pages per command (HARVEST_MAX_BITMAP_PAGES)


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
    out = os.environ.get("CXLTRACK_BENCH_OUT")
    if out:
        Path(out).write_text(json.dumps({"dense": dense, "sparse": sparse}, indent=1))
