# SPDX-License-Identifier: Apache-2.0
"""Block-association table: set/get/clear/discard, ranges, invalidation by writes."""

from __future__ import annotations

from typing import Any

import cocotb

from .env import OFF, OP, finish, open_bench


@cocotb.test()
async def bat_ops(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "bat")
    cfg = b.cfg
    pages = cfg.pages
    await sb.reg_write(OFF["CTRL"], 3)
    for _ in range(150):
        page = rng.randrange(pages)
        r = rng.random()
        if r < 0.3:
            await sb.command(
                OP.BAT_SET, page, rng.randrange(1 << cfg.bat_block_bits), rng.randrange(1 << cfg.bat_disk_bits)
            )
        elif r < 0.45:
            await sb.command(OP.BAT_GET, page)
        elif r < 0.55:
            await sb.command(OP.BAT_CLEAR, page)
        elif r < 0.7:
            await sb.command(OP.BAT_DISCARD, page)
        elif r < 0.85:
            await b.mem_write(page * 4096 + rng.randrange(64) * 64, b"\xaa" * 4)
        else:
            await b.mem_read(page * 4096, 4)
        if rng.random() < 0.1:
            await sb.compare_events()
    for args in [(pages, 0, 0), (0, 1 << cfg.bat_block_bits, 0), (0, 0, 1 << cfg.bat_disk_bits), (2**63, 0, 0)]:
        await sb.command(OP.BAT_SET, *args)
    for op in (OP.BAT_GET, OP.BAT_CLEAR, OP.BAT_DISCARD):
        await sb.command(op, pages)
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "bat")
