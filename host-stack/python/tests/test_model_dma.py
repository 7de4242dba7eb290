# SPDX-License-Identifier: Apache-2.0
"""DMA harvest (docs/spec.md section 5.3) on the reference model: the bytes a DMA harvest writes
are the bytes the RESULT harvest gives, exactly at ARG2 and nowhere else; a DMA error with CLEAR
never loses a bit, even with writes racing the harvest; without CLEAR/DECAY it changes nothing;
a device without DMA refuses the flag. Expected outcomes come from the spec's rules."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_model_races import RacingWrite, run_interleaved, writes_st

from cxltrack import regs
from cxltrack.config import named
from cxltrack.model import Device, ModelDriver
from cxltrack.regs import Op, Status

CFG = named("small")
PAGES = CFG.pages
P = CFG.page_size
BUF = 1 << 30
FAULT = 1 << 40
BITMAPS = (Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED)
_CAP = regs.REGISTERS["CAP_DMA"]


def populated(writes: set[int], reads: list[int]) -> Device:
    dev = Device(CFG)
    for p in writes:
        dev.mem_write(p * P + 8, b"\x11" * 8)
    for p in reads:
        dev.mem_read(p * P, 8)
    return dev


def state(dev: Device) -> tuple[object, ...]:
    t = dev.tables
    return (list(t.dirty.words), list(t.accessed.words), bytes(t.hot))


def nbytes(op: Op, count: int) -> int:
    return count if op == Op.HARVEST_HOTNESS else count // 8


pages_st = st.sets(st.integers(0, PAGES - 1), max_size=60)
reads_st = st.lists(st.integers(0, PAGES - 1), max_size=80)
range_st = st.tuples(st.integers(0, 3), st.integers(1, 4)).map(lambda t: (64 * t[0], 64 * min(t[1], 4 - t[0])))
flags_st = st.sampled_from([(False, False), (True, False), (False, True)])  # (clear, decay)


@settings(max_examples=200, deadline=None)
@given(
    writes=pages_st,
    reads=reads_st,
    op=st.sampled_from([Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS]),
    rng=range_st,
    flags=flags_st,
)
def test_dma_writes_what_result_would_hold_exactly_at_arg2(
    writes: set[int], reads: list[int], op: Op, rng: tuple[int, int], flags: tuple[bool, bool]
) -> None:
    clear, decay = flags
    if decay and op != Op.HARVEST_HOTNESS:
        decay = False
    start, count = rng
    a, b = populated(writes, reads), populated(writes, reads)
    n = nbytes(op, count)
    b.host.fill(BUF - 64, n + 128, 0xA5)
    ra = ModelDriver(a).cmd(op, start, count, clear=clear, decay=decay)
    result_before = bytes(b.result)
    rb = ModelDriver(b).cmd(op, start, count, BUF, clear=clear, decay=decay, dma=True)
    assert ra.code == rb.code == Status.OK
    assert (rb.result0, rb.result1) == (ra.result0, 0)
    assert b.host.read(BUF, n) == bytes(a.result[:n])
    assert b.host.read(BUF - 64, 64) == b"\xa5" * 64  # nothing before the buffer
    assert b.host.read(BUF + n, 64) == b"\xa5" * 64  # nothing after it
    assert bytes(b.result) == result_before  # RESULT untouched
    assert state(a) == state(b)  # the same steps ran


@settings(max_examples=200, deadline=None)
@given(
    pre=st.sets(st.integers(0, PAGES - 1), max_size=20),
    writes=writes_st,
    rng=range_st,
    op=st.sampled_from(BITMAPS),
    fault_word=st.integers(0, 3),
)
def test_a_dma_error_with_clear_never_loses_a_bit(
    pre: set[int], writes: list[RacingWrite], rng: tuple[int, int], op: Op, fault_word: int
) -> None:
    """Property (a) through a failing DMA: the fault hits one 8-byte word of the buffer (so some
    steps' data may have reached host memory, others not); racing writes land at any step. Every
    page written before or during the harvest is set afterwards, and the whole range is set."""
    start, count = rng
    dev = Device(CFG)
    drv = ModelDriver(dev)
    for p in pre:
        dev.mem_write(p * P, b"\1" * 8)
        dev.mem_read(p * P, 8)
    words = count // 64
    dev.host.fault(FAULT + 8 * min(fault_word, words - 1), 8)
    drv.launch(op, start, count, FAULT, clear=True, dma=True)
    log = run_interleaved(dev, writes)
    res = drv.result()
    assert (res.code, res.result0, res.result1) == (Status.DMA_ERROR, 0, 0)
    after = drv.harvest(op, 0, PAGES, clear=False)
    in_range = set(range(start, start + count))
    assert in_range <= after  # the whole range is marked again
    touched = pre | {w[0] for w in log}
    assert touched <= after  # and nothing written anywhere was lost


@settings(max_examples=100, deadline=None)
@given(
    writes=pages_st,
    reads=reads_st,
    op=st.sampled_from([Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS]),
    rng=range_st,
)
def test_a_dma_error_without_clear_or_decay_changes_nothing(
    writes: set[int], reads: list[int], op: Op, rng: tuple[int, int]
) -> None:
    dev = populated(writes, reads)
    dev.host.fault(FAULT, 1 << 20)
    before = copy.deepcopy(state(dev))
    res = ModelDriver(dev).cmd(op, rng[0], rng[1], FAULT, dma=True)
    assert (res.code, res.result0) == (Status.DMA_ERROR, 0)
    assert state(dev) == before
    assert dev.host.writes == 0


@settings(max_examples=100, deadline=None)
@given(reads=reads_st, rng=range_st, clear=st.booleans())
def test_a_hotness_dma_error_leaves_max_c_1_as_the_steps_left_it(
    reads: list[int], rng: tuple[int, int], clear: bool
) -> None:
    """With CLEAR or DECAY every counter of the range ends as max(c, 1), c as the step left it
    (CLEAR: 0, DECAY: c >> 1); outside the range nothing changes."""
    start, count = rng
    dev = populated(set(), reads)
    hot = bytes(dev.tables.hot)
    dev.host.fault(FAULT + count - 1, 1)  # only the last byte fails
    res = ModelDriver(dev).cmd(Op.HARVEST_HOTNESS, start, count, FAULT, clear=clear, decay=not clear, dma=True)
    assert res.code == Status.DMA_ERROR
    for p in range(PAGES):
        if start <= p < start + count:
            assert dev.tables.hot[p] == max(0 if clear else hot[p] >> 1, 1)
        else:
            assert dev.tables.hot[p] == hot[p]


def test_whole_device_in_one_dma_command_beyond_the_result_limits() -> None:
    cfg = named("default")  # 65536 pages: twice RESULT's bitmap limit, 16 times its hotness limit
    dev = Device(cfg)
    drv = ModelDriver(dev)
    marked = {0, 4095, 32768, cfg.pages - 1}
    for p in marked:
        dev.mem_write(p * cfg.page_size, b"\1")
    assert drv.cmd(Op.HARVEST_DIRTY, 0, cfg.pages).code == Status.RANGE
    assert drv.cmd(Op.HARVEST_HOTNESS, 0, 4096 + 64).code == Status.RANGE
    res = drv.cmd(Op.HARVEST_DIRTY, 0, cfg.pages, BUF, clear=True, dma=True)
    assert (res.code, res.result0) == (Status.OK, len(marked))
    bits = int.from_bytes(dev.host.read(BUF, cfg.pages // 8), "little")
    assert {i for i in range(cfg.pages) if bits >> i & 1} == marked
    res = drv.cmd(Op.HARVEST_HOTNESS, 0, cfg.pages, BUF, dma=True)
    assert (res.code, res.result0) == (Status.OK, len(marked))


@pytest.mark.parametrize("op", [Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS, Op.NOP])
def test_a_device_without_dma_refuses_the_flag(op: Op) -> None:
    dev = Device(CFG, dma_addr_bits=0)
    assert dev.reg_read(regs.CAP_DMA) == 0
    dev.mem_write(0, b"\1")
    before = state(dev)
    res = ModelDriver(dev).cmd(op, 0, 64, BUF, clear=op != Op.NOP and op != Op.HARVEST_HOTNESS, dma=True)
    assert res.code == Status.FLAGS
    assert state(dev) == before
    assert dev.host.writes == 0


def test_cap_dma_and_the_address_width() -> None:
    dev = Device(CFG, dma_addr_bits=32)
    cap = dev.reg_read(regs.CAP_DMA)
    assert (_CAP.field("PRESENT").get(cap), _CAP.field("ADDR_BITS").get(cap)) == (1, 32)
    assert Device(CFG).reg_read(regs.CAP_DMA) == (
        _CAP.field("PRESENT").put(1)
        | _CAP.field("LIST").put(1)
        | _CAP.field("COPY").put(1)
        | _CAP.field("ADDR_BITS").put(64)
    )
    assert Device(CFG, dma_copy=False).reg_read(regs.CAP_DMA) == (
        _CAP.field("PRESENT").put(1) | _CAP.field("LIST").put(1) | _CAP.field("ADDR_BITS").put(64)
    )
    drv = ModelDriver(dev)
    # 32 bytes (256 pages) fit in the last 64 bytes below 2^32; at 2^32 they do not
    assert drv.cmd(Op.HARVEST_DIRTY, 0, PAGES, 1 << 32, dma=True).code == Status.RANGE
    assert drv.cmd(Op.HARVEST_DIRTY, 0, PAGES, (1 << 32) - 64, dma=True).code == Status.OK
    assert drv.cmd(Op.HARVEST_HOTNESS, 0, PAGES, (1 << 32) - 256, dma=True).code == Status.OK
    assert drv.cmd(Op.HARVEST_HOTNESS, 0, PAGES, (1 << 32) - 192, dma=True).code == Status.RANGE
    with pytest.raises(ValueError, match="dma_addr_bits"):
        Device(CFG, dma_addr_bits=65)
