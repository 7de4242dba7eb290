# SPDX-License-Identifier: Apache-2.0
"""Every error path of docs/spec.md 4.2 and 5: the answer, and that an
erroring command or illegal access changes nothing it must not."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from cxltrack import regs
from cxltrack.config import named
from cxltrack.model import Device, ModelDriver
from cxltrack.regs import Event, Op, Status

CFG = named("small")
ERR = regs.REGISTERS["ERR_STATUS"]


def tables(dev: Device) -> tuple[object, ...]:
    t = dev.tables
    return (
        list(t.dirty.words),
        list(t.accessed.words),
        bytes(t.hot),
        dict(t.bat),
        [(s.state, s.mask, bytes(s.data), s.tag) for s in dev.slots],
        [(c.state, c.owner) for c in dev.chunks.chunks],
        list(dev.chunks.scrub_fifo),
        bytes(dev.result),
    )


def busy_device() -> Device:
    dev = Device(CFG)
    drv = ModelDriver(dev)
    for p in (1, 70, 200):
        dev.mem_write(p * CFG.page_size, b"\x09" * 8)
    drv.cmd(Op.BAT_SET, 3, 33, 1)
    drv.cmd(Op.SLOT_ALLOC, 5)
    drv.window_write(0, 0, b"abc")
    drv.cmd(Op.CHUNK_ASSIGN, 2, 17)
    return dev


def expected_status(
    op: int, a0: int, a1: int, a2: int, clear: bool, decay: bool, rsvd: int, dma: bool = False, lst: bool = False
) -> Status:
    """The spec's validation order, written from docs/spec.md sections 5, 5.3, 5.4 and 7.1."""
    if op not in {o.value for o in Op}:
        return Status.UNKNOWN_OP
    o = Op(op)
    harvest = o in (Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED, Op.HARVEST_HOTNESS)
    if rsvd or ((clear or decay) and not harvest) or (decay and (o != Op.HARVEST_HOTNESS or clear)):
        return Status.FLAGS
    if dma and not harvest:
        return Status.FLAGS
    if lst and (not dma or o not in (Op.HARVEST_DIRTY, Op.HARVEST_ACCESSED)):
        return Status.FLAGS
    if harvest:
        if a0 % 64 or a1 % 64 or (dma and a2 % 64):
            return Status.ALIGN
        limit = 4096 if o == Op.HARVEST_HOTNESS else 32768
        if a1 == 0 or (a1 > limit and not dma) or a0 + a1 > CFG.pages:
            return Status.RANGE
        nbytes = a1 if o == Op.HARVEST_HOTNESS else a1 // 4 if lst else a1 // 8  # a list: 16 bytes per word
        if dma and a2 + nbytes > 2**64:
            return Status.RANGE
        return Status.OK
    if o in (Op.BAT_GET, Op.BAT_CLEAR, Op.BAT_DISCARD):
        return Status.RANGE if a0 >= CFG.pages else Status.OK
    if o == Op.BAT_SET:
        bad = a0 >= CFG.pages or a1 >= 1 << CFG.bat_block_bits or a2 >= 1 << CFG.bat_disk_bits
        return Status.RANGE if bad else Status.OK
    if o == Op.SLOT_MERGE:
        if a0 >= CFG.slots or a1 >= CFG.pages:
            return Status.RANGE
        return Status.OK if a0 == 0 else Status.STATE  # only slot 0 is open
    if o in (Op.SLOT_RELEASE,):
        if a0 >= CFG.slots:
            return Status.RANGE
        return Status.OK if a0 == 0 else Status.STATE
    if o == Op.SLOT_QUERY:
        return Status.RANGE if a0 >= CFG.slots else Status.OK
    if o in (Op.CHUNK_ASSIGN, Op.CHUNK_RELEASE):
        if a0 >= CFG.chunks or not 1 <= a1 <= 0xFFFF:
            return Status.RANGE
        if o == Op.CHUNK_ASSIGN:
            return Status.BUSY if a0 == 2 else Status.OK
        if a0 != 2:
            return Status.STATE
        return Status.OK if a1 == 17 else Status.PERM
    if o == Op.CHUNK_COPY:  # the default device has CAP_DMA.COPY; only chunk 2 is owned, by 17
        if a2 % 64:
            return Status.ALIGN
        if a0 >= CFG.chunks or not 1 <= a1 <= 0xFFFF or a2 + CFG.chunk_size > 2**64:
            return Status.RANGE
        if a0 != 2:
            return Status.STATE
        return Status.OK if a1 == 17 else Status.PERM
    if o == Op.CHUNK_QUERY:
        return Status.RANGE if a0 >= CFG.chunks else Status.OK
    if o == Op.CHUNK_LIST:
        return Status.RANGE if a1 > 0xFFFF else Status.OK
    if o == Op.SLOT_ALLOC:
        return Status.OK  # 3 of 4 slots free
    return Status.OK


