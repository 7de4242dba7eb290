# SPDX-License-Identifier: Apache-2.0
"""`make bench-migrate`: live migration of an L2 VM whose NUMA node 1 lives on the device,
with KVM's write-protect dirty log (stock), with the device's dirty log taken by the patched
KVM (`device_dirty_log`) and taken by the host QEMU's cxltrack-dirty-log client (KVM does not
log that memory), in one host boot, alternating, `--repeat` times each.

Per run: write-protect faults KVM took while logging, pages sent, rounds, total time,
downtime, and the page-by-page comparison of source and destination at the switch-over.
Last line:
    wp_faults_stock=<n> wp_faults_device=<n> pages_ratio=<device/stock> ok=<pages equal>
(sums over the runs; `ok` equals the number of pages compared when every copy was exact).
Before the migrations, with no VM running: what a dirty-log harvest costs per GiB of logged
memory (`cxltrack bench --clear` in the host: device commands, bytes read through the
RESULT window, CPU time), the cost the patched KVM and the QEMU client pay every round.
The QEMU client's VMs run on device ranges the host zeroed first (`cxltrack zero`), so its
first round leaves out the node's never-written pages; printed per run as pages read.
Writes out/bench-migrate/results.json and migrate.png. `--from-log LOG...` boots nothing and
rebuilds those from the `migrate ...` lines of earlier runs (benches cut short).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cxltrack.experiments import boot_default_host
from cxltrack.harness.agent import GuestError
from cxltrack.harness.migration import MigrationResult, has_device_dirty_log, migrate_and_compare
from cxltrack.harness.nested import Host, MiB
from cxltrack.harness.pins import out_dir

# Host boots at most in one bench: the first and one per lost host.
HOST_BOOTS = 4
# How `cxltrack bench` starts its cost line.
COST_LINE = "harvest cost per GiB"


class Hosts:
    """The bench's host (L1), booted again when a run loses it: under nested SVM on TCG the
    host itself now and then triple-faults (docs/harness.md). Such a run is run again on a
    new host, at most HOST_BOOTS - 1 times, and said so; any other failure stops the bench."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.boots = 0
        self.host = self._boot()

    def _boot(self) -> Host:
        workdir = self.out / ("host" if self.boots == 0 else f"host{self.boots}")
        self.boots += 1
        return boot_default_host(workdir, "devdax")

    def lost(self, wait: float = 10) -> bool:
        """Has the host's L0 QEMU exited (within `wait` s: it may still be on its way out)?"""
        deadline = time.monotonic() + wait
        while self.host.vm.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
        return True

    def migrate(self, mode: str, args: argparse.Namespace) -> MigrationResult:
        while True:
            try:
                return migrate_and_compare(
                    self.host, mode, args.device_mib, args.writer_pages, args.writer_seconds, zeroed=mode == "qemu"
                )
            except (GuestError, OSError) as exc:
                if self.boots >= HOST_BOOTS or not self.lost():
                    raise
                print(
                    f"[bench-migrate] the host (L1) was lost during this run ({exc!r}; its L0 log: "
                    f"{self.host.vm.cfg.workdir / 'debug.log'}); booting host {self.boots + 1} and running it again",
                    flush=True,
                )
                with contextlib.suppress(GuestError, OSError):
                    self.host.shutdown()
                self.host = self._boot()


