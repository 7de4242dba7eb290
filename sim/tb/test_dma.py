# SPDX-License-Identifier: Apache-2.0
"""DMA harvest (docs/spec.md 5.3) on the whole core, against the reference model in lock step (the
model runs the same commands and DMA-writes into its own host memory):

- random traffic, then DMA harvests of every kind (CLEAR, DECAY, none) at random ranges and host
  addresses (some just below a 4 KiB boundary, so bursts split), with random READY stalls on AW/W
  and delayed B responses: code and results equal the model's, the host bytes of the buffer and of
  128 bytes around it (pre-filled with a pattern: a stray write shows) equal the model's host
  memory; BUSY reads 0 only once every burst has its B response;
- the same range harvested through the RESULT window (no CLEAR) and by DMA gives identical bytes;
- errors: every check (FLAGS, ALIGN, RANGE incl. an address range beyond 2^64), and DMA_ERROR
  (SLVERR and DECERR) with and without CLEAR/DECAY, after which every table equals the model's
  (the range re-marked, counters max(c, 1)), and nothing outside the buffer was written."""

from __future__ import annotations

from typing import Any

import cocotb

from cxltrack.vectors.format import HOST_BASE, HOST_FAULT_BASE

from .env import OP, Scoreboard, cover, finish, open_bench, random_accesses

PAD = 128  # bytes checked around each buffer


async def dma_harvest(
    sb: Scoreboard, op: int, start: int, count: int, addr: int, inside: bool = True, **flags: Any
) -> int:
    """One DMA harvest on both; host bytes [addr - PAD, addr + len + PAD) compared (without `inside`
    only those around the buffer: after a DMA error the buffer may hold any partial data). Returns
    the code."""
    b, m = sb.b, sb.m
    nbytes = count if op == OP.HARVEST_HOTNESS else count // 8
    fill = (addr >> 6) & 0xFF
    for h in (b.host, m.host):
        h.fill(addr - PAD, nbytes + 2 * PAD, fill)
    code, _, _ = await sb.command(op, start, count, addr, dma=True, **flags)
    # the command's completion came after every B: nothing may be outstanding on the port
    assert b.host_port.outstanding == 0, f"BUSY cleared with {b.host_port.outstanding} bursts unanswered"
    got, want = b.host.read(addr - PAD, nbytes + 2 * PAD), m.host.read(addr - PAD, nbytes + 2 * PAD)
    if not inside:
        got, want = got[:PAD] + got[PAD + nbytes :], want[:PAD] + want[PAD + nbytes :]
    if got != want:
        i = next(i for i in range(len(got)) if got[i] != want[i])
        i = i if inside or i < PAD else i + nbytes
        where = "outside the buffer" if not PAD <= i < PAD + nbytes else "in the buffer"
        raise AssertionError(f"host byte {addr - PAD + i:#x} ({where}): rtl {got[i]:#04x} model {want[i]:#04x}")
    return code


