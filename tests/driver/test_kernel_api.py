# SPDX-License-Identifier: Apache-2.0
"""The exported in-kernel API (driver/include/linux/cxltrack.h) used from another
module (tests/driver/kmod/cxltrack_apitest.c) on a page of the region mapped
write-back with memremap(): discard-if-clean with and without a store, BAT after a
CPU fill, a final-round harvest with WBINVD, a slot merge into the mapped page,
chunks, and event notifiers. TCG has no cache model: the flushes run, but only
review can show they are needed."""

from __future__ import annotations

from conftest import TrackerFactory


def test_in_kernel_api_from_another_module(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    hpa = int(t.run("cat /sys/bus/dax/devices/dax0.0/resource").out, 0)
    page = 700  # the dax mapping starts at DPA 0
    t.run(f"modprobe cxltrack_apitest page={page} hpa={hpa + page * 4096:#x}")
    out = t.run("dmesg | grep cxltrack_apitest").out
    print(out)
    assert "cxltrack_apitest: PASS" in out and "FAIL" not in out
    # The API module holds no reference after init: both modules unload.
    t.run("rmmod cxltrack_apitest")


def test_a_function_reset_notifies_in_kernel_users(tracker_vm: TrackerFactory) -> None:
    """A function reset frees every chunk and slot without a scrub and clears the tables
    (spec section 11): in-kernel users registered for the tracker's notifications get
    CXLT_NOTIFY_RESET, once per reset, and the tracker works afterwards."""
    t = tracker_vm()
    t.run("modprobe cxltrack_apitest watch_reset=1")
    resets = "/sys/module/cxltrack_apitest/parameters/resets"
    assert t.run(f"cat {resets}").out.strip() == "0"
    for n in (1, 2):
        t.run(f"echo 1 > /sys/bus/pci/devices/{t.bdf}/reset", timeout=60)
        assert t.run(f"cat {resets}").out.strip() == str(n)
    t.run("rmmod cxltrack_apitest")
    t.run("cxltrack harvest dirty 0 64 --format count")
