# SPDX-License-Identifier: Apache-2.0
"""`make experiments-vswapper`: VSwapper's problems measured on a nested host (L1) whose VM (L2)
keeps its device node within a resident limit, with the swap mapper's memory manager using the
device (offload: discard-if-clean, read-back along the image, fresh pages for disk reads) and
without it (the baseline: the same manager writing every page that is not zero to swap), on the
same workloads, for each resident limit given (docs/swap-design.md, docs/results.md), and the
stock way (the host kernel's reclaim keeping the VM's device node, shared memory charged to a
cgroup v2 with memory.max at the limit, within it, swapping to zram; --no-stock leaves it out;
docs/swap-design.md section 4).

Workloads in the VM (cxltrack.harness.vswapper): a process's own cache of its disk (memory
written long ago, a disk read into it, checked in random order, left alone, checked again in
disk order, written to the disk with O_DIRECT), stores and disk reads racing the evictions
(checked against a shadow copy), anonymous memory (written, left alone, checked), and a guest
swap-out. Counted by the manager, in both modes: silent swap writes (swap writes of a page
equal byte by byte to the disk block last read into it), stale swap reads (pages brought back
for a disk read to overwrite whole), read run lengths (pages per read of image or swap that the
VM needed, in the second check: the fault-in and the read-ahead pages later faulted on),
double-paging swap-ins (pages brought back for a disk write to read; with the device the write
takes them from image or swap: Tesseract), wrong pages (checked by the VM). Last line:
    silent_writes_base=<n> silent_writes_dev=<n> stale_reads_base=<n> stale_reads_dev=<n>
    double_paging_base=<n> double_paging_dev=<n> run_len_ratio=<dev/base> wrong_pages=<n>
(sums over the limits; run_len_ratio over the second checks). The stock host counts its swap
writes and swap-ins, and the swap area's pages equal to a disk block afterwards (a line
"stock: ..." before the last). Writes out/experiments-vswapper/results.json and vswapper.png.

False reads (issue 14, VSwapper's False Reads Preventer with KVM's KVM_SET_PREVENT_READS): in a
VM whose device node the host keeps within --false-reads-limit-mib, a process fills
--false-reads-mib of memory and exits, the host evicts its pages, then another process fills as
much (the guest kernel zeroes every page it hands out, then the process writes it whole): the
reads of image or swap the host made meanwhile, without the Preventer (baseline) and with it,
and the fill's runtime. A line before the last:
    false_reads_base=<n> false_reads_dev=<n> wrong_bytes=<n>
and false_reads.png.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

from cxltrack.experiments import boot_default_host
from cxltrack.harness.agent import GuestError
from cxltrack.harness.nested import Host, MiB
from cxltrack.harness.pins import out_dir
from cxltrack.harness.vswapper import (
    FalseReadsResult,
    WorkloadResult,
    make_disk,
    run_false_reads,
    run_len,
    run_stock,
    run_workloads,
)


def plot(runs: list[WorkloadResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    limits = sorted({r.limit for r in runs})
    metrics = (
        ("silent-writes", "silent swap writes"),
        ("stale-reads", "stale swap reads"),
        ("double-paging", "double-paging swap-ins"),
        ("swap-writes", "swap writes"),
    )
    modes = [m for m in ("stock", "baseline", "device") if any(r.mode == m for r in runs)]
    # one colour per mode in every panel (the run-length panel has no stock line)
    colour = {"stock": "C0", "baseline": "C1", "device": "C2"}
    width = 0.8 / len(modes)
    fig, axes = plt.subplots(1, len(metrics) + 2, figsize=(18, 3.4))
    for ax, (key, title) in zip(axes, metrics, strict=False):
        for k, mode in enumerate(modes):
            # the stock host counts only swap writes and (after the fact) silent ones: no bar
            # where it has no figure
            if mode == "stock" and key not in ("swap-writes", "silent-writes"):
                continue
            vals = [next(r.counters.get(key, 0) for r in runs if r.limit == lim and r.mode == mode) for lim in limits]
            dx = (k - (len(modes) - 1) / 2) * width
            ax.bar([i + dx for i in range(len(limits))], vals, width=width, label=mode, color=colour[mode])
        ax.set_xticks(range(len(limits)), [f"{lim // MiB} MiB" for lim in limits])
        ax.set_title(title)
        ax.set_xlabel("resident limit")

    def pages_per_read(r: WorkloadResult) -> float:
        return r.run_len

    def runtime(r: WorkloadResult) -> float:
        return r.seconds["diskread"]

    lines: tuple[tuple[Callable[[WorkloadResult], float], str, tuple[str, ...]], ...] = (
        (pages_per_read, "pages needed per host read (check2)", ("baseline", "device")),
        (runtime, "disk-cache workload runtime (s)", tuple(modes)),
    )
    for ax, (value, title, shown) in zip(axes[len(metrics) :], lines, strict=True):
        for mode in shown:
            ax.plot(
                [lim // MiB for lim in limits],
                [next(value(r) for r in runs if r.limit == lim and r.mode == mode) for lim in limits],
                "o-",
                label=mode,
                color=colour[mode],
            )
        ax.set_title(title)
        ax.set_xlabel("resident limit (MiB)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_false_reads(runs: list[FalseReadsResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colour = {"baseline": "C1", "prevent": "C2"}
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    panels: tuple[tuple[Callable[[FalseReadsResult], float], str], ...] = (
        (lambda r: float(r.false_reads), "disk/swap reads during the fill"),
        (lambda r: r.seconds, "fill runtime (s)"),
    )
    for ax, (value, title) in zip(axes, panels, strict=True):
        ax.bar([r.mode for r in runs], [value(r) for r in runs], color=[colour[r.mode] for r in runs])
        ax.set_title(title)
    fig.suptitle(f"false reads: {runs[0].fill // MiB} MiB filled, resident limit {runs[0].limit // MiB} MiB")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


ATTEMPTS = 3
T = TypeVar("T")


def _spared(host: Host, label: str, run: Callable[[], T]) -> T:
    """`run()`, again (at most ATTEMPTS in all) when the L2 VM was reset or its agent lost: the
    nested platform (SVM emulated by TCG) now and then resets an L2 guest, with nothing in its
    log (docs/harness.md); a run it spoiled says nothing about the manager. Wrong pages or
    bytes are not a reason to repeat: they are counted, not raised."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return run()
        except GuestError as exc:
            if attempt == ATTEMPTS or not host.vm.alive():
                raise
            first = str(exc).splitlines()[0][:200]
            print(f"[experiments-vswapper] attempt {attempt} of {label} spoiled ({first}); again", flush=True)
    raise AssertionError("unreachable")


