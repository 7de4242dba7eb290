# SPDX-License-Identifier: Apache-2.0
"""Write-buffer slots: alloc/release/query/merge, window writes with strobes, full detection,
timeouts, refused writes, merge with byte enables (property (c))."""

from __future__ import annotations

from typing import Any

import cocotb

from cxltrack import regs

from .env import OFF, OP, cover, finish, open_bench

WIN = regs.SLOT


@cocotb.test()
async def slot_lifecycle(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "slots")
    cfg = b.cfg
    await sb.reg_write(OFF["SLOT_TIMEOUT"], 3)
    for s in range(cfg.slots):
        await sb.command(OP.SLOT_ALLOC, 0x100 + s)
    await sb.command(OP.SLOT_ALLOC, 9)  # NO_RESOURCE
    # scattered window writes of every width, partial strobes
    for _ in range(60):
        s = rng.randrange(cfg.slots)
        size = rng.choice([1, 2, 4, 8])
        off = rng.randrange(0, 4096, size)
        await sb.reg_write(WIN + s * regs.SLOT_STRIDE + off, rng.getrandbits(8 * size), size)
    for s in range(cfg.slots):
        await sb.reg_read(WIN + s * regs.SLOT_STRIDE + rng.randrange(0, 4096, 4))
        await sb.command(OP.SLOT_QUERY, s, result_bytes=512)
    await sb.tick(2)
    await sb.compare_events()
    await sb.tick(2)  # timeouts fire in slot order
    cover("slot:timeout_batch")
    await sb.compare_events()
    # fill slot 1 completely: SLOT_FULL
    for off in range(0, 4096, 4):
        await sb.reg_write(WIN + regs.SLOT_STRIDE + off, rng.getrandbits(32))
    cover("slot:full")
    await sb.compare_events()
    # merge a full slot, a partial one, release one, then refused writes
    for page in (5, 9):
        await b.mem_write(page * 4096, bytes(range(64)))
    await sb.command(OP.SLOT_MERGE, 1, 5)
    await sb.command(OP.SLOT_MERGE, 0, 9)
    cover("slot:merge")
    await sb.command(OP.SLOT_RELEASE, 2)
    await sb.command(OP.SLOT_RELEASE, 2)  # STATE
    await sb.command(OP.SLOT_MERGE, 2, 1)  # STATE
    await sb.command(OP.SLOT_MERGE, cfg.slots, 1)  # RANGE
    await sb.command(OP.SLOT_MERGE, 3, cfg.pages)  # RANGE
    await sb.command(OP.SLOT_QUERY, cfg.slots)  # RANGE
    await sb.command(OP.SLOT_RELEASE, cfg.slots)  # RANGE
    await sb.reg_write(WIN + 2 * regs.SLOT_STRIDE, 0x55)  # SLOT_WRITE
    cover("slot:refused_write")
    for page in (5, 9):
        for line in range(64):
            await b.mem_read(page * 4096 + line * 64, 64)  # mirror compares data with the model
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "slots")


@cocotb.test()
async def merge_empty_and_reuse(dut: Any) -> None:
    b, sb, _ = await open_bench(dut)
    await sb.command(OP.SLOT_ALLOC, 1)
    await sb.command(OP.SLOT_MERGE, 0, 3)  # nothing written: no memory write, page stays clean
    await sb.command(OP.SLOT_ALLOC, 2)
    await sb.reg_write(WIN + 4092, 0xAABBCCDD, 4, 0b0101)
    await sb.reg_read(WIN + 4092)
    await sb.command(OP.SLOT_QUERY, 0, result_bytes=512)
    await sb.command(OP.SLOT_MERGE, 0, 3)
    await b.mem_read(3 * 4096 + 4032, 64)
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "slots_reuse")