def plot(runs: list[MigrationResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = ["stock", "device", "qemu"]
    metrics: list[tuple[str, Callable[[MigrationResult], float]]] = [
        ("write-protect faults", lambda r: r.wp_faults),
        ("pages sent", lambda r: r.pages_sent),
        ("rounds", lambda r: r.rounds),
        ("total time (s)", lambda r: r.total_ms / 1000),
        ("downtime (ms)", lambda r: r.downtime_ms),
    ]
    fig, axes = plt.subplots(1, len(metrics), figsize=(16, 3.4))
    for ax, (title, get) in zip(axes, metrics, strict=True):
        for i, mode in enumerate(modes):
            vals = [get(r) for r in runs if r.dirty_log == mode]
            ax.bar(
                i,
                statistics.median(vals) if vals else 0,
                color={"stock": "#999", "device": "#2a7", "qemu": "#27a"}[mode],
            )
            ax.plot([i] * len(vals), vals, "k.", ms=4)
        ax.set_xticks(
            range(len(modes)), ["KVM write-\nprotect", "device log\nin KVM", "device log\nin QEMU"], fontsize=8
        )
        ax.set_title(title, fontsize=9)
    fig.suptitle("Live migration of an L2 VM with a writer on its device node (nested SVM under TCG)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="migrations per dirty log (default 3)")
    ap.add_argument("--device-mib", type=int, default=128, help="the VM's device node, MiB (default 128)")
    ap.add_argument("--writer-pages", type=int, default=4096, help="pages the writer keeps dirtying")
    ap.add_argument("--writer-seconds", type=int, default=30, help="how long the writer runs")
    ap.add_argument("--out", type=Path, default=out_dir() / "bench-migrate")
    ap.add_argument(
        "--from-log",
        type=Path,
        nargs="+",
        metavar="LOG",
        help="boot nothing: take the runs from the `migrate ...` lines of earlier benches' output "
        "(benches cut short by the nested platform) and write the results, plot and summary",
    )
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.device_mib < 128 or args.device_mib % 128 or args.writer_pages < 1:
        ap.error("--repeat >= 1, --device-mib a multiple of 128, --writer-pages >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_log:
        lines = [ln for log in args.from_log for ln in log.read_text().splitlines()]
        logged = [MigrationResult.parse(ln) for ln in lines if ln.startswith("migrate dirty_log=")]
        costs = [ln for ln in lines if ln.startswith(COST_LINE)]
        if not {r.dirty_log for r in logged} >= {"stock", "device", "qemu"}:
            ap.error("the logs need a run of each dirty log (stock, device, qemu)")
        return report(args, logged, costs[-1] if costs else "", boots=0)

    print("[bench-migrate] booting the host (L1) ...", flush=True)
    hosts = Hosts(args.out)
    runs: list[MigrationResult] = []
    cost = ""
    try:
        if not has_device_dirty_log(hosts.host):
            print("bench-migrate: the host's kvm.ko has no device_dirty_log (build the KVM patch: make kvm)")
            return 1
        bench = hosts.host.run("cxltrack bench --iters 8 --clear", timeout=600).out
        cost = next((ln for ln in bench.splitlines() if ln.startswith(COST_LINE)), "")
        if not cost:
            print(f"bench-migrate: cxltrack bench printed no cost line:\n{bench}")
            return 1
        print(cost, flush=True)
        for i in range(args.repeat):
            for mode in ("stock", "device", "qemu"):
                print(f"[bench-migrate] run {i + 1}/{args.repeat} {mode} ...", flush=True)
                r = hosts.migrate(mode, args)
                print(r.line(), flush=True)
                runs.append(r)
    finally:
        hosts.host.shutdown()
    return report(args, runs, cost, hosts.boots)


def report(args: argparse.Namespace, runs: list[MigrationResult], cost: str, boots: int) -> int:
    """Write results.json and the plot, print the medians and the last line; 0 if every copy
    was exact and neither device log took a write-protect fault."""
    doc: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "host_boots": boots,
        "harvest_cost": cost,
        "runs": [asdict(r) for r in runs],
    }
    (args.out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    plot(runs, args.out / "migrate.png")
    by = {m: [r for r in runs if r.dirty_log == m] for m in ("stock", "device", "qemu")}
    for m, rs in by.items():
        print(
            f"{m}: median wp_faults={statistics.median(r.wp_faults for r in rs):.0f} "
            f"pages_sent={statistics.median(r.pages_sent for r in rs):.0f} "
            f"rounds={statistics.median(r.rounds for r in rs):.0f} "
            f"total_ms={statistics.median(r.total_ms for r in rs):.0f} "
            f"downtime_ms={statistics.median(r.downtime_ms for r in rs):.0f}"
        )
    print(cost)
    if boots:
        print(f"host boots: {boots} (a lost host's run was run again on the next)")
    else:
        print(f"runs taken from the logs: {' '.join(str(p) for p in args.from_log)}")
    print(f"results: {args.out / 'results.json'}, plot: {args.out / 'migrate.png'}")
    wp = {m: sum(r.wp_faults for r in rs) for m, rs in by.items()}
    sent = {m: sum(r.pages_sent for r in rs) for m, rs in by.items()}
    compared = sum(r.pages_compared for r in runs)
    equal = sum(r.pages_equal for r in runs)
    print(f"pages compared: {compared}")
    # The QEMU client runs on zeroed device ranges: its first round leaves out the pages the
    # device has not seen written, where stock KVM reads every page of the node.
    node = args.device_mib * MiB // 4096  # 4 KiB pages, as the tracker's and QEMU's
    stock_zero = statistics.median(s.zero_pages for s in by["stock"]) if by["stock"] else 0
    for r in by["qemu"]:
        if "skipped-pages" in r.client:
            read = node - r.client["skipped-pages"]
            print(
                f"round 1 on the device node: qemu client read {read} of {node} pages "
                f"({read * 4096 // MiB} of {args.device_mib} MiB), zero pages found {r.zero_pages} "
                f"(stock median {stock_zero:.0f})"
            )
    print(f"qemu client: wp_faults={wp['qemu']} pages_ratio={sent['qemu'] / max(sent['stock'], 1):.3f}")
    print(
        f"wp_faults_stock={wp['stock']} wp_faults_device={wp['device']} "
        f"pages_ratio={sent['device'] / max(sent['stock'], 1):.3f} ok={equal}"
    )
    return 0 if equal == compared and wp["device"] == 0 and wp["qemu"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