arg = st.one_of(st.integers(0, 300), st.sampled_from([0, 64, 128, 192, 256, 4096, 32768, 1 << 20, 2**64 - 1]))


@settings(max_examples=400, deadline=None)
@given(
    op=st.one_of(st.sampled_from([o.value for o in Op]), st.integers(0, 255)),
    a0=arg,
    a1=arg,
    a2=st.one_of(st.integers(0, 40), st.sampled_from([1 << 20, (1 << 20) + 8, 2**64 - 64, 2**64 - 4096])),
    clear=st.booleans(),
    decay=st.booleans(),
    dma=st.booleans(),
    rsvd=st.sampled_from([0, 0, 0, 1, 0xFFFFF]),
    lst=st.booleans(),
)
def test_every_command_answers_per_spec_and_errors_change_nothing(
    op: int, a0: int, a1: int, a2: int, clear: bool, decay: bool, dma: bool, rsvd: int, lst: bool
) -> None:
    dev = busy_device()
    drv = ModelDriver(dev)
    before = copy.deepcopy(tables(dev))
    events = len(dev.events.queue)
    res = drv.cmd(op, a0, a1, a2, clear=clear, decay=decay, dma=dma, rsvd=rsvd, list_=lst)
    assert res.code == expected_status(op, a0, a1, a2, clear, decay, rsvd, dma, lst)
    if res.code != Status.OK:
        assert tables(dev) == before
        assert len(dev.events.queue) == events
        assert (res.result0, res.result1) == (0, 0)
    assert dev.regs["ERR_STATUS"] == 0  # a command error is a status, not an access error


OFFSETS = {r.offset: r for r in regs.REGISTERS.values()}


@settings(max_examples=300, deadline=None)
@given(
    offset=st.integers(0, regs.BAR_SIZE - 1),
    size=st.sampled_from([1, 2, 4, 8]),
    write=st.booleans(),
    value=st.integers(0, 2**32 - 1),
)
def test_illegal_accesses_are_recorded_and_harmless(offset: int, size: int, write: bool, value: int) -> None:
    dev = busy_device()
    before = copy.deepcopy(tables(dev))
    in_slot = offset >= regs.SLOT
    slot_index = (offset - regs.SLOT) // regs.SLOT_STRIDE if in_slot else -1
    in_result = regs.RESULT <= offset < regs.RESULT + regs.RESULT_SIZE
    if write:
        dev.reg_write(offset, value & ((1 << (8 * size)) - 1), size)
    else:
        got = dev.reg_read(offset, size)
    err = dev.regs["ERR_STATUS"]
    if in_slot and slot_index >= CFG.slots:
        assert err == ERR.field("BAD_REG").mask and (write or got == 0)
        assert tables(dev) == before
        return
    if in_slot:
        legal = (size in (1, 2, 4, 8) if write else size in (4, 8)) and offset % size == 0
        if write and legal and slot_index != 0:
            assert err == ERR.field("SLOT_WRITE").mask  # slots 1..3 are FREE
        elif legal:
            assert err == 0
        else:
            assert err == ERR.field("BAD_WIDTH").mask
        return
    if in_result:
        if write:
            assert err == ERR.field("BAD_REG").mask
        elif size in (4, 8) and offset % size == 0:
            assert err == 0
        else:
            assert err == ERR.field("BAD_WIDTH").mask and got == 0
        assert tables(dev) == before
        return
    reg = OFFSETS.get(offset & ~3) if offset < regs.RESULT else None
    writable = reg is not None and any("w" in f.sw for f in reg.fields)
    if reg is None or (write and not writable) or (not write and reg.name == "EVQ_POP"):
        assert err == ERR.field("BAD_REG").mask
    elif size != 4 or offset % 4:
        assert err == ERR.field("BAD_WIDTH").mask
    else:
        assert err & ~ERR.field("CMD_OVERRUN").mask == 0
    if err:
        assert dev.regs["ERR_ADDR"] == offset
        assert dev.err_count == 1
        head = dev.events.queue[-1]
        assert head.type == Event.ERROR and head.arg == offset
        if not write:
            assert got == 0
        if offset != regs.CMD_OP:
            assert tables(dev) == before


