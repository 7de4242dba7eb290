# SPDX-License-Identifier: Apache-2.0
"""Property (a) at the ioctl boundary and the event read() contract: a harvest with
CLEAR cut short by a signal, a contending file or a fault in its buffer reports how
far it got and loses no dirty bit; read() into a bad buffer keeps the record."""

from __future__ import annotations

from conftest import DAX, TrackerFactory


def test_harvest_clear_short_results_lose_nothing(tracker_vm: TrackerFactory) -> None:
    """Whole-device harvests with CLEAR (two device commands each) while a writer dirties
    pages, SIGUSR1 hits the harvester every 50-250 us, a second file keeps the engine busy
    and the output buffer is write-protected at random: the driver must stop between
    commands and say how many pages it harvested (or fail before the first), so that
    every write is reported by a harvest that ended after it."""
    t = tracker_vm()
    out = t.run(f"cxlt-test sigrace {DAX} 256 20 4242", timeout=300).out
    print(out)
    assert "ok sigrace" in out
    # The run must have exercised the short and failed paths, or it proves nothing.
    calls = out.split("calls (")[1]
    short, eintr, efault = (int(w.split()[0]) for w in calls.split(", ")[:3])
    assert short + eintr + efault > 0, out


def test_read_efault_keeps_the_event(tracker_vm: TrackerFactory) -> None:
    """read() into a read-only page and into an unmapped address gives EFAULT; the record
    stays queued and the next read() returns it."""
    t = tracker_vm()
    out = t.run(f"cxlt-test evfault {DAX}", timeout=60).out
    print(out)
    assert "ok evfault" in out
