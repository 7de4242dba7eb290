# SPDX-License-Identifier: Apache-2.0
"""List harvest (docs/spec.md section 5.4) on the reference model: the records are exactly the
non-zero words of the bitmap the same harvest writes by DMA, in page order, packed at ARG2, and
nothing else is written; RESULT1 counts them; the worst-case buffer is the RANGE rule; the flag
rules; a DMA error with CLEAR never loses a bit, with writes racing the harvest. Expected outcomes
come from the spec's rules, computed independently of the model's list code."""

from __future__ import annotations

import copy
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_model_dma import BITMAPS, BUF, CFG, FAULT, PAGES, P, pages_st, populated, range_st, reads_st, state
from test_model_races import RacingWrite, run_interleaved, writes_st

from cxltrack import regs
from cxltrack.config import named
from cxltrack.model import Device, ModelDriver
from cxltrack.regs import Op, Status

REC = regs.DMA_LIST_RECORD_BYTES
_CAP = regs.REGISTERS["CAP_DMA"]


def records(dev: Device, addr: int, n: int) -> list[tuple[int, int]]:
    raw = dev.host.read(addr, n * REC)
    le: Literal["little"] = "little"
    return [
        (int.from_bytes(raw[REC * i : REC * i + 8], le), int.from_bytes(raw[REC * i + 8 : REC * i + 16], le))
        for i in range(n)
    ]


@settings(max_examples=200, deadline=None)
@given(writes=pages_st, reads=reads_st, op=st.sampled_from(BITMAPS), rng=range_st, clear=st.booleans())
def test_the_list_is_the_non_zero_words_of_the_bitmap_packed_at_arg2(
    writes: set[int], reads: list[int], op: Op, rng: tuple[int, int], clear: bool
) -> None:
    start, count = rng
    a, b = populated(writes, reads), populated(writes, reads)
    worst = count // 64 * REC
    b.host.fill(BUF - 64, worst + 128, 0xA5)
    ra = ModelDriver(a).cmd(op, start, count, BUF, clear=clear, dma=True)
    rb = ModelDriver(b).cmd(op, start, count, BUF, clear=clear, dma=True, list_=True)
    assert ra.code == rb.code == Status.OK
    bits = int.from_bytes(a.host.read(BUF, count // 8), "little")
    words = [(start + 64 * i, bits >> (64 * i) & (1 << 64) - 1) for i in range(count // 64)]
    want = [w for w in words if w[1]]
    assert (rb.result0, rb.result1) == (ra.result0, len(want))
    assert records(b, BUF, len(want)) == want
    end = BUF + len(want) * REC
    assert b.host.read(end, BUF + worst + 64 - end) == b"\xa5" * (BUF + worst + 64 - end)  # no more than the list
    assert b.host.read(BUF - 64, 64) == b"\xa5" * 64
    assert state(a) == state(b)  # the same steps ran


@settings(max_examples=200, deadline=None)
@given(
    pre=st.sets(st.integers(0, PAGES - 1), min_size=1, max_size=20),
    writes=writes_st,
    rng=range_st,
    op=st.sampled_from(BITMAPS),
)
def test_a_list_dma_error_with_clear_never_loses_a_bit(
    pre: set[int], writes: list[RacingWrite], rng: tuple[int, int], op: Op
) -> None:
    """The first record's bytes fail; racing writes land at any step. Every page written before or
    during the harvest is set afterwards, and the whole range (not only the words found) is set."""
    start, count = rng
    dev = Device(CFG)
    drv = ModelDriver(dev)
    pre |= {start}  # at least one record, so a write happens and fails
    for p in pre:
        dev.mem_write(p * P, b"\1" * 8)
        dev.mem_read(p * P, 8)
    dev.host.fault(FAULT, REC)
    drv.launch(op, start, count, FAULT, clear=True, dma=True, list_=True)
    log = run_interleaved(dev, writes)
    res = drv.result()
    assert (res.code, res.result0, res.result1) == (Status.DMA_ERROR, 0, 0)
    after = drv.harvest(op, 0, PAGES, clear=False)
    assert set(range(start, start + count)) <= after
    assert pre | {w[0] for w in log} <= after


@settings(max_examples=100, deadline=None)
@given(writes=st.sets(st.integers(0, PAGES - 1), min_size=1, max_size=40), rng=range_st)
def test_a_list_dma_error_without_clear_changes_nothing(writes: set[int], rng: tuple[int, int]) -> None:
    dev = populated(writes, [])
    start, count = rng
    dev.host.fault(FAULT, 1 << 20)
    before = copy.deepcopy(state(dev))
    res = ModelDriver(dev).cmd(Op.HARVEST_DIRTY, start, count, FAULT, dma=True, list_=True)
    found = any(start <= p < start + count for p in writes)
    assert res.code == (Status.DMA_ERROR if found else Status.OK)  # an empty list writes nothing
    assert state(dev) == before
    assert dev.host.writes == 0


def test_the_buffer_must_hold_the_worst_case() -> None:
    cfg = named("default")  # 1024 words: the worst case (16 KiB) is 8 KiB more than the bitmap
    dev = Device(cfg, dma_addr_bits=32)
    drv = ModelDriver(dev)
    worst = cfg.pages // 64 * REC
    assert drv.cmd(Op.HARVEST_DIRTY, 0, cfg.pages, (1 << 32) - worst, dma=True, list_=True).code == Status.OK
    r = drv.cmd(Op.HARVEST_DIRTY, 0, cfg.pages, (1 << 32) - worst + 64, dma=True, list_=True)
    assert r.code == Status.RANGE  # though the device has no bit set: legality does not depend on the tables
    r = drv.cmd(Op.HARVEST_DIRTY, 0, cfg.pages, (1 << 32) - cfg.pages // 8, dma=True)
    assert r.code == Status.OK  # the bitmap fits


@pytest.mark.parametrize(
    ("op", "dma", "clear", "decay", "addr_bits", "lists"),
    [
        (Op.HARVEST_DIRTY, False, False, False, 64, True),  # LIST without DMA
        (Op.HARVEST_ACCESSED, False, True, False, 64, True),
        (Op.HARVEST_HOTNESS, True, False, False, 64, True),  # LIST on hotness
        (Op.NOP, True, False, False, 64, True),
        (Op.BAT_GET, False, False, False, 64, True),
        (Op.HARVEST_DIRTY, True, False, False, 64, False),  # a device without CAP_DMA.LIST
        (Op.HARVEST_DIRTY, True, False, False, 0, True),  # no DMA at all: no LIST either
        (Op.HARVEST_DIRTY, True, False, True, 64, True),  # DECAY on a bitmap
    ],
)
def test_list_flag_rules(op: Op, dma: bool, clear: bool, decay: bool, addr_bits: int, lists: bool) -> None:
    dev = Device(CFG, dma_addr_bits=addr_bits, dma_list=lists)
    dev.mem_write(0, b"\1")
    before = state(dev)
    # misaligned ARG2 and start: FLAGS comes first
    res = ModelDriver(dev).cmd(op, 1, 64, BUF + 8, clear=clear, decay=decay, dma=dma, list_=True)
    assert res.code == Status.FLAGS
    assert state(dev) == before
    assert dev.host.writes == 0
    assert bool(_CAP.field("LIST").get(dev.reg_read(regs.CAP_DMA))) == (lists and addr_bits > 0)
