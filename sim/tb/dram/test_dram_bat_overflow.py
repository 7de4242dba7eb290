# SPDX-License-Identifier: Apache-2.0
"""The adversary of the update cache for BAT invalidations: associations on pages of two groups, then slow DRAM
(100-cycle reads and writes) and a write on a different row of group A in every cycle on both ports, so the cache fills
and invalidations overflow into the all-invalid flag of group A. The bench checks, with tb.dram.checkers.BatChecker on
every command: (1) overflows happened (else it proves nothing); (2) every association of group A then reads invalid,
written or not (the group is all invalid: safe, a page is treated as written), while group B's unwritten associations
read valid with their block and disk; (3) group A takes new associations afterwards; (4) a flood of writes on a group
that holds no association allocates no cache entry and overflows nothing (the `assoc` filter). CXLTRACK_SEED reproduces
a run."""

from __future__ import annotations

import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import GROUP_PAGES, BatChecker, Checker
from .driver import DramDut
from .sparse_dram import SparseDram

ROW = 512


@cocotb.test()
async def bat_overflow_invalidates_the_group(dut: Any) -> None:
    seed = seed_from_env("dram_bat_overflow")
    rng = random.Random(seed)
    p = params()
    dram = SparseDram(dut, base=p["carve_base"], size=p["carve_bytes"], read_latency=100, write_latency=100, seed=seed)
    bat = BatChecker()
    h = DramDut(dut, dram, Checker(), bat=bat)
    await h.start()
    group_a, group_b, group_c = rng.sample(range(p["pages"] // GROUP_PAGES), 3)

    def payload() -> tuple[int, int]:
        return rng.getrandbits(p["bat_block_bits"]), rng.getrandbits(p["bat_disk_bits"])

    async def run(op: str, page: int, pay: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        result, launch, done = await h.bat_command(op, page, pay)
        bat.command(op, page, launch, done, result, pay)
        return result

    pages = {
        g: [g * GROUP_PAGES + r * ROW + rng.randrange(ROW) for r in rng.sample(range(64), 16)]
        for g in (group_a, group_b)
    }
    for g in (group_a, group_b):
        for page in pages[g]:
            await run("set", page, payload())
    # (4) a group with no association: a flood of writes costs nothing
    for _ in range(50):
        await h.step()
    occupancy = int(dut.io_occupancy.value)
    for _ in range(300):
        await h.step(
            invs=(
                group_c * GROUP_PAGES + rng.randrange(GROUP_PAGES),
                group_c * GROUP_PAGES + rng.randrange(GROUP_PAGES),
            )
        )
        assert int(dut.io_occupancy.value) <= occupancy, "a write to a group with no association took a cache entry"
    assert h.bat_overflows == 0, "writes to a group with no association overflowed the cache"
    # (1) the burst on group A: every cycle a new row, on both ports (some of them on half the associated pages)
    written = pages[group_a][:8]
    for _ in range(300):
        await h.step(
            invs=tuple(  # type: ignore[arg-type]
                rng.choice(written) if rng.random() < 0.1 else group_a * GROUP_PAGES + rng.randrange(GROUP_PAGES)
                for _ in range(2)
            )
        )
    assert h.bat_overflows > 0, "the burst never filled the update cache: the bench does not reach the all-invalid rule"
    for _ in range(50):
        await h.step()
    # (2) group A all invalid, group B valid
    for page in pages[group_a]:
        result = await run("get", page)
        assert not result[1] >> 32 & 1, f"page {page} of the overflowed group reads valid"
    assert bat.licensed > 0, "no unwritten association of group A was invalidated by the overflow alone"
    cover("dram_bat_overflow:group_all_invalid")
    for page in pages[group_b]:
        result = await run("get", page)
        assert result[1] >> 32 & 1, f"page {page} of the untouched group reads invalid"
    # (3) group A takes associations again
    for page in pages[group_a]:
        await run("set", page, payload())
    for page in pages[group_a]:
        result = await run("discard", page)
        assert result[1] >> 32 & 1, f"page {page}: a new association after the overflow reads invalid"
    assert not dram.stats.errors, dram.stats.errors[:5]
    print(
        f"dram_bat_overflow: {h.bat_overflows} overflowing invalidations, {bat.licensed} invalid by overflow, "
        f"{bat.written} after a write, DRAM reads {dram.stats.reads} writes {dram.stats.writes}"
    )
    dump_coverage("dram_bat_overflow")
