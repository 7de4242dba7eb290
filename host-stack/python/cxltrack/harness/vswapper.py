# SPDX-License-Identifier: Apache-2.0
"""VSwapper's workloads on a nested host whose VM keeps its device node within a resident limit
(the swap mapper's memory manager, docs/swap-design.md section 2), with the device's offload and
without (the baseline). Used by tests/nested/test_nested_memory_manager.py (small) and
`make experiments-vswapper`."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cxltrack.harness.agent import CommandResult, GuestError
from cxltrack.harness.nested import (
    MOUNT_CGROUP2,
    DeviceMemory,
    Host,
    MemoryManager,
    MiB,
    NestedVm,
    VmSpec,
    repeat_on_silent_reset,
)

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
    "readahead-hits",
    "readahead-unused",
    "host-reads",
    "host-read-pages",
    "stale-reads",
    "stale-reads-avoided",
    "double-paging",
    "double-paging-avoided",
    "evicted-compared",
    "copied-in",
    "mm-errors",
    "periods",
    "associated-pages",
    # the False Reads Preventer (MemoryManager.prevent, issue 14)
    "prevent-flagged",
    "prevent-unflagged",
    "prevent-full",
    "false-reads-avoided",
    "prevent-fetches",
    "prevent-exits",
    "prevent-timeouts",
    "prevent-nonseq",
    "prevent-lost",
    "prevent-early-wakes",
)


@dataclass
class WorkloadResult:
    offload: bool
    limit: int
    # the stock baseline (host kernel reclaim in a memory cgroup): counters are swap-writes,
    # swap-ins (/proc/vmstat) and silent-writes (cxlt-swapmatch, a lower bound)
    stock: bool = False
    counters: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # per workload, in the guest
    # per workload: what the counters grew by while it ran (resident-pages: at its end)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)
    wrong_pages: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return "stock" if self.stock else "device" if self.offload else "baseline"

    @property
    def run_len(self) -> float:
        """Pages the VM needed per read of image or swap (run_len()) while it checked its disk
        cache in disk order, after it had touched it in random order (the check2 stage of
        cxlt-diskread): the reads that show the swap area's decayed sequentiality, and none
        the device avoids altogether (stale reads, double paging)."""
        return run_len(self.phases["check2"])


def run_len(c: dict[str, int]) -> float:
    """Pages the VM needed per read of image or swap: the read's own fault-in and the read-ahead
    pages later faulted on (read-ahead pushed out unused does not count)."""
    return (c["host-reads"] + c["readahead-hits"]) / max(c["host-reads"], 1)


def counters(vm: NestedVm) -> dict[str, int]:
    return vm.manager_counters(COUNTERS)


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
    "mkswap /dev/vda >/dev/null && swapon /dev/vda && "
    + MOUNT_CGROUP2
    + " && echo +memory > /sys/fs/cgroup/cgroup.subtree_control && mkdir -p /sys/fs/cgroup/w && "
    "echo {cap} > /sys/fs/cgroup/w/memory.high && "
    "sh -c 'echo $$ > /sys/fs/cgroup/w/cgroup.procs && exec cxl-memtest node 1 {size}K 7 3'"
)


def managed_vm(name: str, manager: MemoryManager) -> VmSpec:
    """A VM on the disk DISK whose device node (kmem, NODE) the swap mapper's `manager` runs."""
    return VmSpec(name, device=DeviceMemory("kmem", NODE), disk=DISK, swap_mapper_disk=DISK_ID, memory_manager=manager)


def managed_spec(name: str, offload: bool, limit: int, period_ms: int = 100) -> VmSpec:
    """A VM on the disk DISK whose device node the swap mapper's manager keeps within `limit`."""
    return managed_vm(name, MemoryManager(offload=offload, resident_limit=limit, period_ms=period_ms))


