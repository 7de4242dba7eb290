# SPDX-License-Identifier: Apache-2.0
"""Harvests by DMA through the driver (docs/spec.md section 5.3, issue 16): the QEMU device
writes each result into the driver's coherent buffer. The guest program compares DMA and
RESULT-window (CXLT_HARVEST_F_MMIO) results, races a writer against DMA harvests with CLEAR
(property (a)), and turns bus mastering off under the driver: the harvest fails with EIO and
no written page is lost. The QEMU device has CAP_DMA.LIST, so the driver's dirty and accessed DMA
commands fetch lists of the non-zero words (spec 5.4) unless harvest_list=0 or the last DMA
harvest of the kind found 1/4 or more of its 64-page words non-zero (then the bitmap): the tests
here run the list path, one compares it with the bitmap path, and the last follows the choice
round by round through stats/harvests_list and stats/harvests_bitmap."""

from __future__ import annotations

import re

from conftest import DAX, TrackerFactory

# 8192 pages: a 1 KiB bitmap, above the driver's default dma_min_bytes (128), so DMA is used.
PAGES = 8192


def test_dma_and_mmio_results_are_equal(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    assert t.sysfs("stats/dma_commands") == "0"
    out = t.run(f"cxlt-test dmaab {DAX} {PAGES} 6 21", timeout=600).out
    print(out)
    assert "ok dmaab" in out, out
    assert int(t.sysfs("stats/dma_commands")) > 0


def test_racing_writers_never_lose_a_bit_across_dma_harvests(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    out = t.run(f"cxlt-test dmarace {DAX} {PAGES} 10 22", timeout=600).out
    print(out)
    assert "ok race" in out and "ok dmarace" in out, out


def test_bus_mastering_off_is_an_error_and_loses_no_bit(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    out = t.run(f"cxlt-test dmafault {DAX} {t.bdf} {PAGES}", timeout=600).out
    print(out)
    assert "ok dmafault" in out, out
    # The driver saw a command fail; the kernel stayed up and the device answers again.
    assert int(t.sysfs("stats/cmd_errors")) >= 1
    t.run("cxltrack harvest dirty 0 64")


def test_harvest_dma_0_forces_the_mmio_path(tracker_vm: TrackerFactory) -> None:
    """The module parameter for A/B runs: with harvest_dma=0 no DMA command is issued."""
    t = tracker_vm()
    t.run("echo 0 > /sys/module/cxltrack/parameters/harvest_dma")
    before = int(t.sysfs("stats/dma_commands"))
    t.run(f"cxltrack harvest dirty 0 {PAGES}")
    assert int(t.sysfs("stats/dma_commands")) == before
    t.run("echo 1 > /sys/module/cxltrack/parameters/harvest_dma")
    t.run(f"cxltrack harvest dirty 0 {PAGES}")
    assert int(t.sysfs("stats/dma_commands")) == before + 1


def test_list_and_bitmap_transfers_give_the_mmio_results(tracker_vm: TrackerFactory) -> None:
    """harvest_list=1 (default: the device writes records, the driver expands them) and harvest_list=0
    (the device writes the bitmap): both equal the RESULT-window results, and both use DMA."""
    t = tracker_vm()
    assert t.run("cat /sys/module/cxltrack/parameters/harvest_list").out.strip() == "Y"
    for on in (1, 0):
        t.run(f"echo {on} > /sys/module/cxltrack/parameters/harvest_list")
        before = int(t.sysfs("stats/dma_commands"))
        out = t.run(f"cxlt-test dmaab {DAX} {PAGES} 4 {30 + on}", timeout=600).out
        assert "ok dmaab" in out, out
        assert int(t.sysfs("stats/dma_commands")) > before


def test_list_or_bitmap_follows_the_last_rounds_density(tracker_vm: TrackerFactory) -> None:
    """The driver takes the list while the previous DMA harvest of the kind found fewer than 1/4 of
    its words non-zero (none yet counts as 0), the bitmap otherwise. Each cxlt-test density round
    writes N pages, makes one DMA dirty harvest with CLEAR and checks it reported exactly the
    pages written (its other harvests are by MMIO, which neither count nor measure)."""
    t = tracker_vm()
    words = PAGES // 64

    def counts() -> tuple[int, int]:
        return int(t.sysfs("stats/harvests_list")), int(t.sysfs("stats/harvests_bitmap"))

    def round_(written: int, seed: int, want: str) -> None:
        before = counts()
        out = t.run(f"cxlt-test density {DAX} {PAGES} {written} {seed}", timeout=600).out
        assert "ok density" in out, out
        after = counts()
        used = (after[0] - before[0], after[1] - before[1])
        assert used == ((1, 0) if want == "list" else (0, 1)), (
            f"round {seed} ({written} pages): wanted {want}, (list, bitmap) went {before} -> {after}"
        )

    assert counts() == (0, 0)
    dense = PAGES * 7 // 8  # every word non-zero (all but ~2^-190 of the time)
    round_(dense, 1, "list")  # no history yet
    round_(dense, 2, "bitmap")  # after a dense round
    round_(3, 3, "bitmap")  # still after a dense one; this one is sparse
    round_(3, 4, "list")  # after a sparse round: the list again
    # The threshold: one page in each of N words makes exactly N of the 128 words non-zero.
    round_(words // 4, 5, "list")
    round_(words // 4 - 1, 6, "bitmap")  # after exactly 1/4: not below it
    round_(words // 4 - 1, 7, "list")  # after just below 1/4
    # harvest_list=0 forces the bitmap whatever the density; the bitmap measures it too.
    t.run("echo 0 > /sys/module/cxltrack/parameters/harvest_list")
    round_(3, 8, "bitmap")
    t.run("echo 1 > /sys/module/cxltrack/parameters/harvest_list")
    round_(dense, 9, "list")
    # Per kind: the accessed bits have no DMA history yet, so they take the list while the
    # dirty bits, after the dense round, take the bitmap.
    before = counts()
    t.run(f"cxltrack harvest accessed 0 {PAGES} --format count")
    assert counts() == (before[0] + 1, before[1])
    round_(3, 10, "bitmap")


def test_cpubench_takes_each_round_three_ways(tracker_vm: TrackerFactory) -> None:
    """The small version of `make bench-harvest`'s host half (tests/driver/bench_host_cpu.py): cxlt-test cpubench
    prints its three medians, and its rounds went the ways it names: sparse rounds by DMA as the driver chooses
    take the list, the forced ones the bitmap, and harvest_list is 1 again afterwards."""
    t = tracker_vm()
    before = int(t.sysfs("stats/harvests_list")), int(t.sysfs("stats/harvests_bitmap"))
    rounds = 3
    out = t.run(f"cxlt-test cpubench {DAX} {rounds} 10", timeout=600).out
    m = re.search(r"mmio_us=([\d.]+) dma_us=([\d.]+) bitmap_us=([\d.]+)", out)
    assert m and all(float(v) > 0 for v in m.groups()), out
    after = int(t.sysfs("stats/harvests_list")), int(t.sysfs("stats/harvests_bitmap"))
    # one more list: cpubench's first harvest, before the rounds
    assert (after[0] - before[0], after[1] - before[1]) == (rounds + 1, rounds), (before, after, out)
    assert t.run("cat /sys/module/cxltrack/parameters/harvest_list").out.strip() == "Y"
