# SPDX-License-Identifier: Apache-2.0
"""`make experiments-memflex`: MemFlex's scenario (shared/seeds) scaled to the nested harness
(issue 15 item 4, docs/swap-design.md section 5): L2 VMs swap to virtio-pmem tiers made of the
device's chunks, which the L1 host's pool manager (cxlt-pool) hands out and takes back.

1. Swap-in per MiB (one VM, a memory cgroup in the guest, cxl-memtest writing more than its
   limit): the batch swap-in (`swapoff`) of the tier, of the disk swap area (an image in L1's
   tmpfs behind virtio-blk), of the same disk throttled to a hard disk's rates (HDD), of
   zswap in front of that disk, and of zram in the guest, each after the same workload swapped
   to that area alone; every word verified after each.
2. Recovery (the same VM): the workload swaps out to the tier and waits; its limit is raised
   and it touches and checks every page, in three modes per round: by its own faults; after
   the guest's `swapoff` of the tier; after the host's batch swap-in (MemFlex's, driven by
   the host: the VM paused, the device copies the tier's chunks into L1's RAM by DMA,
   CHUNK_COPY, the tier is served from that copy, then the guest's swapoff reads RAM); timed
   from the limit's lift to the last word verified. After the host's batch the VM gives its
   chunks back while it runs (the pool's release, scrubbed by the device) and, for the next
   round, gets a fresh tier on the device (a new run hot-plugged: the old one is RAM now).
3. Several VMs (3 by default) with tiers from one pool smaller than their swap traffic: each
   swaps more than its tier holds and the disk swap area takes the rest, by MemFlex's rule
   (`--hybrid-overflow lru`, the default: the tier is a dm-writecache in front of the disk,
   which sends its least recently written blocks to the disk when it fills, SwapTier overflow
   "lru"), by the guest's swap priorities (`priority`: the tier first, the newest pages to
   the disk once it is full), or by the host from the device's bits (`host`: while the
   workloads fill, the host keeps books on each VM's runs from the device's accessed and dirty
   bits, and when a VM's runs are full it sends the run with the oldest pages to a file on its
   disk and gives the chunks back to the VM as a new run, up to 7 times per VM;
   swaptier.overflow_round; with `--hybrid-fill-mibps R` the workloads fill at R MiB/s, which
   the host's agent, looking every 0.5 s, needs). Where each page of the workload lies is read back from the tier
   and the disk (cxlt-pagefind): the pages on each, and those on disk newer than the oldest page
   only the tier holds (few under the LRU rule, most under priorities). Every VM verifies every
   word; the VMs exit and the pool releases their runs.

Isolation violations, summed over every VM of the run: pages of a fresh tier the VM read not
zero before its mkswap (cxlt-daxcount on /dev/pmem0 in the guest), pages a workload found
holding other data than it wrote (cxl-memtest's word check: another VM's data, or a chunk
scrubbed under it, would show there), and pages of a released run the host still reads not
zero through /dev/dax0.0 after the pool's answer (cxlt-daxcount). Last line:
    swapin_tier_vs_disk=<hdd ms/MiB / tier ms/MiB> recovery_batch_vs_fault=<fault s / host batch s>
    isolation_violations=<n> vms=<VMs of step 3>
(ratios > 1: the tier, the batch swap-in faster). Writes out/experiments-memflex/results.json
and memflex.png. `--only-hybrid` runs step 3 alone on a host of its own (results-hybrid.json; last
line isolation_violations=<n> vms=<n> unverified=<VMs or ->).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cxltrack.experiments import boot_default_host
from cxltrack.harness.nested import Host, MiB, NestedVm, SwapTier, VmSpec
from cxltrack.harness.pins import out_dir
from cxltrack.harness.swaptier import (
    RECOVERY_MODES,
    TIER,
    Recovery,
    Released,
    SwapIn,
    Verified,
    check_released,
    check_released_runs,
    disk_area,
    memory_cgroup,
    memtest_done,
    placement,
    recovery_round,
    settled,
    settled_with_overflow,
    start_memtest,
    swap_on,
    swapin_round,
    tier_on,
    zram_on,
    zswap,
    zswap_ins,
)

# The disk swap area as a hard disk (a 7200 rpm drive: ~150 requests per second where each
# needs a seek, 150 MB/s off the platter), QEMU's throttling of the virtio-blk disk; without it
# the disk is an image in L1's RAM. The seed's own disk swap-in: 2 GB in 212.96 s.
HDD = (150, 150_000_000)
HDD_LABEL = "disk (hdd: 150 req/s, 150 MB/s)"
ZSWAP_LABEL = "zswap (before the hdd)"


def log(msg: str) -> None:
    print(f"[experiments-memflex] {msg}", flush=True)


def one_vm(host: Host, args: argparse.Namespace) -> tuple[list[SwapIn], list[Recovery], Released, int, str | None]:
    """Steps 1 and 2 on one VM: the swap-in rounds, the recovery rounds, the release."""
    tier = SwapTier(args.tier_chunks, disk_swap=64 * MiB, check_fresh=True, grow_ports=max(args.rounds - 1, 0))
    vm = host.start_vm(VmSpec("vm0", memory=256 * MiB, swap_tier=tier))
    run = vm.tier
    assert run is not None and vm.tier_fresh_nonzero is not None
    limit, fill = args.limit_mib * MiB, args.fill_mib * MiB
    disk = disk_area(vm)
    swapins = []
    seed = 100
    log(f"vm0: tier {run.first}+{run.count} (owner {run.owner}), fresh non-zero pages {vm.tier_fresh_nonzero}")
    for area in (TIER, disk):  # the tier above the disk; then the disk alone (tier off)
        seed += 1
        swapins.append(swapin_round(vm, area, limit, fill, seed))
        log(f"swap-in {area}: {swapins[-1].mib:.1f} MiB in {swapins[-1].seconds:.2f} s")
    # The disk again, as a hard disk: the image behind it is in L1's RAM.
    seed += 1
    vm.throttle_swap_disk(*HDD)
    swap_on(vm, disk, 1)
    swapins.append(swapin_round(vm, disk, limit, fill, seed, HDD_LABEL))
    log(f"swap-in {HDD_LABEL}: {swapins[-1].mib:.1f} MiB in {swapins[-1].seconds:.2f} s")
    # zswap in front of the same hard disk (its pool, a fifth of the VM's RAM, holds the run).
    if zswap(vm, True):
        seed += 1
        swap_on(vm, disk, 1)
        before = zswap_ins(vm)
        z = swapin_round(vm, disk, limit, fill, seed, ZSWAP_LABEL)
        zswap(vm, False)
        # zswap keeps only pages that compress; the rest go to the disk behind it.
        z.label += f": {zswap_ins(vm) - before} of {int(z.mib * 256)} pages from zswap"
        swapins.append(z)
        log(f"swap-in {z.label}: {z.mib:.1f} MiB in {z.seconds:.2f} s")
    else:
        log("the L2 kernel has no zswap")
    vm.throttle_swap_disk(0, 0)
    zram = zram_on(vm, 64 * MiB)
    no_zram = None
    if zram is None:
        no_zram = "the L2 kernel has no zram (modprobe zram failed)"
        log(no_zram)
    else:
        seed += 1
        swapins.append(swapin_round(vm, zram, limit, fill, seed))
        log(f"swap-in {zram}: {swapins[-1].mib:.1f} MiB in {swapins[-1].seconds:.2f} s")
    # Recovery: only the tier on (the disk and zram areas are off after their swapoff).
    tier_on(vm)
    recoveries = []
    released_runs = []
    for n in range(args.rounds):
        if n:
            # The last round's host batch left the tier in RAM and its chunks released: a
            # fresh run on the device, so that every round swaps to the device.
            dev = vm.renew_tier(args.tier_chunks)
            log(f"round {n + 1}: fresh tier {vm.tier} as {dev}")
        for mode in RECOVERY_MODES:
            if mode != "fault":
                tier_on(vm)  # off since the last swapoff
            seed += 1
            r = recovery_round(vm, limit, fill, seed, mode)
            recoveries.append(r)
            extra = ""
            if r.copy is not None:
                extra = (
                    f", device copy {r.copy.bytes // MiB} MiB in {r.copy.copy_s:.3f} s into {r.copy.where}, "
                    f"QEMU's remap {r.copy.revoke_s:.3f} s, tier pages on the device "
                    f"{r.tier_nonzero_pages}"
                )
            log(
                f"recovery {mode}: {r.seconds:.2f} s (swapoff done at {r.swapoff_s:.2f} s), "
                f"swapped {r.swapped_kib}, ok={r.verified.ok}{extra}"
            )
        # After the host's batch the tier is RAM: its chunks go back to the pool, the VM runs on.
        held = vm.tier
        assert held is not None
        released_runs.append(check_released(host, held, vm.release_tier()))
        log(f"vm0 released its tier while running: {released_runs[-1].answer}")
    released = released_runs[-1]
    released.nonzero_after = sum(r.nonzero_after for r in released_runs)
    fresh = vm.tier_fresh_nonzero
    vm.shutdown()
    return swapins, recoveries, released, fresh, no_zram


def several_vms(host: Host, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Step 3: args.vms VMs with tiers from one pool, swapping more than their tiers hold."""
    vms: list[NestedVm] = []
    try:
        host_rule = args.hybrid_overflow == "host"
        for i in range(args.vms):
            # host rule: two runs to start with (the guest swaps to the second, of 2 chunks,
            # first), so one takes the pages while the host moves the other
            tier = SwapTier(
                args.hybrid_chunks - 2 if host_rule else args.hybrid_chunks,
                disk_swap=64 * MiB,
                check_fresh=True,
                overflow="priority" if host_rule else args.hybrid_overflow,
                grow_ports=8 if host_rule else 0,
            )
            spec = VmSpec(f"vm{i + 1}", swap_tier=tier)
            vms.append(host.start_vm(spec))
            if host_rule:
                vms[-1].grow_tier(2, priority=tier.priority + 1)
            log(f"{spec.name}: tier {vms[-1].tier}, fresh non-zero pages {vms[-1].tier_fresh_nonzero}")
        limit, fill = args.limit_mib * MiB, args.hybrid_fill_mib * MiB
        go, out = "/tmp/go-hybrid", "/tmp/memtest-hybrid.out"
        for i, vm in enumerate(vms):
            memory_cgroup(vm, limit)
            vm.run(f"rm -f {go}")
            start_memtest(vm, fill, 200 + i, go, out, mibps=args.hybrid_fill_mibps)
        moved: dict[str, list[str]] = {}
        if host_rule:
            moved = settled_with_overflow(vms, out)
        else:
            for vm in vms:
                settled(vm, out)
        placed = [placement(vm, 200 + i) for i, vm in enumerate(vms)]
        for vm in vms:
            vm.run(f"echo max > /sys/fs/cgroup/tier/memory.max; touch {go}")
        verified = [Verified.parse(memtest_done(vm, out), fill, 200 + i) for i, vm in enumerate(vms)]
        results = []
        for vm, place, v in zip(vms, placed, verified, strict=True):
            run = vm.tier
            assert run is not None
            runs = list(vm.tier_live.values())  # host rule: the runs on the device at the end
            fresh = vm.tier_fresh_nonzero
            vm.shutdown()
            rel = (
                check_released_runs(host, runs, vm.tier_released)
                if host_rule
                else check_released(host, run, vm.tier_released)
            )
            results.append(
                {
                    "vm": vm.spec.name,
                    "run": " ".join(f"{r.first}+{r.count}" for r in runs) if host_rule else f"{run.first}+{run.count}",
                    "owner": run.owner,
                    "fresh_nonzero": fresh,
                    "overflow": args.hybrid_overflow,
                    "runs_to_disk": moved.get(vm.spec.name, []),
                    **place,
                    "ok": v.ok,
                    "bad_pages": v.bad_pages,
                    "released": rel.answer["released"],
                    "nonzero_after": rel.nonzero_after,
                    "owned_after": rel.owned_after,
                }
            )
            log(f"{results[-1]}")
        return results
    finally:
        for vm in vms:
            vm.shutdown()