def test_cmd_overrun_is_refused_and_recorded(drv: ModelDriver, dev: Device) -> None:
    drv.launch(Op.HARVEST_DIRTY, 0, 256, clear=True)
    assert dev.busy
    dev.reg_write(regs.CMD_OP, int(Op.BAT_SET))
    assert dev.regs["ERR_STATUS"] == ERR.field("CMD_OVERRUN").mask
    while dev.busy:
        dev.step()
    res = drv.result()
    assert res.code == Status.OK  # the running harvest finished unharmed
    assert dev.tables.bat == {}  # the overrun BAT_SET never ran


def test_event_overflow_counts_drops_and_seq_gaps(drv: ModelDriver, dev: Device) -> None:
    dev.reg_write(regs.CTRL, 0x3)
    n = dev.cfg.evq_depth + 5
    for p in range(n):
        drv.cmd(Op.BAT_SET, p, p, 0)
        dev.mem_write(p * dev.cfg.page_size, b"\1")
    assert dev.reg_read(regs.EVQ_DROPPED) == 5
    assert dev.regs["ERR_STATUS"] == ERR.field("EVQ_OVERFLOW").mask
    evs = drv.pop_events()
    assert [e[2] for e in evs] == list(range(dev.cfg.evq_depth))
    drv.cmd(Op.BAT_SET, 0, 0, 0)
    dev.mem_write(0, b"\1")
    assert drv.pop_events()[0][2] == n  # the dropped ones took their SEQ


def test_hotness_saturates_and_decays(drv: ModelDriver, dev: Device) -> None:
    for _ in range(40):
        dev.mem_read(0, 8)
    for _ in range(5):
        dev.mem_read(4096, 8)
    assert drv.cmd(Op.HARVEST_HOTNESS, 0, 64, decay=True).code == Status.OK
    assert dev.result[0:2] == bytes([15, 5])
    drv.cmd(Op.HARVEST_HOTNESS, 0, 64)
    assert dev.result[0:2] == bytes([7, 2])


def test_msi_on_rising_edge_and_rearm(drv: ModelDriver, dev: Device) -> None:
    dev.reg_write(regs.INT_ENABLE, 0x2)
    drv.cmd(Op.NOP)
    assert dev.msi_count == 1
    drv.cmd(Op.NOP)
    assert dev.msi_count == 1  # line already high: no new edge
    dev.reg_write(regs.INT_STATUS, 0)  # a write that leaves it asserted re-arms
    assert dev.msi_count == 2
    dev.reg_write(regs.INT_STATUS, 0x2)
    assert not dev.irq
    drv.cmd(Op.NOP)
    assert dev.msi_count == 3


def test_scrub_zeroes_marks_dirty_and_frees_in_release_order(drv: ModelDriver, dev: Device) -> None:
    cp = dev.cfg.pages_per_chunk
    for c in (3, 1):
        drv.cmd(Op.CHUNK_ASSIGN, c, 9)
        dev.mem_write(c * cp * 4096 + 64, b"\xff" * 8)
    drv.harvest(Op.HARVEST_DIRTY, 0, dev.cfg.pages)
    drv.cmd(Op.CHUNK_RELEASE, 3, 9)
    drv.cmd(Op.CHUNK_RELEASE, 1, 9)
    assert drv.cmd(Op.CHUNK_ASSIGN, 3, 10).code == Status.BUSY  # still scrubbing
    dev.settle()
    assert dev.mem.read(3 * cp * 4096 + 64, 8) == bytes(8)
    assert [(e[0], e[1], e[3]) for e in drv.pop_events()] == [(Event.SCRUB_DONE, 3, 9), (Event.SCRUB_DONE, 1, 9)]
    assert drv.harvest(Op.HARVEST_DIRTY, 0, dev.cfg.pages) == set(range(cp, 2 * cp)) | set(range(3 * cp, 4 * cp))
    assert drv.cmd(Op.CHUNK_ASSIGN, 3, 10).code == Status.OK
