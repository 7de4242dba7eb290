# SPDX-License-Identifier: Apache-2.0
"""Harvests by DMA through the driver (docs/spec.md section 5.3, issue 16): the QEMU device
writes each result into the driver's coherent buffer. The guest program compares DMA and
RESULT-window (CXLT_HARVEST_F_MMIO) results, races a writer against DMA harvests with CLEAR
(property (a)), and turns bus mastering off under the driver: the harvest fails with EIO and
no written page is lost. The QEMU device has CAP_DMA.LIST, so the driver's dirty and accessed DMA
commands fetch lists of the non-zero words (spec 5.4) unless harvest_list=0: every test here runs
the list path, and the last one compares it with the bitmap path."""

from __future__ import annotations

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
