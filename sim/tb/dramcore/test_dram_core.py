# SPDX-License-Identifier: Apache-2.0
"""The whole core at 1 TiB with its tables in device DRAM, in lock step with the reference model: every kind of
command (harvests by RESULT, DMA and list; BAT; slots), memory traffic, events and registers. What crosses between the
engine's gated clock and the core (docs/rtl-notes.md, "The whole core at 1 TiB") is in every step: a command's launch,
its completion (CMD_DONE and BUSY, a BAT_SET or BAT_CLEAR only once in effect), slot queries and merges, DMA starts,
beats and completions.

The bench settles after each access, so the update cache never overflows here (each area's rows are few, and the
cache is written back while the core waits): every result must equal the model's. Events are compared as sets of
records (a BAT_INVALIDATED comes when its line is written back, so it may follow an event the model queued after it:
spec section 12). The overflow rules have their own benches (sim/tb/dram/) and test_dram_core_lost.py."""

from __future__ import annotations

import os
import random
from typing import Any

import cocotb

from cxltrack import regs
from cxltrack.vectors.format import HOST_BASE

from ..env import COVERAGE, OFF, OP, Scoreboard, cover, finish, open_bench
from ..test_dma import dma_harvest, list_harvest
from .touched import Regions, compare_events_unordered, compare_touched

WIN = regs.SLOT
HARVESTS = (OP.HARVEST_DIRTY, OP.HARVEST_ACCESSED, OP.HARVEST_HOTNESS)


@cocotb.test()
async def lockstep(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "dram_core")
    cfg = b.cfg
    assert b.dram is not None, "the DUT has no d_axi: not the core with DRAM tables"
    regions = Regions(rng, cfg.pages)
    await sb.reg_write(OFF["CTRL"], 3)  # TRACK_EN, BAT_INV_EVT_EN
    await sb.reg_write(OFF["INT_ENABLE"], 7)
    slots: dict[int, int] = {}  # open slot -> tag
    host = HOST_BASE
    steps = int(os.environ.get("CXLTRACK_DRAM_CORE_STEPS", "1200"))
    for i in range(steps):
        # INT_STATUS cleared now and then and compared after every step: CMD_DONE must come for every command, once
        # it took effect (a BAT_SET or BAT_CLEAR in DRAM completes in the engine before that)
        if rng.random() < 0.5:
            await sb.reg_write(OFF["INT_STATUS"], 7)
        r = rng.random()
        if r < 0.35:
            page = regions.page()
            await b.mem_write(page * 4096 + rng.randrange(64) * 64, rng.randbytes(rng.choice([4, 8, 64])))
            await sb.settle()
        elif r < 0.45:
            page = regions.page()
            await b.mem_read(page * 4096 + rng.randrange(64) * 64, 8)
            await sb.settle()
        elif r < 0.62:
            page = regions.page()
            op = rng.choice([OP.BAT_SET, OP.BAT_SET, OP.BAT_GET, OP.BAT_CLEAR, OP.BAT_DISCARD])
            if op == OP.BAT_SET:
                await sb.command(op, page, rng.getrandbits(cfg.bat_block_bits), rng.getrandbits(cfg.bat_disk_bits))
            else:
                await sb.command(op, page)
        elif r < 0.75:
            op = rng.choice(HARVESTS)
            hot = op == OP.HARVEST_HOTNESS
            start, count = regions.harvest_range(hot)
            flags = rng.choice([{}, {"clear": True}, {"decay": True}] if hot else [{}, {"clear": True}])
            await sb.command(op, start, count, result_bytes=count if hot else count // 8, **flags)
        elif r < 0.83:
            op = rng.choice(HARVESTS)
            hot = op == OP.HARVEST_HOTNESS
            start, count = regions.harvest_range(hot)
            host += 1 << 16
            flags = rng.choice([{}, {"clear": True}])
            await dma_harvest(sb, op, start, count, host + rng.randrange(0, 4096, 64), **flags)
            cover(f"dram_core:dma:{op.name}")
        elif r < 0.88:
            op = rng.choice(HARVESTS[:2])
            start, count = regions.harvest_range(False)
            host += 1 << 16
            await list_harvest(sb, op, start, count, host, clear=rng.random() < 0.5)
            cover("dram_core:list")
        else:
            await slot_step(sb, rng, regions, slots)
        await sb.reg_read(OFF["INT_STATUS"])
        if i % 25 == 24:
            await compare_events_unordered(sb)
    await sb.compare_registers()
    await compare_events_unordered(sb)
    await compare_touched(sb, regions)
    await sb.compare_registers()
    cmds = sum(n for k, n in COVERAGE.items() if k.startswith("cmd:"))
    events = sum(n for k, n in COVERAGE.items() if k.startswith("event:"))
    print(
        f"dram_core: {steps} steps, {cmds} commands, {events} events compared "
        f"({COVERAGE['event:BAT_INVALIDATED']} BAT_INVALIDATED), {COVERAGE['mem:write']} writes, "
        f"{len(regions.touched)} pages touched in areas at {[hex(a) for a in regions.bases]}",
        flush=True,
    )
    finish(b, "dram_core")


async def slot_step(sb: Scoreboard, rng: random.Random, regions: Regions, slots: dict[int, int]) -> None:
    """One slot operation: allocate, write some bytes of the window, query, merge into a page, or release."""
    b = sb.b
    r = rng.random()
    if not slots or (r < 0.3 and len(slots) < b.cfg.slots):
        tag = rng.getrandbits(32)
        _, slot, _ = await sb.command(OP.SLOT_ALLOC, tag)
        slots[slot] = tag
        return
    slot = rng.choice(sorted(slots))
    if r < 0.6:
        for _ in range(rng.randrange(1, 6)):
            size = rng.choice([1, 2, 4, 8])
            off = WIN + slot * regs.SLOT_STRIDE + rng.randrange(0, 4096, size)
            await sb.reg_write(off, rng.getrandbits(8 * size), size)
    elif r < 0.75:
        await sb.command(OP.SLOT_QUERY, slot, result_bytes=512)
        cover("dram_core:slot_query")
    elif r < 0.9:
        await sb.command(OP.SLOT_MERGE, slot, regions.page())
        del slots[slot]
        await sb.settle()
        cover("dram_core:slot_merge")
    else:
        await sb.command(OP.SLOT_RELEASE, slot)
        del slots[slot]
