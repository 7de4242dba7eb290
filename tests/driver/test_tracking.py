# SPDX-License-Identifier: Apache-2.0
"""The driver against ground truth: probe and configuration, dirty/accessed
bitmaps for a random writer, harvests racing writers (property a), the block
association and discard-if-clean racing a writer (property b), slot merges
(property c) and events, all through /dev/cxltrack0 and a /dev/dax0.0 mapping."""

from __future__ import annotations

import pytest
from conftest import DAX, TrackerFactory

from cxltrack import regs
from cxltrack.harness import GuestCommandError

_V = regs.REGISTERS["VERSION"]
HW_VERSION = f"{_V.field('MAJOR').get(_V.reset)}.{_V.field('MINOR').get(_V.reset)}"  # the register map's

CAPS = {
    "pages": lambda c: c.pages,
    "page_shift": lambda c: c.page_shift,
    "num_slots": lambda c: c.slots,
    "hot_bits": lambda c: c.hot_bits,
    "evq_depth_log2": lambda c: c.evq_depth_log2,
    "chunk_shift": lambda c: c.chunk_shift,
    "num_chunks": lambda c: c.chunks,
    "disk_bits": lambda c: c.bat_disk_bits,
    "block_bits": lambda c: c.bat_block_bits,
    "tick_ns": lambda c: c.tick_ns,
}


@pytest.mark.parametrize("config", ["default", "small"])
def test_probe_reads_the_configuration(tracker_vm: TrackerFactory, config: str) -> None:
    """The driver binds function 1, pairs it with the CXL memdev (function 0) and reports
    the device's CAP_* values, which differ between configurations (never the default)."""
    t = tracker_vm(config=config, region=False)
    for name, want in CAPS.items():
        assert int(t.sysfs(name)) == want(t.cfg), name
    assert t.sysfs("hw_version") == HW_VERSION
    assert t.sysfs("memdev") == t.bdf[:-1] + "0"
    assert t.run(f"basename $(readlink /sys/bus/pci/devices/{t.bdf[:-1]}0/driver)").out.strip() == "cxl_pci"
    assert t.run(f"basename $(readlink /sys/bus/pci/devices/{t.bdf}/driver)").out.strip() == "cxltrack"
    status = dict(line.split(": ", 1) for line in t.run("cxltrack status").out.splitlines() if ": " in line)
    assert status["slots"] == str(t.cfg.slots)
    assert status["chunks"].startswith(f"{t.cfg.chunks} x ")
    assert status["track_en"] == "1"
    assert f"cxltrack0: v{HW_VERSION}" in t.run("dmesg | grep cxltrack").out
    # Ranges come from the device: one page past the end is refused by the driver.
    end = t.cfg.pages
    r = t.run(f"cxltrack harvest dirty {end - 64} 128", check=False)
    assert r.status == 2 and "beyond the device" in r.err
    r = t.run(f"cxltrack bat get {end}", check=False)
    assert r.status == 1 and "Numerical result out of range" in r.err
    t.run(f"cxltrack bat get {end - 1}")


def test_dirty_and_accessed_equal_ground_truth(tracker_vm: TrackerFactory) -> None:
    """A random writer (stores to the dax mapping) and reader: each harvest with CLEAR equals
    exactly the pages touched since the previous one; a harvest after it reports nothing."""
    t = tracker_vm()
    print(t.run(f"cxlt-test dirty {DAX} 1024 12 11", timeout=300).out)
    print(t.run(f"cxlt-test accessed {DAX} 1024 12 12", timeout=300).out)
    # A range larger than one command (32768 pages) is split by the driver.
    t.run(f"cxlt-test dirty {DAX} 40960 2 13", timeout=300)
    # The CLI reports exactly a store made by another process.
    t.run("cxltrack harvest dirty 0 65536 --clear --format count")
    t.run(f"cxlt-test poke {DAX} {5 * 4096 + 17} 78")
    assert t.run("cxltrack harvest dirty 0 65536 --clear").out.split() == ["5"]


def test_harvest_racing_writer_loses_nothing(tracker_vm: TrackerFactory) -> None:
    """Property (a) end to end: a writer thread stores to random pages while another thread
    harvests with CLEAR in a loop; every page's last write is reported by a harvest that
    ended after it, and no page that was never written is reported."""
    t = tracker_vm()
    out = t.run(f"cxlt-test race {DAX} 2048 15 21", timeout=300).out
    print(out)
    assert "no lost write" in out


