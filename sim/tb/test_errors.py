# SPDX-License-Identifier: Apache-2.0
"""Illegal accesses (spec section 4.2): reserved offsets, read-only registers, widths, RESULT
writes, EVQ_POP reads, CMD_OP overrun, slot writes; ERR_ADDR latching, ERR_COUNT, ERROR events."""

from __future__ import annotations

from typing import Any

import cocotb

from cxltrack import regs

from .env import OFF, OP, cover, finish, open_bench


@cocotb.test()
async def illegal_accesses(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "errors")
    await sb.reg_write(OFF["INT_ENABLE"], 4)
    ro = [
        "ID",
        "VERSION",
        "CAP_GEOM",
        "CMD_STATUS",
        "CMD_RESULT0_LO",
        "EVQ_COUNT",
        "EVT_HEAD0",
        "STAT_READS_LO",
        "ERR_ADDR",
        "ERR_COUNT",
    ]
    cases = [("w", OFF[n], 4) for n in ro]
    cases += [
        ("r", 0x2C, 4),
        ("w", 0x2C, 4),
        ("r", 0x300, 4),
        ("r", 0x8000, 4),
        ("w", 0xFFFC, 4),
        ("r", OFF["EVQ_POP"], 4),
        ("w", regs.RESULT, 4),
        ("w", regs.RESULT + 0x10, 1),
        ("r", regs.RESULT + 2, 1),
        ("w", OFF["CTRL"], 1),
        ("w", OFF["CTRL"] + 1, 1),
        ("w", OFF["CTRL"], 2),
        ("r", OFF["CTRL"] + 1, 1),
        ("r", regs.SLOT + b.cfg.slots * regs.SLOT_STRIDE, 4),
        ("w", regs.SLOT + 15 * regs.SLOT_STRIDE + 8, 4),
        ("w", regs.SLOT, 4),
        ("r", regs.SLOT + 2, 1),
    ]
    for round_ in range(2):
        rng.shuffle(cases)
        for kind, off, size in cases:
            if kind == "r":
                await sb.reg_read(off, size)
            else:
                await sb.reg_write(off, rng.getrandbits(32) & ((1 << 8 * size) - 1), size)
            await sb.reg_read(OFF["ERR_STATUS"])
            await sb.reg_read(OFF["ERR_ADDR"])
            if rng.random() < 0.3:
                await sb.reg_write(OFF["ERR_STATUS"], 1 << rng.randrange(5))
        await sb.compare_registers()
        await sb.compare_events()
        await sb.reg_write(OFF["ERR_STATUS"], 0x1F)
        cover(f"errors:round{round_}")
    # CMD_OP while busy: a long harvest, then an immediate second launch
    await sb.reg_write(OFF["CMD_ARG0_LO"], 0)
    await sb.reg_write(OFF["CMD_ARG1_LO"], b.cfg.pages)
    await b.reg_write(OFF["CMD_OP"], OP.HARVEST_HOTNESS)
    await b.reg_write(OFF["CMD_OP"], OP.NOP)
    cover("errors:cmd_overrun")
    b.model.reg_write(OFF["CMD_OP"], OP.HARVEST_HOTNESS)
    b.model.reg_write(OFF["CMD_OP"], OP.NOP)  # the model is busy until settle
    await sb.settle()
    await sb.compare_registers()
    await sb.compare_events()
    finish(b, "errors")