@repeat_on_silent_reset("memory manager workloads")
def run_workloads(
    host: Host, offload: bool, blocks: int, limit: int, anon: int, race_seconds: int = 10
) -> WorkloadResult:
    """In one VM whose device node the host keeps within `limit` bytes: a process's own cache of
    the disk (cxlt-diskread over `blocks` blocks: memory written long ago, a disk read into it,
    checked in random rounds, left alone while the host evicts it, checked again in disk order
    (phase check2), left alone again and written to the disk's second half with O_DIRECT:
    double paging), stores and disk reads racing the evictions for `race_seconds`
    (cxlt-racewrite over `anon` bytes, checked against a shadow copy), anonymous memory
    (cxl-memtest over `anon` bytes: written, left alone, checked), then the same in a guest
    memory cgroup of three quarters of that (memory.high: throttled, never killed) with the disk
    as the VM's swap (GUEST_SWAP). Every page is checked against its block, its pattern or its
    shadow; wrong pages are counted, not raised."""
    spec = managed_spec("vm-offload" if offload else "vm-base", offload, limit)
    r = WorkloadResult(offload, limit)
    host.run(f"cp {DISK}.orig {DISK}")
    vm = host.start_vm(spec)
    try:
        run_in(vm, r, blocks, anon, race_seconds, lambda: counters(vm))
    finally:
        vm.shutdown()
        host.release(vm)
    return r


STAGES = "/tmp/cxlt-stages"
# The longest a staged() poll waits for the guest to answer (see staged()).
POLL_TIMEOUT_S = 600.0


def staged(
    vm: NestedVm, cmd: str, stages: tuple[str, ...], at: Callable[[str], None], timeout: float = 900
) -> CommandResult:
    """Run `cmd` (a guest tool that honours CXLT_STAGE_DIR) in the background of `vm`, calling
    `at(stage)` when it reached each of `stages` and letting it go on after; its result.

    The polls share the run's deadline, at most POLL_TIMEOUT_S each, not a short command's
    timeout: while the tool runs, the guest may answer slowly (a Preventer fill makes a VM exit
    per emulated store, and on a loaded machine TCG starves the host's vCPUs), and how fast it
    answers is not what the workloads measure. A guest that does not answer at all still fails
    within POLL_TIMEOUT_S, with the VM's diagnostics."""
    vm.run(f"rm -rf {STAGES} && mkdir {STAGES}")
    vm.run(f"(CXLT_STAGE_DIR={STAGES} {cmd} > {STAGES}/out 2>&1; echo $? > {STAGES}/rc) >/dev/null 2>&1 &")
    t0 = time.monotonic()
    deadline = t0 + timeout

    def poll(command: str, check: bool = True) -> CommandResult:
        return vm.run(command, timeout=max(min(deadline - time.monotonic(), POLL_TIMEOUT_S), 30), check=check)

    for stage in (*stages, None):
        want = f"{STAGES}/at-{stage}" if stage else f"{STAGES}/rc"
        while poll(f"test -e {want}", check=False).status != 0:
            if time.monotonic() > deadline:
                raise GuestError(f"{cmd}: no {want} in {timeout} s")
            time.sleep(0.25)  # the tool waits for the go: the poll only delays
        if stage:
            at(stage)
            poll(f"touch {STAGES}/go-{stage}")
    status = int(poll(f"cat {STAGES}/rc").out.strip())
    return CommandResult(cmd, status, poll(f"cat {STAGES}/out").stdout, b"", False, time.monotonic() - t0)


