# SPDX-License-Identifier: Apache-2.0
"""Harvest engine: bitmaps and hotness, CLEAR and DECAY, every range/alignment error."""

from __future__ import annotations

from typing import Any

import cocotb

from .env import OP, finish, open_bench, random_accesses


@cocotb.test()
async def harvest_ops(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "harvest")
    pages = b.cfg.pages
    for _ in range(6):
        await random_accesses(b, rng, 40)
        for op in (OP.HARVEST_DIRTY, OP.HARVEST_ACCESSED, OP.HARVEST_HOTNESS):
            start = rng.randrange(0, pages, 64)
            count = rng.randrange(64, pages - start + 1, 64)
            nbytes = count if op == OP.HARVEST_HOTNESS else count // 8
            flags = rng.choice(
                [{}, {"clear": True}, {"decay": True}] if op == OP.HARVEST_HOTNESS else [{}, {"clear": True}]
            )
            await sb.command(op, start, count, result_bytes=nbytes, **flags)
    # errors: alignment, ranges, flags
    for op in (OP.HARVEST_DIRTY, OP.HARVEST_ACCESSED, OP.HARVEST_HOTNESS):
        for start, count in [
            (1, 64),
            (0, 63),
            (0, 0),
            (0, pages + 64),
            (pages, 64),
            (64, pages),
            (0, 32768 + 64),
            (0, 4096 + 64),
            (2**64 - 64, 128),
        ]:
            await sb.command(op, start, count)
    await sb.command(OP.HARVEST_HOTNESS, 0, 64, clear=True, decay=True)
    await sb.command(OP.HARVEST_DIRTY, 0, 64, decay=True)
    await sb.command(OP.HARVEST_DIRTY, 0, 64, rsvd=1)
    await sb.command(OP.NOP)
    await sb.command(OP.NOP, clear=True)
    await sb.command(0x7F)
    await sb.compare_registers()
    await sb.compare_tables()
    finish(b, "harvest")
