# SPDX-License-Identifier: Apache-2.0
"""VSwapper's workloads on a nested host whose VM keeps its device node within a resident limit
(the swap mapper's memory manager, docs/swap-design.md section 2), with the device's offload and
without (the baseline). Used by tests/nested/test_nested_memory_manager.py (small) and
`make experiments-vswapper`."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from cxltrack.harness.nested import DeviceMemory, Host, MemoryManager, MiB, NestedVm, VmSpec

DISK = "/run/cxlt/vswapper.img"
DISK_ID = 7
NODE = 128 * MiB
COUNTERS = (
    "resident-pages",
    "evicted-clean",
    "evicted-zero",
    "swap-writes",
    "silent-writes",
    "faults-block",
    "faults-swap",
    "faults-zero",
    "readahead-pages",
    "host-reads",
    "host-read-pages",
    "stale-reads",
    "stale-reads-avoided",
    "double-paging",
    "copied-in",
    "mm-errors",
    "periods",
    "associated-pages",
)


@dataclass
class WorkloadResult:
    offload: bool
    limit: int
    counters: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # per workload, in the guest
    wrong_pages: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def run_len(self) -> float:
        return self.counters["host-read-pages"] / max(self.counters["host-reads"], 1)


def counters(vm: NestedVm) -> dict[str, int]:
    assert vm.qmp is not None
    return {c: int(vm.qmp.command("qom-get", path="/objects/swap0", property=c)) for c in COUNTERS}


def make_disk(host: Host, blocks: int) -> None:
    """The pattern image, kept pristine: each VM gets a fresh copy (its guest swap-out
    workload overwrites the disk)."""
    host.make_disk(DISK + ".orig", blocks * 4096, pattern=True)
    # the second half takes cxlt-diskread's write-back
    host.run(f"truncate -s {2 * blocks * 4096} {DISK}.orig")


# Guest swap-out: the disk becomes the VM's swap area, and a process in a memory cgroup
# smaller than what it writes makes the VM swap out; with the cgroup above the host's limit,
# the VM still holds pages the host evicted already, and swaps some of them out. (Not double
# paging the host can avoid with a 6.12 guest: swap_writepage() reads the page first, to find
# zero-filled ones, which brings it back as an ordinary fault.) Runs last: it overwrites the
# disk.
GUEST_SWAP = (
    "mkswap /dev/vda >/dev/null && swapon /dev/vda && mkdir -p /sys/fs/cgroup && "
    "{ grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup; } && "
    "echo +memory > /sys/fs/cgroup/cgroup.subtree_control && mkdir -p /sys/fs/cgroup/w && "
    "echo {cap} > /sys/fs/cgroup/w/memory.high && "
    "sh -c 'echo $$ > /sys/fs/cgroup/w/cgroup.procs && exec cxl-memtest node 1 {size}K 7 3'"
)


def run_workloads(host: Host, offload: bool, blocks: int, limit: int, anon: int) -> WorkloadResult:
    """In one VM whose device node the host keeps within `limit` bytes: a process's own cache of
    the disk (cxlt-diskread over `blocks` blocks: memory written long ago, a disk read into it,
    checked, left alone while the host evicts it, checked again, left alone again and written
    to the disk's second half with O_DIRECT: double paging) and anonymous memory
    (cxl-memtest over `anon` bytes: written, left alone, checked), then the same in a guest
    memory cgroup of three quarters of that (memory.high: throttled, never killed) with the
    disk as the VM's swap (GUEST_SWAP). Every page is checked against its block or its pattern;
    wrong pages are counted, not raised."""
    spec = VmSpec(
        "vm-offload" if offload else "vm-base",
        device=DeviceMemory("kmem", NODE),
        disk=DISK,
        swap_mapper_disk=DISK_ID,
        memory_manager=MemoryManager(offload=offload, resident_limit=limit),
    )
    r = WorkloadResult(offload, limit)
    host.run(f"cp {DISK}.orig {DISK}")
    vm = host.start_vm(spec)
    try:
        for name, cmd in (
            ("diskread", f"cxlt-diskread 1 /dev/vda {blocks * 4096} 3 3 3"),
            ("memtest", f"cxl-memtest node 1 {anon // 1024}K 5 3"),
            ("guestswap", GUEST_SWAP.replace("{cap}", str(anon * 3 // 4)).replace("{size}", str(anon // 1024))),
        ):
            t0 = time.monotonic()
            res = vm.run(cmd, timeout=900, check=False)
            r.seconds[name] = time.monotonic() - t0
            if res.status != 0:
                r.failures.append(res.describe())
                m = re.search(r"wrong pages=(\d+)", res.out)
                r.wrong_pages += int(m.group(1)) if m else 1
        r.counters = counters(vm)
    finally:
        vm.shutdown()
        host.release(vm)
    return r
