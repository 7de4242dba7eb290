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
    host.make_disk(DISK, blocks * 4096, pattern=True)


def run_workloads(host: Host, offload: bool, blocks: int, limit: int, anon: int) -> WorkloadResult:
    """In one VM whose device node the host keeps within `limit` bytes: a process's own cache of
    the disk (cxlt-diskread over `blocks` blocks: memory written long ago, a disk read into it,
    checked, left alone while the host evicts it, checked again) and anonymous memory
    (cxl-memtest over `anon` bytes: written, left alone, checked). Every page is checked against
    its block or its pattern; wrong pages are counted, not raised."""
    spec = VmSpec(
        "vm-offload" if offload else "vm-base",
        device=DeviceMemory("kmem", NODE),
        disk=DISK,
        swap_mapper_disk=DISK_ID,
        memory_manager=MemoryManager(offload=offload, resident_limit=limit),
    )
    r = WorkloadResult(offload, limit)
    vm = host.start_vm(spec)
    try:
        for name, cmd in (
            ("diskread", f"cxlt-diskread 1 /dev/vda {blocks * 4096} 3 3"),
            ("memtest", f"cxl-memtest node 1 {anon // 1024}K 5 3"),
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
