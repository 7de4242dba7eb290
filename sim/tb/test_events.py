# SPDX-License-Identifier: Apache-2.0
"""Event queue: SEQ, overflow and EVQ_DROPPED, pop, interrupt line and MSI re-arm."""

from __future__ import annotations

from typing import Any

import cocotb

from .env import OFF, OP, cover, finish, open_bench


@cocotb.test()
async def overflow_and_irq(dut: Any) -> None:
    b, sb, _ = await open_bench(dut)
    await sb.reg_write(OFF["INT_ENABLE"], 7)
    await sb.reg_write(OFF["CTRL"], 3)
    depth = b.cfg.evq_depth
    for p in range(depth + 3):  # one BAT_INVALIDATED per page: the queue overflows
        await sb.command(OP.BAT_SET, p, p, 0)
        await b.mem_write(p * 4096, b"\x01")
    cover("evq:overflow")
    await sb.compare_registers()
    assert int(dut.irq.value) == int(b.model.irq)
    await sb.compare_events(drain=False)
    for _ in range(3):
        await sb.reg_write(OFF["EVQ_POP"], 1)
        await sb.compare_events(drain=False)
    await sb.reg_write(OFF["EVQ_POP"], 0)  # no effect
    await sb.reg_write(OFF["ERR_STATUS"], 0x1F)
    await sb.reg_write(OFF["INT_STATUS"], 7)  # EVQ stays (level)
    await sb.compare_registers()
    await sb.compare_events()
    await sb.reg_write(OFF["INT_STATUS"], 7)
    await sb.compare_registers()
    assert int(dut.irq.value) == int(b.model.irq)
    assert b.msi == b.model.msi_count, f"MSI: rtl {b.msi} model {b.model.msi_count}"
    cover("irq:msi")
    finish(b, "events")