async def compare_bitmaps(sb: Scoreboard) -> None:
    """The dirty, accessed and hotness tables of the whole device, through RESULT (no CLEAR)."""
    pages = sb.m.cfg.pages
    for start in range(0, pages, 4096):
        n = min(4096, pages - start)
        await sb.command(OP.HARVEST_DIRTY, start, n, result_bytes=n // 8)
        await sb.command(OP.HARVEST_ACCESSED, start, n, result_bytes=n // 8)
        await sb.command(OP.HARVEST_HOTNESS, start, n, result_bytes=n)


@cocotb.test()
async def dma_harvests(dut: Any) -> None:
    b, sb, rng = await open_bench(dut, "dma")
    pages = b.cfg.pages
    b.host_port.p_stall = 0.3
    b.host_port.b_delay = (0, 30)
    host = HOST_BASE
    for rnd in range(5):
        await random_accesses(b, rng, 40)
        await sb.settle()
        for op in (OP.HARVEST_DIRTY, OP.HARVEST_ACCESSED, OP.HARVEST_HOTNESS):
            start = rng.randrange(0, pages, 64)
            count = rng.randrange(64, pages - start + 1, 64)
            nbytes = count if op == OP.HARVEST_HOTNESS else count // 8
            # the same bytes through RESULT and by DMA (no CLEAR: both read the same table)
            code, _, _ = await sb.command(op, start, count, result_bytes=nbytes)
            window = await b.result(nbytes)
            addr = host + rng.randrange(64) * 64
            if rnd % 2:
                addr = (addr | 0xFFF) + 1 - 64 * rng.randrange(1, 3)  # a burst ends at the 4 KiB boundary
            assert await dma_harvest(sb, op, start, count, addr) == 0
            assert b.host.read(addr, nbytes) == window, f"{op.name}: DMA bytes differ from RESULT's"
            cover(f"dma:same_as_result:{op.name}")
            flags = rng.choice([{"clear": True}, {"decay": True}] if op == OP.HARVEST_HOTNESS else [{"clear": True}])
            await dma_harvest(sb, op, start, count, addr + 8192, **flags)
            cover(f"dma:ok:{op.name}")
            host += 1 << 16
    await compare_bitmaps(sb)

    # checks, in the spec's order
    checks: list[tuple[int, int, int, int, dict[str, Any]]] = [
        (OP.NOP, 0, 0, 0, {}),  # DMA on another command: FLAGS
        (OP.BAT_GET, 0, 0, 0, {}),
        (OP.HARVEST_DIRTY, 0, 64, 0, {"rsvd": 1}),
        (OP.HARVEST_DIRTY, 0, 64, HOST_BASE + 8, {}),  # ALIGN
        (OP.HARVEST_DIRTY, 1, 64, HOST_BASE, {}),
        (OP.HARVEST_DIRTY, 0, 0, HOST_BASE, {}),  # RANGE
        (OP.HARVEST_DIRTY, 64, pages, HOST_BASE, {}),
        (OP.HARVEST_HOTNESS, 0, 64, 2**64 - 64, {}),  # end exactly 2^64: fits
        (OP.HARVEST_HOTNESS, 0, 128, 2**64 - 64, {}),  # wraps 2^64
    ]
    for cop, start, count, addr, flags in checks:
        await sb.command(cop, start, count, addr, dma=True, **flags)

    # DMA_ERROR: the range re-marked (CLEAR) / counters max(c, 1) (CLEAR, DECAY), else no change
    for decerr in (False, True):
        b.host_port.decerr = decerr
        for op, flags in [
            (OP.HARVEST_DIRTY, {"clear": True}),
            (OP.HARVEST_ACCESSED, {"clear": True}),
            (OP.HARVEST_DIRTY, {}),
            (OP.HARVEST_HOTNESS, {"decay": True}),
            (OP.HARVEST_HOTNESS, {"clear": True}),
        ]:
            for _ in range(30):
                await b.mem_write(rng.randrange(pages) * 4096, rng.randbytes(8))
            await sb.settle()
            start = rng.randrange(0, pages // 2, 64)
            count = rng.randrange(64, pages - start + 1, 64)
            addr = HOST_FAULT_BASE + (1 << 20) * rng.randrange(16)
            # a fault over part of the buffer: some bursts land, the others fail
            nbytes = count if op == OP.HARVEST_HOTNESS else count // 8
            at = addr + 64 * rng.randrange((nbytes + 63) // 64)
            for h in (b.host, sb.m.host):
                h.fault(at, 64)
            code = await dma_harvest(sb, op, start, count, addr, inside=False, **flags)
            assert code == 9, f"DMA_ERROR expected, got {code}"
            cover(f"dma:error:{'decerr' if decerr else 'slverr'}:{op.name}")
            await compare_bitmaps(sb)
    b.host_port.decerr = False
    await sb.compare_registers()
    finish(b, "dma")


async def list_harvest(
    sb: Scoreboard, op: int, start: int, count: int, addr: int, inside: bool = True, **flags: Any
) -> int:
    """One list harvest (docs/spec.md 5.4) on both: the worst-case buffer (count / 4 bytes) and PAD around it
    compared with the model's host memory, so a record too many, a stray strobe or padding shows."""
    b, m = sb.b, sb.m
    nbytes = count // 4
    fill = (addr >> 6) & 0xFF
    for h in (b.host, m.host):
        h.fill(addr - PAD, nbytes + 2 * PAD, fill)
    code, _, records = await sb.command(op, start, count, addr, dma=True, lst=True, **flags)
    assert b.host_port.outstanding == 0, f"BUSY cleared with {b.host_port.outstanding} bursts unanswered"
    got, want = b.host.read(addr - PAD, nbytes + 2 * PAD), m.host.read(addr - PAD, nbytes + 2 * PAD)
    if not inside:
        got, want = got[:PAD] + got[PAD + nbytes :], want[:PAD] + want[PAD + nbytes :]
    if got != want:
        i = next(i for i in range(len(got)) if got[i] != want[i])
        raise AssertionError(
            f"list {start}+{count}: host byte {i - PAD} of the buffer: rtl {got[i]:#04x} model {want[i]:#04x}"
        )
    if code == 0:
        cover(f"list:records:{'none' if not records else 'partial_beat' if records % 4 else 'whole_beats'}")
    return code


@cocotb.test()
async def dma_list_harvests(dut: Any) -> None:
    """List harvests (docs/spec.md 5.4) in lock step with the model: random ranges (partial rows, so that in-range
    masks matter) and buffer addresses (some just below a 4 KiB boundary) with the DMA port stalled at random; the flag,
    alignment and range checks of LIST; DMA_ERROR (SLVERR, DECERR) on part of a list, with and without CLEAR, after
    which the tables equal the model's (the whole range re-marked with CLEAR)."""
    b, sb, rng = await open_bench(dut, "dma")
    pages = b.cfg.pages
    b.host_port.p_stall = 0.3
    b.host_port.b_delay = (0, 30)
    host = HOST_BASE
    for rnd in range(8):
        await random_accesses(b, rng, rng.choice([5, 40, 200]))
        await sb.settle()
        for op in (OP.HARVEST_DIRTY, OP.HARVEST_ACCESSED):
            start = rng.randrange(0, pages, 64)
            count = rng.randrange(64, pages - start + 1, 64)
            addr = host + rng.randrange(64) * 64
            if rnd % 2:
                addr = (addr | 0xFFF) + 1 - 64 * rng.randrange(1, 3)  # the list crosses a 4 KiB boundary
            assert await list_harvest(sb, op, start, count, addr) == 0
            assert await list_harvest(sb, op, start, count, addr + 8192, clear=rng.random() < 0.7) == 0
            cover(f"list:ok:{op.name}")
            host += 1 << 16
    await compare_bitmaps(sb)
    checks: list[tuple[int, int, int, int, dict[str, Any]]] = [
        (OP.HARVEST_HOTNESS, 0, 64, HOST_BASE, {"dma": True}),  # FLAGS: LIST on hotness
        (OP.HARVEST_DIRTY, 0, 64, HOST_BASE, {}),  # FLAGS: LIST without DMA
        (OP.NOP, 0, 0, 0, {"dma": True}),
        (OP.HARVEST_DIRTY, 1, 64, HOST_BASE + 8, {}),  # FLAGS before ALIGN
        (OP.HARVEST_DIRTY, 0, 64, HOST_BASE + 16, {"dma": True}),  # ALIGN
        (OP.HARVEST_DIRTY, 0, 0, HOST_BASE, {"dma": True}),  # RANGE
        (OP.HARVEST_DIRTY, 0, 256, 2**64 - 64, {"dma": True}),  # the worst case (64 bytes) ends at 2^64: fits
        (OP.HARVEST_DIRTY, 0, 256, 2**64 - 32 - 64, {"dma": True}),  # ALIGN (not 64-byte aligned)
        (OP.HARVEST_DIRTY, 64, 256, 2**64 - 64, {"dma": True}),  # RANGE: beyond the device
    ]
    for h in (b.host, sb.m.host):
        h.fault(2**64 - 4096, 4096)  # nothing there: a legal list at the top fails
    for cop, start, count, addr, flags in checks:
        await sb.command(cop, start, count, addr, lst=True, **flags)
    for decerr in (False, True):
        b.host_port.decerr = decerr
        for op, flags in [
            (OP.HARVEST_DIRTY, {"clear": True}),
            (OP.HARVEST_ACCESSED, {"clear": True}),
            (OP.HARVEST_DIRTY, {}),
        ]:
            for _ in range(30):
                await b.mem_write(rng.randrange(pages) * 4096, rng.randbytes(8))
            await sb.settle()
            start = rng.randrange(0, pages // 2, 64)
            count = rng.randrange(64, pages - start + 1, 64)
            addr = HOST_FAULT_BASE + (1 << 20) * rng.randrange(16)
            for h in (b.host, sb.m.host):
                h.fault(addr, 16)  # the first record fails; a list of none would not
            code = await list_harvest(sb, op, start, count, addr, inside=False, **flags)
            cover(f"list:{'error' if code == 9 else 'empty_no_error'}:{'decerr' if decerr else 'slverr'}:{op.name}")
            await compare_bitmaps(sb)
    b.host_port.decerr = False
    await sb.compare_registers()
    finish(b, "dma")
