# SPDX-License-Identifier: Apache-2.0
"""Chunk owner table and scrub engine: assign/release/query/list, FIFO order, zero fill."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cxltrack import regs

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
async def chunk_copy(dut: Any) -> None:
    """Spec 7.1 against the model built as a device with the copy engine (dma_copy=True): CAP_DMA.COPY
    reads 1; the checks in the spec's order (FLAGS for any flag, ALIGN, RANGE, STATE, PERM); owned chunks
    with random contents copied byte for byte to host memory (nothing outside the range written) with
    random stalls on m_axi and h_axi; a faulted host range gives DMA_ERROR, RESULT0 0, and changes
    nothing; no tracking effect (the tables compared with the model's, which has none)."""
    b, sb, rng = await open_bench(dut, "chunk_copy")
    cfg = b.cfg
    size = cfg.chunk_size
    assert (await sb.reg_read(OFF["CAP_DMA"])) >> 2 & 1, "CAP_DMA.COPY"
    b.backpressure(rng, 0.3)
    b.host_port.p_stall = 0.3
    b.host_port.b_delay = (0, 30)
    owners = {3: 9, 5: 7, 6: 9, cfg.chunks - 1: 2}
    for c, o in owners.items():
        await sb.command(OP.CHUNK_ASSIGN, c, o)
    for c in owners:  # contents: random lines, whole and partial
        for _ in range(24):
            addr = c * size + 64 * rng.randrange(size // 64)
            await b.mem_write(addr + rng.choice([0, 8, 56]), rng.randbytes(8) if rng.random() < 0.5 else b"\x5a" * 8)
        await b.mem_write(c * size, rng.randbytes(64))
        await b.mem_write(c * size + size - 64, rng.randbytes(64))
    # the checks, in the spec's order
    base = 1 << 30
    cases: list[tuple[tuple[int, int, int], dict[str, Any]]] = [
        ((3, 9, base), dict(clear=True)),
        ((3, 9, base), dict(decay=True)),
        ((3, 9, base), dict(dma=True)),
        ((3, 9, base), dict(lst=True)),
        ((3, 9, base), dict(rsvd=1)),
        ((3, 9, base + 8), dict(clear=True)),  # FLAGS before ALIGN
        ((3, 9, base + 32), {}),  # ALIGN
        ((cfg.chunks, 9, base + 1), {}),  # ALIGN before RANGE
        ((cfg.chunks, 9, base), {}),  # RANGE: chunk
        ((3, 0, base), {}),  # RANGE: owner 0
        ((3, 0x10000, base), {}),  # RANGE: owner
        ((3, 9, (1 << 64) - size + 64), {}),  # RANGE: beyond 2^64
        ((0, 9, (1 << 64) - 64), {}),  # RANGE before STATE
        ((0, 9, base), {}),  # STATE: FREE
        ((3, 7, base), {}),  # PERM
    ]
    for args, kw in cases:
        await sb.command(OP.CHUNK_COPY, *args, **kw)
    # copies, each to a fresh place of host memory, filled around so that a stray byte shows
    at = base
    for c, o in [*owners.items(), (3, 9)]:
        at += size + 64 * rng.randrange(1, 64)
        for mem in (b.host, b.model.host):
            mem.fill(at - 128, size + 256, 0xA5)
        code, r0, _ = await sb.command(OP.CHUNK_COPY, c, o, at)
        assert (code, r0) == (0, size), (code, r0)
        got, want = b.host.read(at - 128, size + 256), b.model.host.read(at - 128, size + 256)
        if got != want:
            first = next(i for i in range(len(got)) if got[i] != want[i]) - 128
            raise AssertionError(f"chunk {c}: host bytes differ from the model at offset {first}")
        assert got[128:-128] == b.model.mem.read(c * size, size)
        cover("chunk_copy:ok")
    # a faulted host range: DMA_ERROR, RESULT0 = 0, nothing else changes
    at += 2 * size
    for mem in (b.host, b.model.host):
        mem.fault(at + size // 2, 64)
    code, r0, _ = await sb.command(OP.CHUNK_COPY, 5, 7, at)
    assert code == 0x0A or code == regs.Status.DMA_ERROR, code
    cover("chunk_copy:dma_error")
    await sb.command(OP.CHUNK_QUERY, 5)
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "chunk_copy")


@dataclass
class _Round:
    """One round of chunk_copy_race: the chunk copied, the others written, the writes to the copied one."""

    target: int
    others: list[int]
    log: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # (start, end, line, data)
    stop: bool = False


@cocotb.test()
async def chunk_copy_race(dut: Any) -> None:
    """Copies of owned chunks while the CXL side writes (whole 64-byte lines) other chunks and the chunk
    being copied, reads everywhere, and a released chunk is scrubbed, with random stalls on m_axi, s_axi
    and h_axi. Every copied line must be the device memory's line at some point of the copy: the value
    at the launch or one written by a write that was in flight during the copy (never a mix within a
    line, never another line's). The copy has no tracking effect: the tables, statistics and events
    afterwards equal the model's, which saw only the CXL-side traffic (and the scrub)."""
    b, sb, rng = await open_bench(dut, "chunk_copy_race")
    cfg = b.cfg
    size = cfg.chunk_size
    lines = size // 64
    b.backpressure(rng, 0.25)
    b.host_port.p_stall = 0.25
    b.host_port.b_delay = (0, 40)
    owned = [1, 2, 4, 8, 9, 13]
    for c in owned:
        await sb.command(OP.CHUNK_ASSIGN, c, 5)
    for c in owned:
        for _ in range(8):
            await b.mem_write(c * size + 64 * rng.randrange(lines), rng.randbytes(64))
    cycle = 0

    async def clock() -> None:
        nonlocal cycle
        while True:
            await RisingEdge(dut.clock)
            cycle += 1

    cocotb.start_soon(clock())
    at = 1 << 32
    scrubbed = 0
    for rnd in range(6):
        target = rng.choice(owned)
        rs = _Round(target, [c for c in owned if c != target])

        async def writer(rs: _Round, seed: int) -> None:
            wr = random.Random(seed)
            while not rs.stop:
                same = wr.random() < 0.5
                c = rs.target if same else wr.choice(rs.others)
                line = wr.randrange(lines) if wr.random() < 0.7 else wr.choice([0, lines - 1, lines // 2])
                data = wr.randbytes(64)
                t0 = cycle
                await b.mem_write(c * size + 64 * line, data)
                if same:
                    rs.log.append((t0, cycle, line, data))
                cover("chunk_copy_race:write_same" if same else "chunk_copy_race:write_other")

        async def reader(rs: _Round, seed: int) -> None:
            rd = random.Random(seed)
            while not rs.stop:
                c = rd.choice(owned)
                await b.mem_read(c * size + 64 * rd.randrange(lines), 64)

        tasks = [cocotb.start_soon(writer(rs, rng.getrandbits(32))) for _ in range(2)]
        tasks.append(cocotb.start_soon(reader(rs, rng.getrandbits(32))))
        if rnd % 2 == 1 and scrubbed < 2:  # a scrub of another chunk runs beside the copy
            victim = [0, 15][scrubbed]
            await sb.command(OP.CHUNK_ASSIGN, victim, 3)
            await b.mem_write(victim * size + 64, b"\x77" * 64)
            await sb.command(OP.CHUNK_RELEASE, victim, 3)
            scrubbed += 1
            cover("chunk_copy_race:scrub_beside")
        await ClockCycles(dut.clock, rng.randrange(1, 30))
        snap_time = cycle
        snap = b.ram.read(target * size, size)
        at += size + 64 * rng.randrange(64)
        code, r0, _ = await sb.command(OP.CHUNK_COPY, target, 5, at, quiesce=False)
        done_time = cycle
        rs.stop = True
        for t in tasks:
            await t
        assert (code, r0) == (0, size), (code, r0)
        got = b.host.read(at, size)
        raced = 0
        for line in range(lines):
            cand = {snap[64 * line : 64 * line + 64]}
            cand |= {d for (t0, t1, ln, d) in rs.log if ln == line and t1 >= snap_time and t0 <= done_time}
            if len(cand) > 1:
                raced += 1
            if got[64 * line : 64 * line + 64] not in cand:
                raise AssertionError(
                    f"round {rnd} chunk {target} line {line}: copied {got[64 * line : 64 * line + 64].hex()} is "
                    f"neither the value at the launch nor one written during the copy ({len(cand)} candidates)"
                )
        cover("chunk_copy_race:lines_raced", raced)
        await sb.settle()
    await sb.compare_registers()
    await sb.compare_events()
    await sb.compare_tables()
    finish(b, "chunk_copy_race")