def run_false_reads_mode(host: Host, prevent: bool, args: argparse.Namespace) -> FalseReadsResult:
    """run_false_reads(), again when the nested platform spoiled the run (_spared)."""
    mib, limit = args.false_reads_mib * MiB, args.false_reads_limit_mib * MiB
    return _spared(host, "false reads", lambda: run_false_reads(host, prevent, mib, limit))


def run_mode(host: Host, mode: str, offload: bool, args: argparse.Namespace, lim: int) -> WorkloadResult:
    """One mode's run, again when the nested platform spoiled it (_spared)."""
    if mode == "stock":
        return _spared(
            host, mode, lambda: run_stock(host, args.blocks, lim * MiB, args.anon_mib * MiB, args.race_seconds)
        )
    return _spared(
        host,
        mode,
        lambda: run_workloads(host, offload, args.blocks, lim * MiB, args.anon_mib * MiB, args.race_seconds),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=4096, help="disk blocks the VM caches (default 4096: 16 MiB)")
    ap.add_argument("--anon-mib", type=int, default=8, help="anonymous memory written and checked (MiB)")
    ap.add_argument(
        "--limits-mib", type=int, nargs="+", default=[2, 4], help="resident limits of the VM's device node (MiB)"
    )
    ap.add_argument("--race-seconds", type=int, default=30, help="the racing stores' workload (s)")
    ap.add_argument("--out", type=Path, default=out_dir() / "experiments-vswapper")
    ap.add_argument(
        "--stock",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the stock baseline too (the host kernel's reclaim under a memory cgroup's limit; "
        "docs/swap-design.md section 4)",
    )
    ap.add_argument("--false-reads-mib", type=int, default=4, help="memory the false-reads workload fills (MiB)")
    ap.add_argument(
        "--false-reads-limit-mib", type=int, default=2, help="resident limit in the false-reads workload (MiB)"
    )
    ap.add_argument("--only-false-reads", action="store_true", help="run the false-reads workload only (issue 14)")
    args = ap.parse_args(argv)
    if args.blocks < 64 or args.anon_mib < 1 or any(m < 1 or m > 120 for m in args.limits_mib):
        ap.error("--blocks >= 64, --anon-mib >= 1, limits 1..120 MiB")
    args.out.mkdir(parents=True, exist_ok=True)
    modes: list[tuple[str, bool]] = [("stock", False)] if args.stock else []
    modes += [("baseline", False), ("device", True)]
    print("[experiments-vswapper] booting the host (L1) ...", flush=True)
    host = boot_default_host(args.out / "host", "kmem")
    runs: list[WorkloadResult] = []
    false_reads: list[FalseReadsResult] = []
    try:
        print(f"[experiments-vswapper] writing the {args.blocks}-block disk image ...", flush=True)
        make_disk(host, args.blocks)
        for prevent in (False, True):
            print(f"[experiments-vswapper] false reads, prevent={prevent} ...", flush=True)
            fr = run_false_reads_mode(host, prevent, args)
            print(
                f"vswapper false_reads mode={fr.mode} fill_mib={args.false_reads_mib} "
                f"limit_mib={args.false_reads_limit_mib} false_reads={fr.false_reads} "
                + " ".join(f"{k}={v}" for k, v in fr.counters.items())
                + f" fill_s={fr.seconds:.1f} fill_guest_ms={fr.fill_ms:.0f} wrong_bytes={fr.wrong_bytes}",
                flush=True,
            )
            false_reads.append(fr)
        for lim in [] if args.only_false_reads else args.limits_mib:
            for mode, offload in modes:
                print(f"[experiments-vswapper] limit {lim} MiB, {mode} ...", flush=True)
                r = run_mode(host, mode, offload, args, lim)
                print(
                    f"vswapper limit_mib={lim} mode={mode} "
                    + " ".join(f"{k}={v}" for k, v in r.counters.items())
                    + f" diskread_s={r.seconds['diskread']:.1f} memtest_s={r.seconds['memtest']:.1f}"
                    + (f" check2_run_len={r.run_len:.2f}" if not r.stock else "")
                    + f" wrong_pages={r.wrong_pages}",
                    flush=True,
                )
                runs.append(r)
    finally:
        host.shutdown()
    (args.out / "results.json").write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "runs": [asdict(r) for r in runs],
                "false_reads": [asdict(r) for r in false_reads],
            },
            indent=1,
        )
        + "\n"
    )
    plot_false_reads(false_reads, args.out / "false_reads.png")
    fr_base = sum(r.false_reads for r in false_reads if not r.prevent)
    fr_dev = sum(r.false_reads for r in false_reads if r.prevent)
    fr_wrong = sum(r.wrong_bytes for r in false_reads)
    # a page is still read when the guest begins it while all of the device's 8 slots hold full
    # pages waiting for their merge (or more are evicted than prevent-max flags): a handful
    fr_ok = fr_base > 0 and fr_dev * 20 <= fr_base and fr_wrong == 0 and not any(r.failures for r in false_reads)
    if args.only_false_reads:
        print(f"results: {args.out / 'results.json'}, plot: {args.out / 'false_reads.png'}")
        print(f"false_reads_base={fr_base} false_reads_dev={fr_dev} wrong_bytes={fr_wrong}")
        return 0 if fr_ok else 1
    plot(runs, args.out / "vswapper.png")
    base = [r for r in runs if r.mode == "baseline"]
    dev = [r for r in runs if r.mode == "device"]
    stock = [r for r in runs if r.stock]

    def total(rs: list[WorkloadResult], key: str) -> int:
        return sum(r.counters[key] for r in rs)

    def check2(rs: list[WorkloadResult]) -> dict[str, int]:
        return {k: sum(r.phases["check2"][k] for r in rs) for k in rs[0].phases["check2"]}

    run_len_ratio = run_len(check2(dev)) / max(run_len(check2(base)), 1e-9)
    wrong = sum(r.wrong_pages for r in runs)
    print(f"results: {args.out / 'results.json'}, plots: {args.out / 'vswapper.png'}, false_reads.png")
    print(f"false_reads_base={fr_base} false_reads_dev={fr_dev} wrong_bytes={fr_wrong}")
    if stock:
        print(
            f"stock: swap_writes={total(stock, 'swap-writes')} swap_ins={total(stock, 'swap-ins')} "
            f"silent_writes_at_least={total(stock, 'silent-writes')} "
            f"wrong_pages={sum(r.wrong_pages for r in stock)}"
        )
    print(
        f"silent_writes_base={total(base, 'silent-writes')} silent_writes_dev={total(dev, 'silent-writes')} "
        f"stale_reads_base={total(base, 'stale-reads')} stale_reads_dev={total(dev, 'stale-reads')} "
        f"double_paging_base={total(base, 'double-paging')} double_paging_dev={total(dev, 'double-paging')} "
        f"run_len_ratio={run_len_ratio:.2f} wrong_pages={wrong}"
    )
    dev_fixed = all(total(dev, k) == 0 for k in ("silent-writes", "stale-reads", "double-paging"))
    base_shows = all(total(base, k) > 0 for k in ("silent-writes", "stale-reads", "double-paging"))
    return 0 if wrong == 0 and dev_fixed and base_shows and run_len_ratio > 1 and fr_ok else 1


if __name__ == "__main__":
    sys.exit(main())