def run_in(
    vm: NestedVm, r: WorkloadResult, blocks: int, anon: int, race_seconds: int, count: Callable[[], dict[str, int]]
) -> None:
    """The workloads of run_workloads() in `vm`, with `count()` read before and after each, and
    around the diskread's second check (phase check2)."""
    before = count()
    marks: dict[str, dict[str, int]] = {}

    def mark(stage: str) -> None:
        marks[stage] = count()

    for name, cmd in (
        ("diskread", f"cxlt-diskread 1 /dev/vda {blocks * 4096} 3 3 3"),
        ("racewrite", f"cxlt-racewrite 1 /dev/vda {anon} {race_seconds}"),
        ("memtest", f"cxl-memtest node 1 {anon // 1024}K 5 3"),
        ("guestswap", GUEST_SWAP.replace("{cap}", str(anon * 3 // 4)).replace("{size}", str(anon // 1024))),
    ):
        t0 = time.monotonic()
        if name == "diskread":
            res = staged(vm, cmd, ("check2", "checked2"), mark)
            r.phases["check2"] = delta(marks["check2"], marks["checked2"])
        else:
            res = vm.run(cmd, timeout=900, check=False)
        r.seconds[name] = time.monotonic() - t0
        if res.status != 0:
            r.failures.append(res.describe())
            m = re.search(r"wrong pages=(\d+)", res.out)
            r.wrong_pages += int(m.group(1)) if m else 1
        after = count()
        r.phases[name] = delta(before, after)
        before = after
    r.counters = before


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What the counters grew by (resident-pages: its value at the end)."""
    return {k: after[k] - (0 if k == "resident-pages" else before[k]) for k in after}


STOCK_CGROUP = "/sys/fs/cgroup/vm-stock-node"
STOCK_SHM = "/dev/shm/vm-stock-node"
STOCK_SWAP = "/dev/zram0"  # the host's swap device in the stock baseline (swap_on)


def vmstat(host: Host) -> dict[str, int]:
    out = host.run("cat /proc/vmstat").out
    stat = dict(line.split() for line in out.splitlines() if line.count(" ") == 1)
    return {"swap-writes": int(stat["pswpout"]), "swap-ins": int(stat["pswpin"])}


def swap_on(host: Host, size: int) -> None:
    """A swap device in the host: zram (STOCK_SWAP). Not a loop device over a
    file in the host's tmpfs, as first built: the loop driver charges its writes into the
    backing file to the memory cgroup of the pages it swaps out, so under the stock baseline's
    limit the cgroup filled with pages under writeback that could only finish by allocating in
    it; the VM's QEMU then faulted forever ("Out of memory and no killable processes"), which
    was the baseline's hang. zram's memory is not charged to a cgroup."""
    host.run(
        f"modprobe zram num_devices=1 && echo {size} > /sys/block/zram0/disksize && "
        f"mkswap {STOCK_SWAP} >/dev/null && swapon {STOCK_SWAP}",
        timeout=300,
    )


def swap_off(host: Host) -> None:
    host.run(f"swapoff {STOCK_SWAP}; echo 1 > /sys/block/zram0/reset", check=False, timeout=300)


@repeat_on_silent_reset("stock host workloads")
def run_stock(
    host: Host,
    blocks: int,
    limit: int,
    anon: int,
    race_seconds: int = 10,
    swap_size: int = 256 * MiB,
) -> WorkloadResult:
    """The stock way a Linux host swaps a VM's memory (issue 13 item 4), bounded like the
    manager's: the same VM and workloads with no swap mapper and no manager; the VM's device
    node is shared memory (a tmpfs file bound to the device's node) that cxlt-shmfill faulted
    in from a cgroup v2 whose memory.max is `limit`, so the host kernel's own reclaim keeps that
    node, and nothing else of the VM, within the limit (shared memory stays charged to the
    cgroup that faulted it, through swap-out and swap-in), swapping to zram (swap_on says why
    not a loop device over tmpfs). A cgroup around the
    whole QEMU instead bounds the guest kernel's memory too: under nested TCG the L2 kernel
    thrashed and its agent did not answer for minutes. Counted: the host's swap writes and
    swap-ins (/proc/vmstat: the VM is the host's only workload; zero-filled pages are not
    written, 6.12 keeps them in a bitmap) and, after the run, the swap area's pages equal to a
    block of the disk (cxlt-swapmatch: silent swap writes, a lower bound: a slot written twice
    shows only its last page). Stale reads and double paging cannot be told apart from other
    swap-ins; the stock host keeps no record of them. `anon` sizes the workloads only."""
    host.run("swapoff -a", check=False)
    swap_on(host, swap_size)
    host.run(
        f"rm -f {STOCK_SHM} && echo +memory > /sys/fs/cgroup/cgroup.subtree_control && "
        f"mkdir -p {STOCK_CGROUP} && echo max > {STOCK_CGROUP}/memory.max && "
        f"sh -c 'echo $$ > {STOCK_CGROUP}/cgroup.procs && exec cxlt-shmfill {STOCK_SHM} {NODE} {host.node}' && "
        f"echo {limit} > {STOCK_CGROUP}/memory.max",
        timeout=600,
    )
    spec = VmSpec("vm-stock", device=DeviceMemory("kmem-shm", NODE, shm=STOCK_SHM), disk=DISK)
    r = WorkloadResult(False, limit, stock=True)
    host.run(f"cp {DISK}.orig {DISK}")
    vm = host.start_vm(spec)
    try:
        run_in(vm, r, blocks, anon, race_seconds, lambda: vmstat(host))
        out = host.run(f"cxlt-swapmatch {STOCK_SWAP} {DISK}.orig", timeout=300).out
        m = re.search(r"equal_to_block=(\d+)", out)
        assert m, out
        r.counters["silent-writes"] = int(m.group(1))
        r.counters["node-charge"] = int(host.run(f"cat {STOCK_CGROUP}/memory.current").out)
    finally:
        vm.shutdown()
        host.release(vm)
        # the node's pages go before the swap (they need no swap-in then), and the limit goes
        # before swapoff, which would otherwise swap them in under it and invoke the OOM killer
        host.run(f"rm -f {STOCK_SHM}; echo max > {STOCK_CGROUP}/memory.max", check=False)
        swap_off(host)
    return r


@dataclass
class FalseReadsResult:
    """VSwapper's false reads (issue 14): a process allocates and fills memory in a VM whose
    memory the host evicted; every page it gets is zeroed by the guest kernel and then written
    whole, so every read of image or swap the host makes meanwhile fetches bytes that are
    overwritten at once."""

    prevent: bool
    fill: int
    limit: int
    counters: dict[str, int] = field(default_factory=dict)  # what they grew by during the fill
    fill_ms: float = 0.0  # the writing, timed in the guest
    seconds: float = 0.0  # the fill command, timed by the host
    wrong_bytes: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return "prevent" if self.prevent else "baseline"

    @property
    def false_reads(self) -> int:
        """Pages read from image or swap while the fill wrote (fault-ins with their read-ahead,
        and the Preventer's fetches of pages it had to read before unflagging them): each was
        overwritten whole by the guest right after."""
        return self.counters["host-read-pages"]


def false_reads_spec(name: str, prevent: bool, limit: int, prevent_max: int = 900) -> VmSpec:
    return managed_vm(name, MemoryManager(resident_limit=limit, period_ms=50, prevent=prevent, prevent_max=prevent_max))


def _wrong_bytes(out: str) -> int:
    m = re.search(r"wrong bytes=(\d+)", out)
    return int(m.group(1)) if m else 0


@repeat_on_silent_reset("false reads")
def run_false_reads(host: Host, prevent: bool, fill: int, limit: int, prevent_max: int = 900) -> FalseReadsResult:
    """A VM whose device node the host keeps within `limit` bytes: a process fills `fill` bytes
    of it and exits (its pages, freed in the guest, are evicted by the host to swap), then
    another does the same (cxlt-prevent fill), timed, with the counters read around it. With
    `prevent`, the manager flags what it evicts (at most `prevent_max` pages at once)."""
    r = FalseReadsResult(prevent, fill, limit)
    host.run(f"cp {DISK}.orig {DISK}")
    vm = host.start_vm(false_reads_spec("vm-prevent" if prevent else "vm-noprevent", prevent, limit, prevent_max))
    try:
        first = vm.run(f"cxlt-prevent fill 1 {fill}", timeout=1800, check=False)
        if first.status != 0:
            r.failures.append(first.describe())
            r.wrong_bytes += _wrong_bytes(first.out)
        # the freed pages age and go: wait until the manager is within its limit again
        deadline = time.monotonic() + 300
        c = counters(vm)
        while time.monotonic() < deadline:
            c = counters(vm)
            if c["resident-pages"] <= limit // 4096 + 16:
                break
            time.sleep(0.5)
        time.sleep(1.0)
        marks: dict[str, dict[str, int]] = {}
        times: dict[str, float] = {}

        def mark(stage: str) -> None:
            if stage == "filled":
                # flagged pages the fill wrote whole: the manager unflags them shortly after
                time.sleep(1.0)
            times[stage] = time.monotonic()
            marks[stage] = counters(vm)

        # only the writing is counted: its check reads pages the host evicted meanwhile
        res = staged(vm, f"cxlt-prevent fill 1 {fill}", ("fill", "filled"), mark, timeout=1800)
        r.seconds = times["filled"] - times["fill"] - 1.0
        r.counters = delta(marks["fill"], marks["filled"])
        if res.status != 0:
            r.failures.append(res.describe())
            r.wrong_bytes += _wrong_bytes(res.out) or 1
        m = re.search(r"ok fill pages=\d+ ms=(\d+)", res.out)
        r.fill_ms = float(m.group(1)) if m else 0.0
    finally:
        vm.shutdown()
        host.release(vm)
    return r
