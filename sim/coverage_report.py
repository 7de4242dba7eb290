# SPDX-License-Identifier: Apache-2.0
"""Functional coverage of the RTL regression: merges the per-test JSON counters that the benches
write and lists what was hit, plus the goal points that were not."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from cxltrack import regs

GOALS = (
    [f"cmd:{op.name}:OK" for op in regs.Op]
    + [
        f"cmd:{n}"
        for n in (
            "HARVEST_DIRTY:ALIGN",
            "HARVEST_DIRTY:RANGE",
            "HARVEST_HOTNESS:FLAGS",
            "BAT_SET:RANGE",
            "SLOT_ALLOC:NO_RESOURCE",
            "SLOT_MERGE:STATE",
            "SLOT_RELEASE:STATE",
            "CHUNK_ASSIGN:BUSY",
            "CHUNK_RELEASE:PERM",
            "CHUNK_RELEASE:STATE",
            "CHUNK_LIST:RANGE",
        )
    ]
    + [f"event:{e.name}" for e in regs.Event if e.name != "NONE"]
    + [
        "race:harvest_split",
        "race:discard_clean",
        "race:discard_dirty",
        "race:merge_partial",
        "race:merge_full",
        "race:summary_before_scan",
        "race:summary_scan_to_row",
        "race:summary_row_clear_cycle",
        "race:summary_clean_after_scan",
        # DMA harvest (sim/tb/test_dma.py, test_races.py, blocks/test_dma_writer.py)
        "race:harvest_split:dma",
        "race:summary_before_scan_dma",
        "race:summary_scan_to_row_dma",
        "race:summary_row_clear_cycle_dma",
        "race:summary_clean_after_scan_dma",
        "cmd:HARVEST_DIRTY:DMA_ERROR",
        "cmd:HARVEST_HOTNESS:DMA_ERROR",
        "dma:same_as_result:HARVEST_DIRTY",
        "dma:error:decerr:HARVEST_DIRTY",
        "dma:error:slverr:HARVEST_HOTNESS",
        # CHUNK_COPY (sim/tb/test_chunks.py, test_vectors.py, blocks/test_copy_engine.py, test_data_path.py,
        # test_command_engine.py)
        "cmd:CHUNK_COPY:DMA_ERROR",
        "cmd:CHUNK_COPY:PERM",
        "chunk_copy_race:write_same",
        "chunk_copy_race:lines_raced",
        "chunk_copy_race:scrub_beside",
        "copy_block:copy_done",
        "copy_block:credits_exhausted",
        "copy_block:data_stall",
        "datapath_block:copy_ar:after_wait",
        "datapath_block:copy_ar_waits",
        "datapath_block:copy_r_beat:during_decerr",
        "datapath_block:copy_beat_checked",
        "datapath_block:read_checked",
        "datapath_block:read_raced",
        "engine_block:CHUNK_COPY:DMA_ERROR",
        "burst_to_4k_boundary",
        "max_outstanding",
        "error_resp",
        "partial_last_beat",
        "harvest_wide:empty",
        "harvest_wide:partial_first_row",
        "harvest_wide:second_summary_word",
        "slot:full",
        "slot:merge",
        "slot:timeout_batch",
        "slot:refused_write",
        "evq:overflow",
        "errors:cmd_overrun",
        "irq:msi",
        "mem:read_decerr",
        "mem:write_decerr",
        "ctrl:track_disabled",
    ]
    # block bench of EventQueue (sim/tb/blocks/test_event_queue.py)
    + [
        f"evq_block:{n}"
        for n in (
            "overflow",
            "overflow_multi",
            "pop_push_full",
            "pop_empty",
            "all_ports",
            "fill_exact",
            "seq_wrap",
            "dropped_saturated",
            "reset_mid_traffic",
        )
    ]
    # block bench of ScrubEngine (sim/tb/blocks/test_scrub_engine.py)
    + [
        f"scrub_block:{n}"
        for n in (
            "finish",
            "back_to_back",
            "fifo_full",
            "enq_while_active",
            "outstanding_max",
            "w_beat_before_aw",
            "w_leads_aw",
            "w_leads_aw_bursts",
            "w_before_aw_in_grant",
            "aw_and_b_same_cycle",
            "reset_mid_traffic",
        )
    ]
)


def main(directory: str) -> int:
    total: Counter[str] = Counter()
    for f in sorted(Path(directory).glob("*.json")):
        total.update(json.loads(f.read_text()))
    if not total:
        print("coverage: no data")
        return 0
    width = max(len(k) for k in total)
    lines = [f"  {k:<{width}} {v}" for k, v in sorted(total.items())]
    missed = [g for g in GOALS if not any(k == g or k.startswith(g + ":") for k in total)]
    report = "\n".join(
        [
            "functional coverage (hits per point):",
            *lines,
            f"goals: {len(GOALS) - len(missed)}/{len(GOALS)} hit",
            *[f"  MISSED {m}" for m in missed],
        ]
    )
    out = Path(directory).parent / "coverage.txt"
    out.write_text(report + "\n")
    print(
        f"coverage: {len(GOALS) - len(missed)}/{len(GOALS)} goal points hit, {len(total)} points seen (report: {out})"
    )
    for m in missed:
        print(f"  MISSED {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