def plot(swapins: list[SwapIn], recoveries: list[Recovery], hybrid: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    names = {TIER: "tier (pmem)", "/dev/zram0": "zram", HDD_LABEL: "disk (hdd)", ZSWAP_LABEL: "zswap + hdd"}
    # the hdd's label has a colon in it: look the whole name up first (else its bar fell on the RAM disk's)
    axes[0].bar(
        [names.get(s.name, names.get(s.name.split(":")[0], "disk (RAM)")) for s in swapins],
        [s.ms_per_mib for s in swapins],
    )
    axes[0].set_yscale("log")
    axes[0].set_title("batch swap-in (swapoff), ms per MiB")
    per_mode = {m: [r.seconds for r in recoveries if r.mode == m] for m in RECOVERY_MODES}
    axes[1].bar(
        ["fault-driven", "guest swapoff", "host batch (DMA)"],
        [sum(v) / len(v) for v in per_mode.values()],
    )
    axes[1].set_title("workload recovery after the limit's lift (s)")
    if hybrid:
        labels = [h["vm"] for h in hybrid]
        tier = [sum(k for d, k in h["swapped_kib"].items() if d == TIER) / 1024 for h in hybrid]
        disk = [sum(k for d, k in h["swapped_kib"].items() if d != TIER) / 1024 for h in hybrid]
        axes[2].bar(labels, tier, label="tier")
        axes[2].bar(labels, disk, bottom=tier, label="disk (overflow)")
        axes[2].legend()
    axes[2].set_title("several VMs, one pool: swapped MiB")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# The run's sizes: option, default, what it sets.
SIZES = (
    ("--limit-mib", 8, "the guest cgroup's memory limit (MiB)"),
    ("--fill-mib", 32, "the one VM's workload (MiB)"),
    ("--tier-chunks", 16, "the one VM's tier (2 MiB chunks)"),
    ("--rounds", 2, "recovery rounds (each: fault-driven, then batch)"),
    ("--vms", 3, "VMs sharing the pool in step 3 (0: skip)"),
    ("--hybrid-chunks", 5, "each VM's tier in step 3 (chunks)"),
    ("--hybrid-fill-mib", 32, "each VM's workload in step 3 (MiB)"),
)


def print_hybrid(hybrid: list[dict[str, Any]]) -> None:
    for h in hybrid:
        disk_kib = sum(k for d, k in h["swapped_kib"].items() if d != TIER)
        print(
            f"memflex hybrid vm={h['vm']} run={h['run']} overflow={h['overflow']} "
            f"tier_kib={h['swapped_kib'].get(TIER, 0)} disk_kib={disk_kib} "
            f"disk_pages_newer_than_tier={h['disk_pages_newer_than_tier']}/{h['disk_pages']} ok={h['ok']}"
        )


def only_hybrid(args: argparse.Namespace) -> int:
    """Step 3 alone, on a host of its own: the quick way to the three-VM case, where L1 hosts are
    lost to "corrupted stack end" and silent triple faults (docs/harness.md)."""
    if not 1 <= args.vms <= 3:
        raise SystemExit("--only-hybrid needs --vms 1..3")
    args.out.mkdir(parents=True, exist_ok=True)
    log("booting the host (L1) ...")
    host = boot_default_host(args.out / "host", "devdax")
    try:
        host.start_pool(0, args.vms * args.hybrid_chunks * host.chunk_bytes())
        hybrid = several_vms(host, args)
    finally:
        host.shutdown()
    (args.out / "results-hybrid.json").write_text(json.dumps(hybrid, indent=1) + "\n")
    print_hybrid(hybrid)
    bad = sum(h["fresh_nonzero"] + h["bad_pages"] + h["nonzero_after"] for h in hybrid)
    unverified = [h["vm"] for h in hybrid if not h["ok"]]
    print(f"isolation_violations={bad} vms={len(hybrid)} unverified={','.join(unverified) or '-'}")
    return 0 if not bad and not unverified else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, default, what in SIZES:
        ap.add_argument(flag, type=int, default=default, help=f"{what} (default {default})")
    ap.add_argument("--out", type=Path, default=out_dir() / "experiments-memflex")
    ap.add_argument(
        "--hybrid-overflow",
        choices=("lru", "priority", "host"),
        default="lru",
        help="step 3's rule for what goes to disk: the least recently written (dm-writecache), what "
        "comes after a full tier (swap priorities), or the run with the oldest pages by the device's bits, "
        "moved by the host (default lru)",
    )
    ap.add_argument(
        "--hybrid-fill-mibps",
        type=float,
        default=0,
        help="step 3's workloads fill at this rate at most (MiB/s; 0, the default: at once)",
    )
    ap.add_argument(
        "--only-hybrid",
        action="store_true",
        help="step 3 alone (about 3 minutes; it ends with isolation_violations=<n> vms=<n>)",
    )
    args = ap.parse_args(argv)
    if args.hybrid_fill_mibps < 0:
        ap.error("--hybrid-fill-mibps: 0 (at once) or a rate above 0")
    if args.hybrid_overflow == "host" and args.hybrid_chunks < 3:
        ap.error("--hybrid-overflow host needs --hybrid-chunks >= 3 (a run of 2 and one of the rest)")
    if args.only_hybrid:
        return only_hybrid(args)
    if not 0 <= args.vms <= 3 or args.fill_mib <= args.limit_mib or args.rounds < 1:
        ap.error("--vms 0..3 (the host has 4 VM slots), --fill-mib > --limit-mib, --rounds >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log("booting the host (L1) ...")
    host = boot_default_host(args.out / "host", "devdax")
    try:
        # One pool for the whole run, as large as the bigger of the two steps' needs: in step 3
        # it is smaller than the VMs' swap traffic (args.vms x fill - limit).
        pool_chunks = max(args.tier_chunks, args.vms * args.hybrid_chunks)
        pool = host.start_pool(0, pool_chunks * host.chunk_bytes())
        log(f"pool: chunks {pool.first}+{pool.count}")
        swapins, recoveries, released, fresh0, no_zram = one_vm(host, args)
        hybrid = several_vms(host, args) if args.vms else []
    finally:
        host.shutdown()
    tier = next(s for s in swapins if s.area == TIER)
    disk = next(s for s in swapins if s.name == HDD_LABEL)
    ram_disk = next(s for s in swapins if s.area.startswith("/dev/vd") and not s.label)
    zram = [s for s in swapins if s.area == "/dev/zram0"]
    fault = sum(r.seconds for r in recoveries if r.mode == "fault")
    swapoff = sum(r.seconds for r in recoveries if r.mode == "swapoff")
    batch = sum(r.seconds for r in recoveries if r.mode == "host")
    violations = {
        "fresh_tier_nonzero_pages": fresh0 + sum(h["fresh_nonzero"] for h in hybrid),
        "workload_wrong_pages": sum(r.verified.bad_pages for r in recoveries)
        + sum(s.verified.bad_pages for s in swapins)
        + sum(h["bad_pages"] for h in hybrid),
        "released_nonzero_pages": released.nonzero_after + sum(h["nonzero_after"] for h in hybrid),
    }
    unverified = (
        [s.area for s in swapins if not s.verified.ok]
        + ["recovery" for r in recoveries if not r.verified.ok]
        + [h["vm"] for h in hybrid if not h["ok"]]
    )
    (args.out / "results.json").write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "seconds": time.monotonic() - t0,
                "swapins": [asdict(s) | {"ms_per_mib": s.ms_per_mib} for s in swapins],
                "no_zram": no_zram,
                "recoveries": [asdict(r) for r in recoveries],
                "released": asdict(released),
                "hybrid": hybrid,
                "violations": violations,
                "unverified": unverified,
            },
            indent=1,
        )
        + "\n"
    )
    plot(swapins, recoveries, hybrid, args.out / "memflex.png")
    print(f"results: {args.out / 'results.json'}, plot: {args.out / 'memflex.png'}")
    for s in swapins:
        print(
            f"memflex swapin area={s.area} mib={s.mib:.1f} seconds={s.seconds:.2f} ms_per_mib={s.ms_per_mib:.0f}"
            + (f" ({s.label})" if s.label else "")
        )
    print(f"memflex swapin_tier_vs_ram_disk={ram_disk.ms_per_mib / tier.ms_per_mib:.2f} (the disk image in L1's RAM)")
    if zram:
        print(f"memflex swapin_zram_vs_tier={tier.ms_per_mib / zram[0].ms_per_mib:.2f}")
    for r in recoveries:
        print(
            f"memflex recovery mode={r.mode} seconds={r.seconds:.2f} "
            f"swapoff_s={r.swapoff_s:.2f} tier_kib={r.swapped_kib.get(r.tier_dev, 0)}"
            + (f" copy_s={r.copy.copy_s:.3f} remap_s={r.copy.revoke_s:.3f}" if r.copy else "")
        )
    print(f"memflex recovery_swapoff_vs_fault={fault / swapoff:.2f} (the guest's swapoff of the tier)")
    print_hybrid(hybrid)
    print(f"memflex isolation {' '.join(f'{k}={v}' for k, v in violations.items())} unverified={unverified or '-'}")
    print(
        f"swapin_tier_vs_disk={disk.ms_per_mib / tier.ms_per_mib:.2f} recovery_batch_vs_fault={fault / batch:.2f} "
        f"isolation_violations={sum(violations.values())} vms={len(hybrid)}"
    )
    return 0 if not unverified and not sum(violations.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
