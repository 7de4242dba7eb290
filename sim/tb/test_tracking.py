# SPDX-License-Identifier: Apache-2.0
"""Tracking on the data path: reads, writes, partial writes, decode errors, TRACK_EN off."""

from __future__ import annotations

import random
from typing import Any

import cocotb

from .env import OFF, OP, Bench, Scoreboard, cover, finish, open_bench, seed_from_env


async def traffic(b: Bench, rng: random.Random, n: int) -> None:
    cap = b.cfg.capacity_bytes
    for _ in range(n):
        line = rng.randrange(cap // 64 + 8)  # a few lines beyond the device
        size = rng.choice([1, 2, 4, 8, 16, 32, 64])
        addr = line * 64 + rng.randrange(0, 64 - size + 1)
        if rng.random() < 0.5:
            resp, _ = await b.mem_read(addr, size)
        else:
            resp = await b.mem_write(addr, rng.randbytes(size))
        assert resp == ("okay" if addr < cap else "decerr")


@cocotb.test()
async def serial_traffic(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "tracking.serial")
    await traffic(b, rng, 300)
    await sb.compare_registers()
    await sb.compare_tables()
    finish(b, "tracking_serial")


@cocotb.test()
async def track_disabled(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "tracking.disabled")
    await sb.command(OP.BAT_SET, 3, 77, 1)
    await sb.reg_write(OFF["CTRL"], 0)
    cover("ctrl:track_disabled")
    await traffic(b, rng, 100)
    await b.mem_write(3 << 12, b"\x01")  # association cleared even without tracking
    await sb.compare_registers()
    await sb.compare_tables()
    finish(b, "tracking_disabled")


@cocotb.test()
async def concurrent_backpressure(dut: Any) -> None:
    """Many requests in flight with random stalls on every channel; the model follows the
    handshakes through the mirror. Workers own disjoint pages, so data is deterministic."""
    seed = seed_from_env("tracking.concurrent")
    rng = random.Random(seed)
    b = Bench(dut)
    await b.reset()
    b.backpressure(rng, 0.3)
    sb = Scoreboard(b)
    await sb.command(OP.BAT_SET, 5, 1, 1)
    await sb.command(OP.BAT_SET, 6, 2, 2)
    await sb.reg_write(OFF["CTRL"], 3)  # BAT_INVALIDATED events on
    pages = b.cfg.pages
    workers = 6

    async def worker(k: int) -> None:
        r = random.Random(seed * 31 + k)
        for _ in range(60):
            page = r.randrange(k, pages + 12, workers)
            addr = page * 4096 + r.randrange(64) * 64
            size = r.choice([8, 64])
            if r.random() < 0.5:
                await b.mem_read(addr, size)
            else:
                await b.mem_write(addr, r.randbytes(size))

    tasks = [cocotb.start_soon(worker(k)) for k in range(workers)]
    for t in tasks:
        await t
    b.backpressure(rng, 0.0)
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "tracking_concurrent")
