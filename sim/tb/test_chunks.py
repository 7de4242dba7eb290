# SPDX-License-Identifier: Apache-2.0
"""Chunk owner table and scrub engine: assign/release/query/list, FIFO order, zero fill."""

from __future__ import annotations

from typing import Any

import cocotb

from .env import OFF, OP, cover, finish, open_bench


@cocotb.test()
async def chunk_ops(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "chunks")
    cfg = b.cfg
    for c in range(cfg.chunks):  # fill device memory so the scrub has work
        await b.mem_write(c * cfg.chunk_size + 64 * rng.randrange(cfg.chunk_size // 64), b"\xff" * 64)
    nb = (cfg.chunks + 7) // 8
    for _ in range(80):
        c = rng.randrange(cfg.chunks + 1)
        owner = rng.choice([0, 1, 2, 3, 0x10000])
        r = rng.random()
        if r < 0.35:
            await sb.command(OP.CHUNK_ASSIGN, c, owner)
        elif r < 0.6:
            await sb.command(OP.CHUNK_RELEASE, c, owner)
        elif r < 0.8:
            await sb.command(OP.CHUNK_QUERY, c)
        else:
            await sb.command(OP.CHUNK_LIST, 0, rng.choice([0, 1, 2, 3, 0x10000]), result_bytes=nb)
        if rng.random() < 0.2:
            await sb.settle()
            cover("chunk:scrub_settled")
    await sb.settle()
    for c in range(cfg.chunks):
        for _ in range(2):
            await b.mem_read(c * cfg.chunk_size + 64 * rng.randrange(cfg.chunk_size // 64), 64)
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "chunks")


@cocotb.test()
async def scrub_fifo_order(dut: Any) -> None:
    b, sb, _ = await open_bench(dut)
    order = [7, 2, 11, 0]
    for c in order:
        await sb.command(OP.CHUNK_ASSIGN, c, 40 + c)
    for c in order:
        await sb.command(OP.CHUNK_RELEASE, c, 40 + c)
    await sb.command(OP.CHUNK_ASSIGN, 7, 1, quiesce=False)  # BUSY while scrubbing
    await sb.command(OP.CHUNK_RELEASE, 2, 42, quiesce=False)  # STATE while scrubbing
    await sb.command(OP.CHUNK_QUERY, 0, quiesce=False)  # RESULT1 keeps the owner
    await sb.settle()
    await sb.compare_events()  # SCRUB_DONE in release order
    await sb.compare_tables()
    finish(b, "chunks_fifo")


@cocotb.test()
async def chunk_copy_without_the_engine(dut: Any) -> None:
    """Spec 7.1: this core has no copy engine: CAP_DMA.COPY reads 0 and CHUNK_COPY is refused with
    FLAGS (before ALIGN, RANGE, STATE and PERM), changing nothing; the model is that device."""
    b, sb, _ = await open_bench(dut)
    assert not (await b.reg_read(OFF["CAP_DMA"])) >> 2 & 1
    await sb.command(OP.CHUNK_ASSIGN, 3, 9)
    for args in ((3, 9, 0x1000), (3, 9, 0x1008), (b.cfg.chunks, 9, 0x1000), (0, 9, 0x1000), (3, 8, 0x1000)):
        code, _, _ = await sb.command(OP.CHUNK_COPY, *args)
        assert code == 0x08, (args, code)  # FLAGS
    await sb.command(OP.CHUNK_QUERY, 3)
    await sb.compare_registers()
    await sb.compare_tables()
    finish(b, "chunk_copy_refused")
