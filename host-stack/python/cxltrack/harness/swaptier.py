# SPDX-License-Identifier: Apache-2.0
"""The shared swap tier's workloads and measurements (issue 15, docs/swap-design.md section 5),
used by tests/nested/test_nested_swap_tier.py and `make experiments-memflex`
(cxltrack.experiments.memflex).

In the guest: a memory cgroup (CGROUP) with a limit; `cxl-memtest node 0 FILL SEED PAUSE` in
it writes more than the limit (the rest goes to swap), waits, then verifies every word. The
batch swap-in (`swapoff` of one area, MemFlex's proactive swap-in) is timed per MiB
(swapin_round); the workload's recovery after its limit is raised is timed with and without a
batch swap-in first (recovery_round: cxl-memtest waits for a go file, then touches and checks
every page). In the host: the device's chunk table (`cxltrack chunk query/list`) and the
chunks' contents through /dev/dax0.0 (cxlt-daxcount)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from .agent import GuestError
from .nested import MOUNT_CGROUP2, Host, NestedVm, TierCopy, TierRun

CGROUP = "/sys/fs/cgroup/tier"
TIER = "/dev/pmem0"
ZRAM = "/dev/zram0"


# -- the host's view of the chunks ---------------------------------------------------


def chunk_state(host: Host, chunk: int) -> tuple[str, int]:
    """(state, owner) of a chunk in the device's table (`cxltrack chunk query`)."""
    out = host.run(f"cxltrack chunk query {chunk}").out
    m = re.fullmatch(r"state=(\w+) owner=(\d+)\s*", out)
    if not m:
        raise GuestError(f"cxltrack chunk query {chunk}: {out!r}")
    return m.group(1), int(m.group(2))


def owned_chunks(host: Host, owner: int) -> list[int]:
    """`cxltrack chunk list OWNER` in the host: the device's chunk set of `owner`."""
    out = host.run(f"cxltrack chunk list {owner}").out.split()
    chunks = [int(w) for w in out[1:]]
    if not out or not out[0].startswith("count=") or int(out[0].split("=")[1]) != len(chunks):
        raise GuestError(f"cxltrack chunk list {owner}: {out}")
    return chunks


def wait_free(host: Host, chunks: range, timeout: float = 60) -> None:
    """Every chunk FREE with owner 0 (its scrub finished) within `timeout` seconds."""
    end = time.monotonic() + timeout
    states = {}
    while time.monotonic() < end:
        states = {c: chunk_state(host, c) for c in chunks}
        if all(s == ("FREE", 0) for s in states.values()):
            return
        time.sleep(0.5)
    raise AssertionError(f"chunks not FREE after {timeout} s: {states}")


def nonzero_pages(host: Host, run: TierRun) -> int:
    """Pages of the run holding a byte that is not zero, read in the host through /dev/dax0.0."""
    out = host.run(f"cxlt-daxcount /dev/dax0.0 {run.offset} {run.size}", timeout=300).out
    m = re.match(r"pages=(\d+) nonzero=(\d+) ", out)
    if not m or int(m.group(1)) != run.size // 4096:
        raise GuestError(f"cxlt-daxcount over {run}: {out!r}")
    return int(m.group(2))


# -- the workload in the guest -------------------------------------------------------------


def memory_cgroup(vm: NestedVm, limit: int, cgroup: str = CGROUP) -> None:
    """The guest's memory cgroup `cgroup` (cgroup v2; default CGROUP) with memory.max = `limit` bytes."""
    vm.run(
        f"{MOUNT_CGROUP2} && echo +memory > /sys/fs/cgroup/cgroup.subtree_control && mkdir -p {cgroup} && "
        f"echo {limit} > {cgroup}/memory.max"
    )


