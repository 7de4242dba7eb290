# SPDX-License-Identifier: Apache-2.0
"""CHUNK_COPY (docs/spec.md section 7.1) on the reference model: the chunk's bytes land exactly at
ARG2 and nowhere else; the copy has no tracking effect (it never clears or hides a dirty bit and
never raises accessed or hotness), also with writes racing it; a write racing the copy leaves its
dirty bit set whatever bytes the copy carried; a chunk being scrubbed is refused; a device
without CAP_DMA.COPY refuses the opcode; a DMA error changes nothing on the device."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_model_races import RacingWrite, run_interleaved, writes_st

from cxltrack import regs
from cxltrack.config import named
from cxltrack.model import Device, ModelDriver
from cxltrack.regs import ChunkState, Op, Status

CFG = named("small")
P = CFG.page_size
SIZE = CFG.chunk_size
CPAGES = CFG.pages_per_chunk
BUF = 1 << 30
FAULT = 1 << 40
_CAP = regs.REGISTERS["CAP_DMA"]


def tables(dev: Device) -> tuple[object, ...]:
    t = dev.tables
    return (list(t.dirty.words), list(t.accessed.words), bytes(t.hot), dict(t.bat), dict(dev.stats))


def owned(chunk: int, owner: int, writes: set[int]) -> Device:
    dev = Device(CFG)
    assert ModelDriver(dev).cmd(Op.CHUNK_ASSIGN, chunk, owner).code == Status.OK
    for p in writes:
        dev.mem_write((chunk * CPAGES + p) * P + 8 * (p % 512), (p + 1).to_bytes(8, "little"))
    return dev


@settings(max_examples=60, deadline=None)
@given(chunk=st.integers(0, CFG.chunks - 1), writes=st.sets(st.integers(0, CPAGES - 1), max_size=12))
def test_the_copy_is_the_chunk_exactly_at_arg2_with_no_tracking_effect(chunk: int, writes: set[int]) -> None:
    dev = owned(chunk, 3, writes)
    dev.host.fill(BUF - 64, SIZE + 128, 0xA5)
    before = tables(dev)
    res = ModelDriver(dev).cmd(Op.CHUNK_COPY, chunk, 3, BUF)
    assert (res.code, res.result0, res.result1) == (Status.OK, SIZE, 0)
    assert dev.host.read(BUF, SIZE) == dev.mem.read(chunk * SIZE, SIZE)
    assert dev.host.read(BUF - 64, 64) == b"\xa5" * 64 and dev.host.read(BUF + SIZE, 64) == b"\xa5" * 64
    assert tables(dev) == before  # reads by the engine are not requests


@settings(max_examples=100, deadline=None)
@given(writes=writes_st)
def test_a_write_racing_the_copy_keeps_its_dirty_bit(writes: list[RacingWrite]) -> None:
    """Whatever bytes the copy carried, every page written during it is still dirty after it: a
    host that copies, then harvests dirty with CLEAR, sees every page it must copy again."""
    dev = owned(1, 9, set())
    racing = [RacingWrite(CPAGES + w.page % CPAGES, w.offset, w.begin_at * 97, w.end_after * 50) for w in writes]
    ModelDriver(dev).launch(Op.CHUNK_COPY, 1, 9, BUF)
    log = run_interleaved(dev, racing)
    assert ModelDriver(dev).result().code == Status.OK
    dirty = ModelDriver(dev).harvest(Op.HARVEST_DIRTY, 0, CFG.pages, clear=False)
    assert {page for page, _, _ in log} <= dirty


def test_errors_in_the_check_order() -> None:
    dev = owned(2, 5, {0, 7})
    drv = ModelDriver(dev)
    assert drv.cmd(Op.CHUNK_ASSIGN, 4, 6).code == Status.OK
    before = tables(dev)
    cases = [
        ((2, 5, BUF + 8), {"clear": True}, Status.FLAGS),
        ((2, 5, BUF), {"dma": True}, Status.FLAGS),
        ((2, 5, BUF), {"rsvd": 1}, Status.FLAGS),
        ((CFG.chunks, 5, BUF + 8), {}, Status.ALIGN),
        ((CFG.chunks, 5, BUF), {}, Status.RANGE),
        ((0, 0, BUF), {}, Status.RANGE),
        ((2, 1 << 16, BUF), {}, Status.RANGE),
        ((2, 5, (1 << 64) - SIZE + 64), {}, Status.RANGE),
        ((0, 6, BUF), {}, Status.STATE),
        ((2, 6, BUF), {}, Status.PERM),
        ((4, 5, BUF), {}, Status.PERM),
    ]
    for args, flags, want in cases:
        assert drv.cmd(Op.CHUNK_COPY, *args, **flags).code == want, (args, flags)
    assert tables(dev) == before
    assert dev.host.writes == 0


def test_a_chunk_being_scrubbed_is_refused() -> None:
    dev = owned(2, 5, {1})
    drv = ModelDriver(dev)
    assert drv.cmd(Op.CHUNK_RELEASE, 2, 5).code == Status.OK
    assert dev.chunks[2].state == ChunkState.SCRUBBING
    assert drv.cmd(Op.CHUNK_COPY, 2, 5, BUF).code == Status.STATE
    dev.settle()
    assert drv.cmd(Op.CHUNK_COPY, 2, 5, BUF).code == Status.STATE


@pytest.mark.parametrize("fault_at", [0, SIZE // 2, SIZE - 64])
def test_a_dma_error_changes_nothing_on_the_device(fault_at: int) -> None:
    dev = owned(3, 8, {0, 5, CPAGES - 1})
    before = tables(dev)
    dev.host.fault(FAULT + fault_at, 64)
    res = ModelDriver(dev).cmd(Op.CHUNK_COPY, 3, 8, FAULT)
    assert (res.code, res.result0, res.result1) == (Status.DMA_ERROR, 0, 0)
    assert tables(dev) == before
    assert dev.chunks[3].state == ChunkState.OWNED and dev.chunks[3].owner == 8
    # every line but the faulted one was still written (the engine runs to the end)
    assert dev.host.writes == SIZE // 64 - 1


def test_cap_dma_copy_and_a_device_without_it() -> None:
    assert _CAP.field("COPY").get(Device(CFG).reg_read(regs.CAP_DMA))
    for dev in (Device(CFG, dma_copy=False), Device(CFG, dma_addr_bits=0)):
        assert not _CAP.field("COPY").get(dev.reg_read(regs.CAP_DMA))
        drv = ModelDriver(dev)
        assert drv.cmd(Op.CHUNK_ASSIGN, 0, 1).code == Status.OK
        assert drv.cmd(Op.CHUNK_COPY, 0, 1, BUF).code == Status.FLAGS
    with pytest.raises(ValueError):
        Device(CFG, dma_addr_bits=0, dma_copy=True)
    narrow = Device(CFG, dma_addr_bits=32)
    drv = ModelDriver(narrow)
    assert drv.cmd(Op.CHUNK_ASSIGN, 0, 1).code == Status.OK
    assert drv.cmd(Op.CHUNK_COPY, 0, 1, (1 << 32) - SIZE).code == Status.OK
    assert drv.cmd(Op.CHUNK_COPY, 0, 1, (1 << 32) - SIZE + 64).code == Status.RANGE
