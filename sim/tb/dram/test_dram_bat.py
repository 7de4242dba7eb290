# SPDX-License-Identifier: Apache-2.0
"""The block-association table in device DRAM at 1 TiB (DramHarvestBench, config/dram1t.toml, sparse DRAM model with
garbage in every line never written): BAT_SET, BAT_GET, BAT_DISCARD and BAT_CLEAR through the command engine on a few
dozen pages of four rows of one group, with writes (invalidations on both ports: write accept and write end) on those
pages between and racing the commands, and writes elsewhere in the group and in groups with no association. Every
command is checked by tb.dram.checkers.BatChecker: a page written after its BAT_SET is never reported valid (property
(b), no false clean), a page not written since is reported valid with its block and disk unless an invalidation
overflowed the update cache (then its group is all invalid). At the end, quiet, every page is read, set afresh and read
again: each must then be valid with its new block and disk. DRAM latency and back-pressure are drawn per run;
CXLTRACK_SEED reproduces a run, CXLTRACK_DRAM_CMDS x 16 sets the number of commands."""

from __future__ import annotations

import os
import random
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from ..harvest.driver import params
from .checkers import GROUP_PAGES, BatChecker, Checker
from .driver import DramDut
from .sparse_dram import drawn_dram

COMMANDS = 16 * int(os.environ.get("CXLTRACK_DRAM_CMDS", "40"))
ROW = 512


@cocotb.test()
async def bat_commands_and_writes(dut: Any) -> None:
    seed = seed_from_env("dram_bat")
    rng = random.Random(seed)
    p = params()
    dram = drawn_dram(dut, p["carve_base"], p["carve_bytes"], rng, seed)
    bat = BatChecker()
    h = DramDut(dut, dram, Checker(), bat=bat)
    await h.start()
    pages_total = h.pages
    group = rng.randrange(pages_total // GROUP_PAGES)
    base = group * GROUP_PAGES
    rows = rng.sample(range(GROUP_PAGES // ROW), 4)
    pages = sorted({base + r * ROW + rng.randrange(ROW) for r in rows for _ in range(12)})

    def writes(p_write: float) -> Any:
        def f() -> tuple[int | None, int | None]:
            out: list[int | None] = []
            for _ in range(2):
                r = rng.random()
                if r >= p_write:
                    out.append(None)
                elif r < p_write * 0.6:
                    out.append(rng.choice(pages))
                elif r < p_write * 0.8:
                    out.append(base + rng.randrange(GROUP_PAGES))  # elsewhere in the group
                else:
                    out.append(rng.randrange(pages_total))  # anywhere: mostly groups with no association
            return out[0], out[1]

        return f

    for _ in range(COMMANDS):
        quiet = writes(rng.choice([0.0, 0.02, 0.1]))
        for _ in range(rng.randrange(0, 40)):
            await h.step(invs=quiet())
        op = rng.choices(["set", "get", "discard", "clear"], weights=[4, 3, 2, 1])[0]
        page = rng.choice(pages)
        payload = (rng.getrandbits(p["bat_block_bits"]), rng.getrandbits(p["bat_disk_bits"]))
        racing = writes(rng.choice([0.0, 0.0, 0.05, 0.3]))
        result, launch, done = await h.bat_command(op, page, payload, racing)
        bat.command(op, page, launch, done, result, payload)
        cover(f"dram_bat:{op}")
    # quiet: the entries left are checked, then a fresh BAT_SET of every page must read back exactly
    for _ in range(200):
        await h.step()
    for page in pages:
        result, launch, done = await h.bat_command("get", page)
        bat.command("get", page, launch, done, result, (0, 0))
    exact_before = bat.exact_valid
    for page in pages:
        payload = (rng.getrandbits(p["bat_block_bits"]), rng.getrandbits(p["bat_disk_bits"]))
        result, launch, done = await h.bat_command("set", page, payload)
        bat.command("set", page, launch, done, result, payload)
    for page in pages:
        result, launch, done = await h.bat_command("get", page)
        bat.command("get", page, launch, done, result, (0, 0))
    assert not dram.stats.errors, dram.stats.errors[:5]
    assert bat.written > 0, "no BAT_GET/BAT_DISCARD followed a write: the bench does not exercise invalidation"
    assert bat.exact_valid - exact_before == len(pages), "the quiet BAT_GETs after a fresh BAT_SET were not all valid"
    assert bat.valid > 0, "no entry was ever reported valid: the bench does not exercise the payload"
    assert h.bat_overflows or not bat.licensed, f"{bat.licensed} invalid reports with no overflow to explain them"
    print(
        f"dram_bat: {COMMANDS} commands on {len(pages)} pages, {bat.valid} valid reports ({bat.exact_valid} required), "
        f"{bat.written} after a write, {bat.licensed} invalid by {h.bat_overflows} overflowing invalidations, DRAM "
        f"latency {dram.read_latency}/{dram.write_latency} ready {dram.ready_prob}, DRAM reads {dram.stats.reads} "
        f"writes {dram.stats.writes}"
    )
    dump_coverage("dram_bat")