def start_memtest(
    vm: NestedVm,
    fill: int,
    seed: int,
    pause: int | str,
    out: str,
    cgroup: str = CGROUP,
    again: str = "",
    mibps: float = 0,
) -> None:
    """`cxl-memtest node 0 FILL SEED PAUSE [AGAIN]` in `cgroup`, in the background, its output
    in `out` and the pid of its shell in `out`.pid; the shell adds the tool's exit status (a
    workload killed by a signal says so). PAUSE: seconds, or a go file's path to wait for.
    AGAIN: a path; the workload verifies once, says "pass 1 ok", keeps its memory until that
    file exists and verifies again. `mibps` > 0: it fills at that rate at most."""
    rate = f"CXL_MEMTEST_MIBPS={mibps} " if mibps > 0 else ""
    vm.run(
        f"sh -c 'echo $$ > {cgroup}/cgroup.procs; {rate}cxl-memtest node 0 {fill} {seed} {pause} {again}; "
        f'echo "cxl-memtest exit $?"\' >{out} 2>&1 & echo $! > {out}.pid'
    )


def settled(vm: NestedVm, out: str, cgroup: str = CGROUP) -> None:
    """Wait until `cgroup`'s swap stopped growing (two equal readings 1 s apart) while the
    workload whose output goes to `out` still runs."""
    last, stable, deadline = -1, 0, time.monotonic() + 240
    while stable < 2 and time.monotonic() < deadline:
        cur = swap_current(vm, out, cgroup)
        stable = stable + 1 if cur == last and cur > 0 else 0
        last = cur
        time.sleep(1)
    if stable < 2:
        raise AssertionError(f"{vm.spec.name}: the cgroup's swap did not settle (last {last} bytes)")


def swap_current(vm: NestedVm, out: str, cgroup: str = CGROUP) -> int:
    """`cgroup`'s swap in bytes now; AssertionError if the workload whose output goes to `out`
    has ended (it should be waiting for its go)."""
    res = vm.run(f"cat {cgroup}/memory.swap.current; kill -0 $(cat {out}.pid) 2>/dev/null || echo gone")
    if "gone" in res.out:
        raise AssertionError(f"{vm.spec.name}: the workload ended before its pause: {vm.run(f'cat {out}').out}")
    return int(res.out)


