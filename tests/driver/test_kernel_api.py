# SPDX-License-Identifier: Apache-2.0
"""The exported in-kernel API (driver/include/linux/cxltrack.h) used from another
module (tests/driver/kmod/cxltrack_apitest.c) on a page of the region mapped
write-back with memremap(): discard-if-clean with and without a store, BAT after a
CPU fill, a final-round harvest with WBINVD, a slot merge into the mapped page,
chunks, and event notifiers. TCG has no cache model: the write-backs the API does for its
caller are seen where it asks the kernel for them (kprobes)."""

from __future__ import annotations

from conftest import CACHE_PROBES, TrackerFactory, kprobe_trace


def test_in_kernel_api_from_another_module(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    hpa = int(t.run("cat /sys/bus/dax/devices/dax0.0/resource").out, 0)
    page = 700  # the dax mapping starts at DPA 0
    _, events = kprobe_trace(t, CACHE_PROBES, f"modprobe cxltrack_apitest page={page} hpa={hpa + page * 4096:#x}")
    out = t.run("dmesg | grep cxltrack_apitest").out
    print(out, *events, sep="\n")
    assert "cxltrack_apitest: PASS" in out and "FAIL" not in out
    # Each call that is given the page's mapping writes it back, with what the module had
    # stored in it at that point: two discards of the fresh page, the association after a
    # fill with 0x3c, then the final-round harvest's WBINVD, the merge's write-back (byte 0
    # stored 1 before the harvest) and its invalidation after the merge (the slot's pattern).
    pattern = int.from_bytes(bytes((i * 7 + 3) & 0xFF for i in range(8)), "little")
    want = [("flush", 0), ("flush", 0), ("flush", 0x3C3C3C3C3C3C3C3C), ("wbinvd", None)]
    want += [("flush", 0x3C3C3C3C3C3C3C01), ("flush", pattern)]
    assert [(n, a.get("head")) for n, a in events] == want, events
    assert all(a["size"] == 4096 for n, a in events if n == "flush"), events
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