def test_association_invalidated_by_cpu_store(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    print(t.run(f"cxlt-test bat {DAX} 2048 300 31", timeout=300).out)
    # Through the CLI: set, store with the shell, the association is gone, discard says dirty.
    t.run("cxltrack bat set 9 1234 3")
    assert t.run("cxltrack bat get 9").out.strip() == "valid block=1234 disk=3"
    t.run("cxltrack bat discard 9")  # clean: returns and clears it
    t.run("cxltrack bat set 9 1234 3")
    t.run(f"cxlt-test peek {DAX} {9 * 4096} 8")  # a load does not invalidate
    assert t.run("cxltrack bat get 9").out.strip() == "valid block=1234 disk=3"
    t.run(f"cxlt-test poke {DAX} {9 * 4096 + 4095} 01")  # a 1-byte store does
    assert t.run("cxltrack bat get 9").out.strip() == "invalid"
    assert t.run("cxltrack bat discard 9").out.strip() == "dirty"


def test_discard_if_clean_racing_writer(tracker_vm: TrackerFactory) -> None:
    """Property (b): a store that completed before BAT_DISCARD started is never answered
    'clean'; the association never survives a discard."""
    t = tracker_vm()
    out = t.run(f"cxlt-test discard {DAX} 2048 1500 41", timeout=300).out
    print(out)
    assert "no false clean" in out


def test_slot_full_and_partial_merges(tracker_vm: TrackerFactory) -> None:
    """Property (c): slot bytes win, other bytes keep the old contents; the merge dirties the
    page and clears its association; the driver writes the window through its UC mapping."""
    t = tracker_vm()
    print(t.run(f"cxlt-test slot {DAX} 2048 24 51", timeout=300).out)
    # CLI path: a slot allocated without --keep is released when the command exits.
    slot = int(t.run("cxltrack slot alloc 77").out)
    assert "state=FREE" in t.run(f"cxltrack slot query {slot}").out
    slot = int(t.run("cxltrack slot alloc 77 --keep").out)
    t.run(f"cxltrack slot fill {slot} 0 4096 0xa5")
    assert "state=OPEN full=1 valid_bytes=4096" in t.run(f"cxltrack slot query {slot}").out
    assert t.run(f"cxltrack slot merge {slot} 100").out.strip() == "merged 4096 bytes"
    assert t.run(f"cxlt-test peek {DAX} {100 * 4096} 4096").out.strip() == "a5" * 4096
    # Partial: old bytes stay.
    t.run(f"cxlt-test poke {DAX} {101 * 4096} 0011223344556677")
    slot = int(t.run("cxltrack slot alloc 78 --keep").out)
    t.run(f"cxltrack slot write {slot} 2 eeff")
    assert t.run(f"cxltrack slot merge {slot} 101").out.strip() == "merged 2 bytes"
    assert t.run(f"cxlt-test peek {DAX} {101 * 4096} 8").out.strip() == "0011eeff44556677"


def test_zero_scrubs_a_range_and_starts_its_dirty_log_afresh(tracker_vm: TrackerFactory) -> None:
    """`cxltrack zero` (a VM's range before it starts; the QEMU client's zeroed=on then leaves
    never-written pages out of a migration's first round): the range reads zero, the device
    reports none of it dirty, and the next write is the only dirty bit, so a dirty bit then
    means written since zeroed. A chunk someone owns stops it."""
    t = tracker_vm()
    chunk_pages = 1 << (t.cfg.chunk_shift - t.cfg.page_shift)
    chunk = 6
    dpa = chunk << t.cfg.chunk_shift
    page = dpa >> t.cfg.page_shift
    t.run(f"cxlt-test poke {DAX} {dpa + 4096:#x} 5ec2e7")
    out = t.run(f"cxltrack zero {page} {2 * chunk_pages}", timeout=120).out
    assert f"zeroed pages {page}+{2 * chunk_pages}: 2 chunks scrubbed by the device" in out, out
    assert t.run(f"cxlt-test peek {DAX} {dpa + 4096:#x} 3").out.strip() == "000000"
    assert t.run(f"cxltrack harvest dirty {page} {2 * chunk_pages} --format count").out.strip() == "0"
    t.run(f"cxlt-test poke {DAX} {dpa + 3 * 4096 + 100:#x} 01")
    got = t.run(f"cxltrack harvest dirty {page} {2 * chunk_pages}").out.split()
    assert got == [str(page + 3)], got
    t.run(f"cxltrack chunk assign {chunk + 1} 9 --keep")
    r = t.run(f"cxltrack zero {page} {2 * chunk_pages}", check=False, timeout=120)
    assert r.status == 1 and f"chunk {chunk + 1}" in r.err and "busy" in r.err, (r.status, r.err)
    assert t.run(f"cxltrack chunk query {chunk + 1}").out.strip() == "state=OWNED owner=9"
    t.run(f"cxltrack chunk release {chunk + 1} 9")


def test_events_arrive_by_poll_and_read(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    out = t.run(f"cxlt-test events {DAX}", timeout=120).out
    print(out)
    assert "ok events" in out
    # `cxltrack watch` sees an event produced by another process.
    t.run("(sleep 1; cxltrack chunk assign 3 9 --keep; cxltrack chunk release 3 9) >/dev/null 2>&1 &")
    out = t.run("cxltrack watch -n 1 -t 20", timeout=60).out
    assert out.startswith("SCRUB_DONE index=3 arg=0x9"), out
    assert int(t.sysfs("stats/irqs")) > 0


def test_cli_help_and_argument_errors(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm(region=False)
    help_text = t.run("cxltrack --help").out
    for word in ("status", "harvest", "watch", "bat", "slot", "chunk", "bench", "zero"):
        assert word in help_text
    bad = {
        "cxltrack": "usage",
        "cxltrack frobnicate": "unknown command",
        "cxltrack harvest dirty 0 100": "multiples of 64",
        "cxltrack harvest sideways 0 64": "KIND must be",
        "cxltrack harvest hotness 0 64 --clear --decay": "exclude each other",
        "cxltrack bat set 1 2": "needs PAGE BLOCK DISK",
        "cxltrack bat get x": "bad PAGE",
        "cxltrack slot write 0 0 abc": "HEXBYTES",
        "cxltrack chunk assign 1 0": "OWNER must be",
        "cxltrack chunk assign 1 5 --kept": "needs CHUNK OWNER [--keep]",
        "cxltrack chunk release 1 5 --keep": "needs CHUNK OWNER",
        "cxltrack ctrl track_en=2": "0 or 1",
        "cxltrack zero 1 512": "multiples of a chunk",
        "cxltrack zero 0": "needs START COUNT",
    }
    for cmd, msg in bad.items():
        r = t.run(cmd, check=False)
        assert r.status == 2, (cmd, r.status)
        assert msg in r.err + r.out, (cmd, r.err)
    # Device-side refusals exit 1 with the errno named.
    r = t.run("cxltrack chunk release 1 5", check=False)
    assert r.status == 1 and "wrong state" in r.err
    t.run("cxltrack chunk assign 1 5 --keep")
    assert t.run("cxltrack chunk list 5").out.split() == ["count=1", "1"]
    assert t.run("cxltrack chunk list 0").out.split()[0] == f"count={t.cfg.chunks - 1}"
    assert t.run("cxltrack chunk query 1").out.strip() == "state=OWNED owner=5"
    r = t.run("cxltrack chunk assign 1 6 --keep", check=False)
    assert r.status == 1 and "busy" in r.err
    r = t.run("cxltrack chunk release 1 6", check=False)
    assert r.status == 1 and "not permitted" in r.err
    out = t.run("cxltrack bench --pages 4096 --iters 5 --clear", timeout=120).out
    print(out)
    # 5 harvests of 4096 pages (80 MiB): one command and a 512-byte bitmap each
    cost = next(ln for ln in out.splitlines() if ln.startswith("harvest cost per GiB logged (dirty, clear):"))
    fields = dict(w.split("=") for w in cost.split(":", 1)[1].split())
    assert float(fields["commands"]) == 64.0 and float(fields["mmio_bytes"]) == 32768.0, cost


def test_guest_test_program_detects_a_broken_truth(tracker_vm: TrackerFactory) -> None:
    """Negative control: with tracking disabled (CTRL.TRACK_EN=0) the dirty check must fail,
    so a passing run above means the bitmap was really compared."""
    t = tracker_vm()
    t.run("echo 0 > /sys/class/cxltrack/cxltrack0/track_en")
    with pytest.raises(GuestCommandError, match="reported 0, truth 1"):
        t.run(f"cxlt-test dirty {DAX} 256 1 3")
    # Association invalidation is never disabled (a safety property, spec section 2.1).
    t.run("cxltrack bat set 2 5 1")
    t.run(f"cxlt-test poke {DAX} {2 * 4096} 01")
    assert t.run("cxltrack bat get 2").out.strip() == "invalid"
    t.run("echo 1 > /sys/class/cxltrack/cxltrack0/track_en")
    assert t.run("cxltrack status | grep track_en").out.strip() == "track_en: 1"
