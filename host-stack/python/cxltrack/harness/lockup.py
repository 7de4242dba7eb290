# SPDX-License-Identifier: Apache-2.0
"""A guest kernel's own report that one of its CPUs is stuck, read off the console while a
test runs.

Under multi-threaded TCG a vCPU now and then stops taking interrupts (docs/harness.md, "When
the agent stops answering"). In a nested host (L1) the first sign is often on another CPU: it
sends that vCPU an IPI (a TLB shootdown) and spins until it is answered, which it never is, and
the kernel's soft-lockup watchdog says so every half minute ("watchdog: BUG: soft lockup -
CPU#1 stuck for 961s! [khugepaged:41]"). From then on the guest answers nothing, and a test
waiting on it (a live migration, a VM's monitor through L1) would wait out its whole timeout.
`LockupWatch` reads the console log as it grows and, once a CPU has been stuck for
`threshold_s`, calls `on_lockup` with the report: the owner stops the guest, so the waits end
at once, and the test's failure can say the platform lost the machine (nested.HostWedged)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

SOFT_LOCKUP = re.compile(rb"soft lockup - CPU#(\d+) stuck for (\d+)s! \[([^\]]*)\]")
# The stuck CPU's instruction pointer, printed a few lines after: a symbol, and for a module's
# code the module in brackets ("RIP: 0010:cxlt_harvest+0x12/0x40 [cxltrack]").
RIP = re.compile(rb"RIP: [0-9a-f]{4}:(\S+)( \[[\w]+\])?")
# A CPU stuck in the project's own modules is the project's bug, never the platform's.
OWN_MODULES = ("cxltrack", "kvm", "kvm_amd")
# Lines after the report within which the kernel prints the RIP line (the report's burst).
RIP_WITHIN = 40
# Longer than any stall a busy emulated CPU recovers from in these tests: the watchdog reports
# at ~22 s and every ~26 s after; a CPU that catches up does so within the first reports.
DEFAULT_THRESHOLD_S = 120
POLL_S = 5.0


def stuck_report(text: bytes, threshold_s: int) -> str | None:
    """The first soft-lockup report in `text` of a CPU stuck for at least `threshold_s`, with
    where it is stuck ("CPU#1 stuck for 961 s in khugepaged:41 at smp_call_function_many_cond
    +0x137/0x4c0"). None while the report's RIP line may still be on its way."""
    for m in SOFT_LOCKUP.finditer(text):
        if int(m.group(2)) < threshold_s:
            continue
        what = f"CPU#{int(m.group(1))} stuck for {int(m.group(2))} s in {m.group(3).decode(errors='replace')}"
        after = text[m.end() :]
        burst = b"\n".join(after.split(b"\n")[: RIP_WITHIN + 1])
        rip = RIP.search(burst)
        if rip is not None:
            return f"{what} at {(rip.group(1) + (rip.group(2) or b'')).decode(errors='replace')}"
        if after.count(b"\n") > RIP_WITHIN:
            return what
        return None
    return None


def in_own_module(report: str) -> bool:
    """The stuck CPU runs code of one of the project's modules: a bug to report, not a loss."""
    return any(report.endswith(f" [{m}]") for m in OWN_MODULES)


class LockupWatch:
    """Watches `console` (a file QEMU appends to) from a daemon thread until `stop()`."""

    def __init__(self, console: Path, on_lockup: Callable[[str], None], threshold_s: int = DEFAULT_THRESHOLD_S) -> None:
        self.console = console
        self.on_lockup = on_lockup
        self.threshold_s = threshold_s
        self.report: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()  # poll() runs in the watch's thread and the owner's
        self._offset = 0
        # what is still to be read: from the first long report on (its RIP line may come a
        # poll later), or else the last line if it is incomplete
        self._pending = b""
        self._thread = threading.Thread(target=self._run, name=f"lockup-watch {console}", daemon=True)

    def start(self) -> LockupWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2 * POLL_S)

    def poll(self) -> str | None:
        """Reads what the console got since the last poll; the report once a CPU is stuck."""
        with self._lock:
            if self.report is not None:
                return self.report
            try:
                with open(self.console, "rb") as f:
                    f.seek(self._offset)
                    data = f.read()
            except OSError:
                return None
            self._offset += len(data)
            text = self._pending + data
            cut = text.rfind(b"\n") + 1
            long = (m for m in SOFT_LOCKUP.finditer(text, 0, cut) if int(m.group(2)) >= self.threshold_s)
            first = next(long, None)
            self._pending = text[first.start() :] if first else text[cut:]
            if first:
                self.report = stuck_report(text[first.start() : cut], self.threshold_s)
            return self.report

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            report = self.poll()
            if report is not None:
                self.on_lockup(report)
                return
