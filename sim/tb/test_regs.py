# SPDX-License-Identifier: Apache-2.0
"""Register block: reset values, CAP_* against the configuration, read/write registers."""

from __future__ import annotations

from typing import Any

import cocotb

from cxltrack import regs

from .env import OFF, finish, open_bench


@cocotb.test()
async def reset_values(dut: Any) -> None:
    b, sb, _ = await open_bench(dut)
    await sb.compare_registers()  # includes ID, VERSION, CAP_* computed from config/small.toml
    cfg = b.cfg
    geom = await b.reg_read(OFF["CAP_GEOM"])
    assert regs.REGISTERS["CAP_GEOM"].field("NUM_SLOTS").get(geom) == cfg.slots
    assert await b.reg_read(OFF["CAP_PAGES_LO"]) == cfg.pages
    # RESULT reads as zero after reset
    assert await b.result(64) == bytes(64)
    finish(b, "regs_reset")


@cocotb.test()
async def read_write(dut: Any) -> None:
    b, sb, _ = await open_bench(dut)
    for name, value in [
        ("CTRL", 0xFFFFFFFF),
        ("CTRL", 0x2),
        ("SLOT_TIMEOUT", 0xDEADBEEF),
        ("INT_ENABLE", 0xFF),
        ("CMD_ARG0_LO", 0x12345678),
        ("CMD_ARG0_HI", 0x9ABCDEF0),
        ("CMD_ARG2_HI", 0xFFFFFFFF),
        ("INT_ENABLE", 0),
        ("CTRL", 1),
    ]:
        await sb.reg_write(OFF[name], value)
        await sb.reg_read(OFF[name])
    await sb.compare_registers()
    finish(b, "regs_rw")