def overflow_round(vm: NestedVm, full: float = 0.75) -> str | None:
    """One round of the host's agent for MemFlex's hybrid swap-out by the device's bits
    (docs/swap-design.md, "The host's overflow"): the books on the VM's runs
    (NestedVm.observe_tier); when the pages the guest still needs fill `full` of the run it
    swaps to now (the one on the device with the highest priority) and the VM has a root port
    left, the tier grows by a run as large as its coldest (coldest_tier_run), at a priority
    above all its runs, so the guest's next pages go there; with the pool exhausted the
    coldest run goes to disk first and its chunks are that run (grow_tier_or_overflow). The
    VM's other runs take its pages meanwhile. `full` 0.75: at 0.9 the guest, filling at 1 MiB/s,
    put more of its newest pages into the free slots of runs on disk while the agent (3 VMs in
    turn) had not yet reacted (docs/results.md, "the host's rule"). The tier object sent to
    disk, or None."""
    t = vm.spec.swap_tier
    if t is None or not vm.tier_live:
        return None
    books = vm.observe_tier()
    top = max(vm.tier_live, key=lambda obj: vm.tier_priority[obj])
    if books[top].live < full * (vm.tier_live[top].size // 4096) or vm.tier_ports_used >= t.grow_ports:
        return None
    chunks = vm.tier_live[vm.coldest_tier_run()].count
    _, moved = vm.grow_tier_or_overflow(chunks, t.priority + vm.tier_objects)
    return moved


def settled_with_overflow(vms: list[NestedVm], out: str, period: float = 0.5) -> dict[str, list[str]]:
    """settled() for several VMs at once, with the host's agent (overflow_round) watching each
    VM's tier meanwhile. The tier objects each VM sent to disk."""
    moved: dict[str, list[str]] = {vm.spec.name: [] for vm in vms}
    last = {vm.spec.name: -1 for vm in vms}
    stable = {vm.spec.name: 0 for vm in vms}
    deadline = time.monotonic() + 600
    while min(stable.values()) < 2:
        if time.monotonic() > deadline:
            raise AssertionError(f"the cgroups' swap did not settle: {last}")
        for vm in vms:
            name = vm.spec.name
            if stable[name] >= 2:
                continue
            obj = overflow_round(vm)
            if obj is not None:
                moved[name].append(obj)
            cur = swap_current(vm, out)
            stable[name] = stable[name] + 1 if cur == last[name] and cur > 0 and obj is None else 0
            last[name] = cur
        time.sleep(period)
    return moved


def swapped_out(vm: NestedVm, fill: int, seed: int, pause: int | str, out: str) -> None:
    """Start the workload (start_memtest) and return once its fill is done (settled)."""
    start_memtest(vm, fill, seed, pause, out)
    settled(vm, out)


def memtest_done(vm: NestedVm, out: str) -> str:
    """Wait for the workload to end; its output."""
    return vm.run(f"p=$(cat {out}.pid); while kill -0 $p 2>/dev/null; do sleep 1; done; cat {out}", timeout=600).out


@dataclass
class Verified:
    """What cxl-memtest said: every word right (`ok`), or the pages its mismatches span."""

    ok: bool
    bad_pages: int
    verified_at: float | None  # CLOCK_BOOTTIME when every word was checked
    text: str

    @classmethod
    def parse(cls, text: str, fill: int, seed: int) -> Verified:
        m = re.search(rf"^ok node 0 bytes={fill} seed={seed} .* verified_at=([\d.]+)$", text, re.M)
        bad = re.search(r"^\d+ of \d+ words differ in (\d+) pages$", text, re.M)
        if m is None and bad is None:
            raise GuestError(f"cxl-memtest neither verified nor counted mismatches: {text!r}")
        return cls(m is not None, int(bad.group(1)) if bad else 0, float(m.group(1)) if m else None, text)


def fill_pages_in(where: NestedVm | Host, seed: int, dev: str) -> list[int]:
    """The pages of a guest's `cxl-memtest node` fill with `seed` that `dev` holds, in the
    order they lie there: cxlt-pagefind in `where`, a guest (a block device read with
    O_DIRECT, as it is under a dm-writecache device) or the host (a VM's disk image:
    disk_pages)."""
    lines = where.run(f"cxlt-pagefind {seed} {dev}", timeout=300).out.splitlines()
    m = re.fullmatch(r"pages=(\d+) found=(\d+)", lines[0].strip()) if lines else None
    pages = [int(w) for w in (lines[1].split() if len(lines) > 1 else [])]
    if m is None or int(m.group(2)) != len(pages):
        raise GuestError(f"cxlt-pagefind {seed} {dev}: {lines[:1]}")
    return pages


def disk_pages(vm: NestedVm, seed: int) -> list[int]:
    """fill_pages_in of the VM's swap disk, read in the host from the disk's image file, which
    the VM's QEMU writes through L1's page cache (-drive cache=writeback): the bytes the guest's
    O_DIRECT read would get, without the guest's 16 384 virtio-blk requests for 64 MiB, each an
    MMIO notify that L1's KVM emulates under TCG (no NRIPS or decode assists): 0.1-0.2 s in the
    host against 19-156 s in the guest (docs/harness.md)."""
    return fill_pages_in(vm.host, seed, vm.swap_disk_path)


def swap_disk(vm: NestedVm) -> str:
    """The guest's device of its disk swap area (the virtio-blk disk with serial cxlt-swap),
    whether it is a swap area itself or a dm-writecache device's origin."""
    return vm.run(
        'for b in /sys/block/vd*; do [ "$(cat $b/serial 2>/dev/null)" = cxlt-swap ] && echo /dev/${b##*/}; done'
    ).out.strip()


def disk_area(vm: NestedVm) -> str:
    """The VM's disk swap area (the virtio-blk disk, /dev/vd*) in /proc/swaps."""
    disk = [d for d in vm.swaps() if d.startswith("/dev/vd")]
    if len(disk) != 1:
        raise GuestError(f"{vm.spec.name}: not one disk swap area: {vm.swaps()}")
    return disk[0]


def swap_on(vm: NestedVm, area: str, priority: int) -> None:
    """Swap to `area` again (its swap header stays through a swapoff)."""
    vm.run(f"cxlt-swapon -p {priority} {area}")


def tier_on(vm: NestedVm, priority: int = 10) -> None:
    """Swap to the VM's current tier device again (NestedVm.tier_dev), unless it is on."""
    if vm.tier_dev not in vm.swaps():
        swap_on(vm, vm.tier_dev, priority)


def zram_on(vm: NestedVm, size: int, priority: int = 5) -> str | None:
    """A zram swap area of `size` bytes in the guest (lz4, the kernel's default), or None when
    the guest's kernel has no zram."""
    if not vm.run("modprobe zram num_devices=1", check=False).ok:
        return None
    vm.run(f"echo {size} > /sys/block/zram0/disksize && mkswap {ZRAM} >/dev/null && cxlt-swapon -p {priority} {ZRAM}")
    return ZRAM


def zswap(vm: NestedVm, on: bool) -> bool:
    """Turn the guest kernel's zswap (a compressed cache in RAM in front of every swap area) on
    or off; False when the kernel has none."""
    param = "/sys/module/zswap/parameters/enabled"
    if not vm.run(f"test -w {param}", check=False).ok:
        return False
    vm.run(f"echo {'Y' if on else 'N'} > {param}")
    return True


def zswap_ins(vm: NestedVm) -> int:
    """Pages the guest has swapped in from zswap since boot (/proc/vmstat zswpin)."""
    out = vm.run("grep '^zswpin ' /proc/vmstat || echo zswpin 0").out.split()
    return int(out[1])


def _waiting(
    vm: NestedVm, limit: int, fill: int, seed: int, cgroup: str = CGROUP, again: bool = False
) -> tuple[str, str]:
    """The workload in a cgroup of `limit`, swapped out and waiting for its go file:
    (its output file, the go file). With `again` it waits once more after its first pass,
    for the go file's name with ".again" added (start_memtest's AGAIN)."""
    memory_cgroup(vm, limit, cgroup)
    out, go = f"/tmp/memtest-{seed}.out", f"/tmp/go-{seed}"
    vm.run(f"rm -f {go} {go}.again")
    start_memtest(vm, fill, seed, go, out, cgroup, f"{go}.again" if again else "")
    settled(vm, out, cgroup)
    return out, go


def first_pass_done(vm: NestedVm, out: str, timeout: float = 600) -> None:
    """Wait until a workload started with AGAIN has verified every word once ("pass 1 ok")."""
    res = vm.run(
        f"until grep -q '^pass 1 ok' {out}; do kill -0 $(cat {out}.pid) 2>/dev/null || break; sleep 0.2; done; "
        f"grep '^pass 1 ok' {out} || {{ cat {out}; exit 1; }}",
        check=False,
        timeout=timeout,
    )
    if not res.ok:
        raise AssertionError(f"{vm.spec.name}: the workload's first pass failed: {res.out}")


def _uptime_cmd(var: str) -> str:
    return f"{var}=$(cut -d' ' -f1 /proc/uptime)"


def placement(vm: NestedVm, seed: int) -> dict[str, Any]:
    """Where the pages of `vm`'s waiting workload (cxl-memtest with `seed`) lie: `swapped_kib`
    per area (the tier's only the pages it alone holds: a block dm-writecache wrote back stays
    in the tier's memory until reused), the pages on disk newer than the oldest page the tier
    alone holds (the workload writes its pages in order and the guest's reclaim takes the
    oldest first, so the LRU rule leaves few), and, under the LRU rule, dm-writecache's
    counters."""
    disk = swap_disk(vm)
    on_disk = disk_pages(vm, seed)
    # The host rule: the runs the host sent to disk are files in its /dev/shm, and the runs on
    # the device are one swap area each (their pages count as the tier's, under TIER).
    devices = {obj: dev for dev, obj in vm.tier_plugged.items()} | {"tier0": TIER}
    on_host_disk = [p for path in vm.tier_on_disk.values() for p in fill_pages_in(vm.host, seed, path)]
    in_tier = {p for obj in vm.tier_live for p in fill_pages_in(vm, seed, devices[obj])}
    tier_only = sorted(in_tier - set(on_disk) - set(on_host_disk))
    newer = sum(1 for p in on_disk + on_host_disk if tier_only and p > tier_only[0])
    return {
        "swapped_kib": {TIER: len(tier_only) * 4, disk: len(on_disk) * 4}
        | ({"host disk": len(on_host_disk) * 4} if vm.tier_on_disk else {}),
        "disk_pages": len(on_disk) + len(on_host_disk),
        "disk_pages_newer_than_tier": newer,
        "swaps_kib": {d: u for d, (_, u, _) in vm.swaps().items()},
        "dm": vm.tier_dm_status() if vm.tier_dm is not None else None,
    }


# -- measurements ----------------------------------------------------------------


@dataclass
class SwapIn:
    """One batch swap-in (swapoff) of `area` holding `mib` MiB."""

    area: str
    mib: float
    seconds: float
    verified: Verified
    label: str = ""  # what the area was, where the device name does not say (a throttled disk)

    @property
    def name(self) -> str:
        return self.label or self.area

    @property
    def ms_per_mib(self) -> float:
        return self.seconds * 1000 / self.mib


def swapin_round(vm: NestedVm, area: str, limit: int, fill: int, seed: int, label: str = "") -> SwapIn:
    """The workload swaps out to `area`, which must be the only area that takes pages (the
    highest priority, or the only one on); then the limit is lifted and `swapoff AREA` (a
    batch swap-in of every page it holds) is timed; the workload then verifies every word."""
    out, go = _waiting(vm, limit, fill, seed)
    swaps = vm.swaps()
    used = swaps[area][1]
    other = sum(u for d, (_, u, _) in swaps.items() if d != area)
    if used * 1024 < (fill - limit) // 2 or other:
        raise AssertionError(f"{vm.spec.name}: expected the pages on {area} alone: {swaps}")
    t = vm.run(
        f"echo max > {CGROUP}/memory.max; {_uptime_cmd('a')}; swapoff {area}; {_uptime_cmd('b')}; touch {go}; "
        "echo $a $b",
        timeout=600,
    ).out.split()
    verified = Verified.parse(memtest_done(vm, out), fill, seed)
    return SwapIn(area, used / 1024, float(t[1]) - float(t[0]), verified, label)


RECOVERY_MODES = ("fault", "swapoff", "host")


@dataclass
class Recovery:
    """The workload's recovery after its limit was lifted: `seconds` from lifting the limit to
    its last word verified. mode "fault": by the workload's own faults; "swapoff": the guest's
    `swapoff` of the tier first (`swapoff_s` of it, from the lift); "host": the host's batch
    beside the running workload (NestedVm.tier_to_ram: the device copies the whole tier into
    L1's RAM by DMA, `copy`, and the tier is served from that copy): the workload's faults read
    the device until then and RAM after."""

    mode: str
    seconds: float
    swapoff_s: float  # swapoff: until the swapoff ended; host: about until the host's copy was mapped
    swapped_kib: dict[str, int]  # per area, while the workload waited
    verified: Verified
    tier_dev: str = TIER
    copy: TierCopy | None = None
    tier_nonzero_pages: int = -1  # host mode: pages of the tier's run not zero on the device before the batch

    @property
    def batch(self) -> bool:
        return self.mode != "fault"


def recovery_round(vm: NestedVm, limit: int, fill: int, seed: int, mode: str) -> Recovery:
    """The workload fills `fill` bytes in a cgroup of `limit` (the rest to swap) and waits for
    its go; then, timed in the guest from the limit's lift, it recovers by `mode`
    (RECOVERY_MODES, see Recovery) and goes. Recovered when cxl-memtest has touched and checked
    every page (verified_at). In host mode the time the VM was paused is added when the
    guest's clock stood still meanwhile (the guest cannot count it), so the figure is the
    recovery's whole time whichever clock ran."""
    if mode not in RECOVERY_MODES:
        raise ValueError(f"recovery mode {mode!r}: one of {RECOVERY_MODES}")
    tier = vm.tier_dev
    out, go = _waiting(vm, limit, fill, seed)
    swapped = {d: u for d, (_, u, _) in vm.swaps().items()}
    copy, nonzero = None, -1
    if mode == "host":
        run = vm.tier
        assert run is not None
        # The swapped pages really are in the device's chunks (a tier that is RAM already would
        # make the batch a copy of nothing): read through /dev/dax0.0, before the timed part.
        nonzero = nonzero_pages(vm.host, run)
        # Timed from the limit's lift. With the limit the cgroup's swap is closed
        # (memory.swap.max 0: the workload, the guest's only swapping cgroup, puts no new page
        # on the tier) and the workload goes at once, taking its pages back by its own faults;
        # meanwhile the device copies the tier into L1's RAM and the tier is revoked with the
        # copy (NestedVm.tier_to_ram, which checks with the device's dirty bits that nothing was
        # written after the copy): the faults after that read RAM. The host's batch runs beside
        # the VM, as MemFlex's proactive swap-in does; no agent round trip waits for it. The
        # tier is swapped off afterwards (untimed; nothing the workload needs is left there).
        where = vm.host.hugepages(run.size)  # the host's RAM for the copy, set aside before
        a = float(
            vm.run(
                f"{_uptime_cmd('a')}; echo 0 > {CGROUP}/memory.swap.max; echo max > {CGROUP}/memory.max; "
                f"touch {go}; echo $a"
            ).out
        )
        copy = vm.tier_to_ram(where=where)
        b = a + copy.host_s  # about when the copy was mapped (the host's clock for its part)
        t = [a, b]
    else:
        swapoff = f"swapoff {tier}; " if mode == "swapoff" else ""
        t = [
            float(x)
            for x in vm.run(
                f"{_uptime_cmd('a')}; echo max > {CGROUP}/memory.max; {swapoff}{_uptime_cmd('b')}; touch {go}; "
                "echo $a $b",
                timeout=600,
            ).out.split()
        ]
    verified = Verified.parse(memtest_done(vm, out), fill, seed)
    if mode == "host":
        vm.run(f"echo max > {CGROUP}/memory.swap.max; swapoff {tier}", timeout=600)
    start = t[0]
    seconds = verified.verified_at - start if verified.verified_at is not None else float("nan")
    return Recovery(mode, seconds, t[1] - start, swapped, verified, tier, copy, nonzero)


@dataclass
class Released:
    """A run given back to the pool: the pool's answer, and what the host found after it."""

    run: TierRun
    answer: dict[str, str]
    owned_after: list[int] = field(default_factory=list)
    nonzero_after: int = 0


def check_released(host: Host, run: TierRun, answer: dict[str, str] | None) -> Released:
    """After the pool's release of `run`: every chunk FREE (scrub done), the owner's chunk list
    empty, and the pages of the run that are still not zero (must be none)."""
    return check_released_runs(host, [run], answer)


def check_released_runs(host: Host, runs: list[TierRun], answer: dict[str, str] | None) -> Released:
    """check_released for every run a VM held when the pool released its chunks."""
    if answer is None or int(answer["released"]) != sum(r.count for r in runs):
        raise AssertionError(f"the pool did not release {runs}: {answer}")
    for run in runs:
        wait_free(host, range(run.first, run.first + run.count), timeout=5)
    return Released(runs[0], answer, owned_chunks(host, runs[0].owner), sum(nonzero_pages(host, run) for run in runs))
