# SPDX-License-Identifier: Apache-2.0
"""BAT invalidation events of the core with its tables in DRAM when the update cache overflows (docs/spec.md section
12, "BAT invalidation events in DRAM"): a flood of writes to pages with associations, each in a row of its own, faster
than the cache is written back. The model keeps its tables on chip and cannot follow, so the bench checks the rule
itself, round after round:
- an event names a page that was written (never another);
- a written page whose event is missing is covered by a recorded loss (EVQ_DROPPED, ERR_STATUS.EVQ_OVERFLOW);
- STAT_BAT_INV counts exactly the events given;
- every written page is invalid afterwards (property (b): never a false clean), and an association in another group,
  never written, is still valid with its payload.
At least one round must overflow, or the loss path was not exercised and the bench fails."""

from __future__ import annotations

from typing import Any

import cocotb

from cxltrack import regs

from ..env import OFF, OP, R, cover, finish, open_bench

GROUP = 32768  # pages of a BAT overflow group (64 rows; DramTables, harvest.json group_pages)
ROUNDS = 6
PAGES_PER_ROUND = 40  # rows flooded at once; fewer than the event queue holds (64 at config/dram1t.toml)


@cocotb.test()
async def lost_events(dut: Any) -> None:
    b, _, rng = await open_bench(dut, "dram_core_lost")
    assert b.dram is not None, "the DUT has no d_axi: not the core with DRAM tables"
    assert b.cfg.evq_depth > PAGES_PER_ROUND
    await b.reg_write(OFF["CTRL"], 3)  # TRACK_EN, BAT_INV_EVT_EN
    groups = b.cfg.pages // GROUP
    valid_bit = 1 << 32
    rounds_lost = events_total = lost_total = 0
    for _ in range(ROUNDS):
        g = rng.randrange(groups - 1)
        pages = [g * GROUP + row * 512 + rng.randrange(512) for row in rng.sample(range(64), PAGES_PER_ROUND)]
        keep = (g + 1) * GROUP + rng.randrange(GROUP)
        payload = {p: (rng.getrandbits(b.cfg.bat_block_bits), rng.getrandbits(b.cfg.bat_disk_bits)) for p in pages}
        payload[keep] = (rng.getrandbits(b.cfg.bat_block_bits), rng.getrandbits(b.cfg.bat_disk_bits))
        for p, (block, disk) in payload.items():
            code, _, _ = await b.command(OP.BAT_SET, p, block, disk)
            assert code == 0
        dropped0 = await b.reg_read(OFF["EVQ_DROPPED"])
        stat0 = await b.reg_read(OFF["STAT_BAT_INV"])
        # the flood: every page written at once (the AXI master keeps them all in flight)
        writes = [cocotb.start_soon(b.mem_write(p * 4096 + 8 * rng.randrange(512), rng.randbytes(8))) for p in pages]
        for w in writes:
            assert await w == "okay"
        await b.settle()
        got: list[int] = []
        while await b.reg_read(OFF["EVQ_COUNT"]):
            head = await b.reg_read(OFF["EVT_HEAD0"])
            assert R["EVT_HEAD0"].field("TYPE").get(head) == regs.Event.BAT_INVALIDATED
            got.append(await b.reg_read(OFF["EVT_ARG_LO"], 8))
            await b.reg_write(OFF["EVQ_POP"], 1)
        lost = await b.reg_read(OFF["EVQ_DROPPED"]) - dropped0
        stat = await b.reg_read(OFF["STAT_BAT_INV"]) - stat0
        stray = sorted(set(got) - set(pages))
        assert not stray, f"events for pages never written: {stray[:8]}"
        assert len(got) == len(set(got)), "a page's invalidation was reported twice"
        missing = set(pages) - set(got)
        assert not missing or lost > 0, f"{len(missing)} written pages without an event, and no loss recorded"
        assert stat == len(got), f"STAT_BAT_INV counted {stat}, events given {len(got)}"
        events_total += len(got)
        lost_total += lost
        if lost:
            rounds_lost += 1
            err = await b.reg_read(OFF["ERR_STATUS"])
            assert R["ERR_STATUS"].field("EVQ_OVERFLOW").get(err), "a loss without ERR_STATUS.EVQ_OVERFLOW"
            await b.reg_write(OFF["ERR_STATUS"], err)
            cover("dram_core:bat_events_lost")
        for p in pages:
            _, r0, r1 = await b.command(OP.BAT_GET, p)
            assert not r1 & valid_bit, f"page {p:#x} was written but its association is still valid"
        _, r0, r1 = await b.command(OP.BAT_GET, keep)
        assert r1 & valid_bit and (r0, r1 & ~valid_bit) == payload[keep], f"page {keep:#x} lost its association"
    print(
        f"dram_core_lost: {ROUNDS} rounds of {PAGES_PER_ROUND} writes: {events_total} events, "
        f"{lost_total} losses recorded in {rounds_lost} rounds",
        flush=True,
    )
    assert rounds_lost, "no round overflowed the update cache: the loss rule was not exercised"
    b.check_clean()
    finish(b, "dram_core_lost")
