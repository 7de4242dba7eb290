# SPDX-License-Identifier: Apache-2.0
"""One line that says what an L2 VM that stopped answering was doing, for the head of its
diagnostics: a CI excerpt shows the first lines of a failure and nothing after them (the CI run
of 2026-11-29 lost `test_false_reads_baseline_vs_prevent` to an unanswered poll, and its excerpt
ended in the register dump of the -d cpu_reset log, before the counters that would have told a
slow guest from a loop)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# `cxlt-vm threads`: "tid 123 CPU 0/KVM: R utime=10 stime=20 wchan=0"
THREAD = re.compile(r"^tid (\d+) (.+?): (\S) utime=(\d+) stime=(\d+)")
# `cxlt-vm kvmtrace`: "  exits +1234" under "KVM counters that moved in 2 s (...):"
KVM_MOVED = re.compile(r"^\s+(\w+) \+(-?\d+)$")


def vcpu_threads(threads: Sequence[str]) -> str:
    """The vCPU threads of a QEMU, each as `name state CPU-ticks`: a vCPU that is R with its
    ticks growing runs (the guest or KVM); one that sleeps waits for QEMU or the host."""
    out = []
    for line in threads:
        m = THREAD.match(line)
        if m and m.group(2).startswith("CPU "):
            out.append(f"{m.group(2)} {m.group(3)} {int(m.group(4)) + int(m.group(5))}t")
    return ", ".join(out) if out else "none found"


def kvm_moved(kvm: Sequence[str], top: int = 6) -> str:
    """The KVM counters that moved most, largest first."""
    moved = [(m.group(1), int(m.group(2))) for m in map(KVM_MOVED.match, kvm) if m]
    moved.sort(key=lambda kv: -abs(kv[1]))
    return " ".join(f"{k}+{v}" for k, v in moved[:top]) if moved else "nothing moved"


def counters_moved(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    """The manager's counters that changed between two reads."""
    moved = [f"{k}+{after[k] - v}" for k, v in before.items() if k in after and after[k] != v]
    return " ".join(moved) if moved else "nothing moved"


# The line of NestedVm._vcpu_places() with the instructions at vCPU 0's RIP (HMP x/3i $pc)
INSNS = "instructions at RIP: "


def rips(places: Sequence[str]) -> str:
    """vCPU 0's RIPs of the samples, `same` when they are one (a loop on one instruction), and
    the instruction at the last one if it was read."""
    found = [m.group(1) for m in (re.search(r"RIP=(\S+)", p) for p in places) if m]
    if not found:
        return "not sampled"
    at = [p.removeprefix(INSNS).split(" | ")[0] for p in places if p.startswith(INSNS)]
    where = f"{found[0]} (same in {len(found)} samples)" if len(set(found)) == 1 else " ".join(found)
    return where + (f": {at[0].strip()}" if at else "")


def stall_line(
    name: str,
    status: str,
    threads: Sequence[str],
    kvm: Sequence[str],
    before: Mapping[str, int] | None,
    after: Mapping[str, int] | None,
    places: Sequence[str],
    seconds: float,
) -> str:
    """What VM `name` did while it was looked at for `seconds`: its run state (QMP query-status:
    a VM QEMU stopped on an error is `internal-error`, not slow), its vCPU threads, the KVM and
    memory-manager counters that moved, and where vCPU 0 was."""
    line = (
        f"L2 {name} while not answering: run state {status}; vCPU threads {vcpu_threads(threads)}; "
        f"KVM in 2 s: {kvm_moved(kvm)}; vCPU 0 RIP {rips(places)}"
    )
    if before is not None and after is not None:
        line += f"; memory manager in {seconds:.1f} s: {counters_moved(before, after)}"
    return line
