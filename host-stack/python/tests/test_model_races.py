# SPDX-License-Identifier: Apache-2.0
"""Property tests of the three atomicity guarantees (docs/spec.md 5.1, 5.2, 6)
under adversarial interleavings drawn by hypothesis.

The model exposes the hardware's atomic steps (`step()`) and splits a write
into acceptance (`write_begin`) and completion (`write_end`), so a schedule is
a list of events placed between steps. Expected outcomes are computed here
from the spec's rules, independently of the model's code.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from cxltrack.config import named
from cxltrack.model import Device, ModelDriver, WriteToken
from cxltrack.regs import Op, Status

CFG = named("small")
PAGES = CFG.pages
P = CFG.page_size


@dataclass
class RacingWrite:
    page: int
    offset: int
    begin_at: int  # number of command steps done when the request is accepted
    end_after: int  # further steps until its data is in memory


writes_st = st.lists(
    st.builds(
        RacingWrite,
        page=st.integers(0, PAGES - 1),
        offset=st.integers(0, P // 8 - 1).map(lambda q: 8 * q),
        begin_at=st.integers(0, 6),
        end_after=st.integers(0, 3),
    ),
    max_size=12,
)


def run_interleaved(dev: Device, writes: list[RacingWrite], value: int = 0x5A) -> list[tuple[int, int, int]]:
    """Step the running command; place each write's begin and end per its
    schedule. Returns (page, begin_step, end_step) per write."""
    steps = 0
    pending = sorted(writes, key=lambda w: w.begin_at)
    inflight: list[tuple[WriteToken, RacingWrite, int]] = []
    log: list[tuple[int, int, int]] = []

    def service() -> None:
        nonlocal pending
        while pending and pending[0].begin_at <= steps:
            w = pending.pop(0)
            tok = dev.write_begin(w.page * P + w.offset, 8)
            assert tok is not None
            inflight.append((tok, w, steps))
        for item in list(inflight):
            tok, w, began = item
            if steps >= began + w.end_after:
                dev.write_end(tok, bytes([value]) * 8)
                log.append((w.page, began, steps))
                inflight.remove(item)

    service()
    while dev.busy:
        dev.step()
        steps += 1
        service()
    steps = 1 << 30  # everything left completes after the command
    service()
    return log


@settings(max_examples=150, deadline=None)
@given(
    pre=st.sets(st.integers(0, PAGES - 1), max_size=20),
    writes=writes_st,
    start_word=st.integers(0, 3),
    words=st.integers(1, 4),
)
def test_a_harvest_never_loses_a_racing_write(
    pre: set[int], writes: list[RacingWrite], start_word: int, words: int
) -> None:
    dev = Device(CFG)
    drv = ModelDriver(dev)
    for p in pre:
        dev.mem_write(p * P, b"\1" * 8)
    start, count = 64 * start_word, 64 * min(words, 4 - start_word)
    drv.launch(Op.HARVEST_DIRTY, start, count, clear=True)
    log = run_interleaved(dev, writes)
    first = drv.result()
    assert first.code == Status.OK
    bits = int.from_bytes(dev.result[: count // 8], "little")
    h1 = {start + i for i in range(count) if bits >> i & 1}
    h2 = drv.harvest(Op.HARVEST_DIRTY, 0, PAGES)
    in_range = set(range(start, start + count))
    written = {w[0] for w in log} | pre
    # Every written page in the range is reported now or left for the next harvest.
    assert written & in_range <= h1 | h2
    # Nothing is reported that was not written.
    assert h1 | h2 <= written
    # A page is in the first harvest only if it was written; pages written
    # entirely before the harvest began (pre) must be in it.
    assert pre & in_range <= h1
    # Pages outside the range are untouched by the harvest.
    assert written - in_range <= h2
    assert first.result0 == len(h1)


@settings(max_examples=150, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.sampled_from(["before_set", "inflight", "after_set", "after_discard"]), st.integers(0, 511)),
        max_size=4,
    )
)
def test_b_discard_never_answers_clean_after_a_write(writes: list[tuple[str, int]]) -> None:
    """Writes placed around BAT_SET and BAT_DISCARD of page 7. 'inflight' is
    accepted before BAT_SET and completes after it."""
    dev = Device(CFG)
    drv = ModelDriver(dev)
    page = 7
    inflight = []
    for when, q in writes:
        if when == "before_set":
            dev.mem_write(page * P + 8 * q, b"\2" * 8)
        elif when == "inflight":
            inflight.append(dev.write_begin(page * P + 8 * q, 8))
    assert drv.cmd(Op.BAT_SET, page, 1234, 3).code == Status.OK
    for tok in inflight:
        assert tok is not None
        dev.write_end(tok, b"\3" * 8)
    for when, q in writes:
        if when == "after_set":
            dev.mem_write(page * P + 8 * q, b"\4" * 8)
    res = drv.cmd(Op.BAT_DISCARD, page)
    for when, q in writes:
        if when == "after_discard":
            dev.mem_write(page * P + 8 * q, b"\5" * 8)
    touched_after_set = any(w in ("inflight", "after_set") for w, _ in writes)
    clean = bool(res.result1 >> 32 & 1)
    assert clean == (not touched_after_set)
    if clean:
        assert (res.result0, res.result1 & 0xFFFF) == (1234, 3)
    # After a discard the association is gone either way.
    assert drv.cmd(Op.BAT_GET, page).result1 == 0


slot_write_st = st.lists(
    st.tuples(st.integers(0, 4095), st.sampled_from([1, 2, 4, 8]), st.integers(0, 2**64 - 1)), max_size=40
)


@settings(max_examples=120, deadline=None)
@given(
    old=st.binary(min_size=256, max_size=256),
    slot_writes=slot_write_st,
    full=st.booleans(),
    racing=st.lists(st.tuples(st.integers(0, 31), st.integers(0, 70)), max_size=6),
)
def test_c_slot_bytes_win_in_a_merge(
    old: bytes, slot_writes: list[tuple[int, int, int]], full: bool, racing: list[tuple[int, int]]
) -> None:
    dev = Device(CFG)
    drv = ModelDriver(dev)
    page = 40
    base = page * P
    old_page = (old * (P // len(old)))[:P]
    for off in range(0, P, 8):
        dev.mem_write(base + off, old_page[off : off + 8])
    slot = drv.cmd(Op.SLOT_ALLOC, 99).result0
    expect_slot: dict[int, int] = {}
    if full:
        drv.window_write(slot, 0, bytes([0xC3]) * P)
        expect_slot = dict.fromkeys(range(P), 0xC3)
    for off, size, value in slot_writes:
        off -= off % size
        data = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        drv.window_write(slot, off, data)
        for i, b in enumerate(data):
            expect_slot[off + i] = b
    assert dev.slots[slot].full == (len(expect_slot) == P)
    # Racing qword writes to the destination at chosen merge steps.
    drv.launch(Op.SLOT_MERGE, slot, page)
    steps = 0
    racing_bytes: dict[int, set[int]] = {}
    for q, at in sorted(racing, key=lambda r: r[1]):
        while dev.busy and steps < at:
            dev.step()
            steps += 1
        dev.mem_write(base + 8 * q, bytes([0xEE]) * 8)
        for i in range(8):
            racing_bytes.setdefault(8 * q + i, set()).add(0xEE)
    while dev.busy:
        dev.step()
    res = drv.result()
    assert res.code == Status.OK and res.result0 == len(expect_slot)
    final = dev.mem.read(base, P)
    for i in range(P):
        if i in racing_bytes:
            allowed = racing_bytes[i] | ({expect_slot[i]} if i in expect_slot else set())
            assert final[i] in allowed, i
            if i not in expect_slot:
                assert final[i] == 0xEE, f"racing write to unmasked byte {i} lost"
        elif i in expect_slot:
            assert final[i] == expect_slot[i], f"slot byte {i} lost"
        else:
            assert final[i] == old_page[i], f"old byte {i} clobbered"
