# SPDX-License-Identifier: Apache-2.0
"""One line that says what an L2 VM that stopped answering was doing, for the head of its
diagnostics: a CI excerpt shows the first lines of a failure and nothing after them (the CI run
of 2026-11-29 lost `test_false_reads_baseline_vs_prevent` to an unanswered poll, and its excerpt
ended in the register dump of the -d cpu_reset log, before the counters that would have told a
slow guest from a loop)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
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


# The line of NestedVm._vcpu_places() with the instructions at vCPU 0's RIP (its bytes, HMP x/16xb
# $pc, decoded here: the VM's QEMU in L1 is built without a disassembler, and its `x/3i` answers
# "Asm output not supported on this arch")
INSNS = "instructions at RIP: "
HEX_BYTE = re.compile(r"\b0x([0-9a-fA-F]{2})\b")


def hmp_bytes(dump: str) -> bytes:
    """The bytes of an HMP `x/Nxb` dump ("ffffffffc0984b40: 0x89 0x02 ...", one line per 8)."""
    return bytes(int(h, 16) for line in dump.splitlines() for h in HEX_BYTE.findall(line.partition(":")[2]))


def decode(rip: int, code: bytes, count: int = 3) -> list[str]:
    """The first `count` x86-64 instructions of `code` at address `rip` ("ffffffffc0984b40: mov
    %eax,(%rdx)") by binutils' objdump, or the bytes in hex when there is no objdump."""
    if not code:
        return ["(no bytes)"]
    objdump = shutil.which("objdump")
    if objdump is None:
        return [f"{rip:x}: bytes {code.hex(' ')} (no objdump to decode them)"]
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:  # objdump reads an ordinary file only
        f.write(code)
        f.flush()
        res = subprocess.run(
            [objdump, "-D", "-b", "binary", "-m", "i386:x86-64", f"--adjust-vma={rip:#x}", f.name],
            capture_output=True,
            timeout=10,
            check=False,
        )
    # "ffffffffc0984b40:\t89 02                \tmov    %eax,(%rdx)"
    insns = [
        ln.split("\t") for ln in res.stdout.decode(errors="replace").splitlines() if re.match(r"^\s*[0-9a-f]+:\t", ln)
    ]
    out = [f"{i[0].strip()} {' '.join(i[2].split())}" for i in insns if len(i) >= 3][:count]
    return out or [f"{rip:x}: bytes {code.hex(' ')} (objdump: {res.stderr.decode(errors='replace').strip()[:80]})"]


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
