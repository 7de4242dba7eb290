# SPDX-License-Identifier: Apache-2.0
"""`make demo`: the cxltrack scenario end to end.

Boots QEMU's CXL machine with the cxltrack device (function 1 of the type-3
memory device, embedded default configuration config/default.toml), loads
cxltrack.ko, creates a devdax region and runs the guest program
cxltrack-demo through the driver: a pre-copy loop with the device's dirty
log while a writer dirties pages, associations with discard-if-clean, and
slot merges. Prints a report table and writes out/demo/demo.json and
out/demo/demo.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from cxltrack.config import DeviceConfig, load, named
from cxltrack.harness import GuestCommandError, GuestError, Vm, VmConfig, load_image
from cxltrack.harness.pins import out_dir
from cxltrack.harness.tracker import tracker_topology


def run_guest(
    qemu: Path, image: Path, cfg: DeviceConfig, pages: int, seed: int, rounds: int, workdir: Path
) -> tuple[dict[str, Any], float]:
    vm_cfg = VmConfig(
        qemu=qemu, image=load_image(image), topology=tracker_topology(cfg), workdir=workdir, command_timeout=900.0
    )
    with Vm(vm_cfg) as vm:
        boot = vm.boot_seconds or 0.0
        print(f"demo: guest ready in {boot:.1f} s; loading cxltrack.ko, creating the devdax region", flush=True)
        vm.run("modprobe cxltrack && test -c /dev/cxltrack0")
        vm.run("cxl-region create devdax", timeout=120)
        # 4 KiB mapping granularity: the baseline's write-protect log changes the protection of
        # single pages, which a devdax mapping allows only down to its alignment (2 MiB default)
        vm.run("cxl-region align 4096")
        print(f"demo: running cxltrack-demo --pages {pages} in the guest (TCG: a minute or two)", flush=True)
        res = vm.run(f"cxltrack-demo --pages {pages} --seed {seed} --rounds {rounds}", timeout=900, check=False)
        if res.status not in (0, 1):  # 1: a data check failed, reported in the JSON
            raise GuestCommandError(res)
        try:
            result: dict[str, Any] = json.loads(res.out)
        except json.JSONDecodeError as exc:
            raise GuestError(f"cxltrack-demo printed no JSON ({exc}):\n{res.describe()}") from None
        result["guest_exit"] = res.status
        dmesg = vm.run("dmesg", check=False).out
        result["guest_kernel_warnings"] = [ln for ln in dmesg.splitlines() if "WARNING:" in ln or "BUG:" in ln]
    return result, boot


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    pc, wp, sm, fr, dev = r["precopy"], r["precopy_wp"], r["swap_mapper"], r["false_reads"], r["device"]
    return [
        (
            "device",
            f"{dev['pages']} pages of {dev['page_size']} B, region at DPA {dev['region_dpa']:#x}",
        ),
        ("pre-copy guest pages", str(pc["pages"])),
        ("pages sent per round (dirty log)", " ".join(map(str, pc["rounds"]))),
        ("pages sent, dirty log", str(pc["sent"])),
        ("pages sent, every page every round", str(pc["naive"])),
        ("saved by the dirty log", f"{100 * (1 - pc['sent'] / pc['naive']):.1f} %"),
        ("guest writes during migration", str(pc["guest_writes"])),
        ("destination pages differing from source", str(pc["mismatched_pages"])),
        # The same pre-copy with the baseline's dirty log (wp-log.c): a fault per first write
        # to a page per round slows the guest, so compare guest writes as well as pages.
        ("baseline, write-protect log: pages per round", " ".join(map(str, wp["rounds"]))),
        ("baseline: pages sent, write-protect faults", f"{wp['sent']}, {wp['wp_faults']}"),
        ("baseline: guest writes, pages differing", f"{wp['guest_writes']}, {wp['mismatched_pages']}"),
        ("pre-copy seconds, device log vs write-protect", f"{pc['seconds']:.2f} vs {wp['seconds']:.2f}"),
        ("associated disk-backed pages", str(sm["associated"])),
        ("rewritten by the guest", str(sm["rewritten"])),
        ("discarded clean (no swap write)", str(sm["discarded_clean"])),
        ("needed a swap write", str(sm["needed_swap_write"])),
        ("wrong discard answers", str(sm["wrong_answers"])),
        ("full slot: SLOT_FULL event, disk reads", f"{fr['full_slot_event']}, {fr['full_disk_reads']}"),
        ("partial slot: guest bytes, disk reads", f"{fr['partial_valid_bytes']}, {fr['partial_disk_reads']}"),
        ("wrongly merged bytes", str(fr["wrong_bytes"])),
    ]


def plot(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pc, wp, sm = r["precopy"], r["precopy_wp"], r["swap_mapper"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 1]})
    rounds = list(range(len(pc["rounds"])))
    a.bar([x - 0.27 for x in rounds], [pc["pages"]] * len(rounds), width=0.27, label="every page", color="#bbbbbb")
    a.bar(
        rounds,
        pc["rounds"],
        width=0.27,
        label=f"device dirty log (guest: {pc['guest_writes']} writes)",
        color="#1f77b4",
    )
    wrounds = list(range(len(wp["rounds"])))
    a.bar(
        [x + 0.27 for x in wrounds],
        wp["rounds"],
        width=0.27,
        label=f"write-protect log ({wp['wp_faults']} faults; guest: {wp['guest_writes']} writes)",
        color="#ff7f0e",
    )
    a.set_xlabel("pre-copy round (last: writer paused)")
    a.set_ylabel("pages sent")
    a.set_title(f"Pre-copy of {pc['pages']} pages: {pc['sent']} sent vs {pc['naive']}")
    a.legend(loc="center right")
    b.bar(
        ["clean\n(discarded)", "rewritten\n(swap write)"],
        [sm["discarded_clean"], sm["needed_swap_write"]],
        color=["#2ca02c", "#d62728"],
    )
    b.set_title("discard-if-clean")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qemu", type=Path, default=os.environ.get("CXLTRACK_QEMU"), help="qemu-system-x86_64")
    ap.add_argument("--image", type=Path, default=out_dir() / "guest" / "busybox.json", help="guest image manifest")
    ap.add_argument("--config", help="device configuration TOML (default: config/default.toml)")
    ap.add_argument("--pages", type=int, default=1024, help="pre-copy guest pages, a multiple of 64 (default 1024)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=out_dir() / "demo")
    args = ap.parse_args(argv)
    if args.qemu is None or not os.access(args.qemu, os.X_OK):
        ap.error(f"--qemu {args.qemu}: not an executable (run via `make demo`, which builds it)")
    if not args.image.exists():
        ap.error(f"--image {args.image}: missing (run `make guest`)")
    if args.pages < 64 or args.pages % 64:
        ap.error("--pages must be a positive multiple of 64")
    cfg = load(args.config) if args.config else named("default")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        result, boot = run_guest(args.qemu, args.image, cfg, args.pages, args.seed, args.rounds, args.out / "vm")
    except GuestError as exc:
        print(f"demo: FAILED in the guest: {exc}\n(logs: {args.out / 'vm'})", file=sys.stderr)
        return 1
    result["host"] = {
        "boot_seconds": round(boot, 2),
        "total_seconds": round(time.monotonic() - t0, 1),
        "config": args.config or "config/default.toml",
        "seed": args.seed,
    }
    (args.out / "demo.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, args.out / "demo.png")
    rows = table(result)
    width = max(len(k) for k, _ in rows)
    print("cxltrack demo (full stack: QEMU CXL device + cxltrack.ko + libcxltrack, TCG guest)")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print(f"  {'report files':<{width}}  {args.out / 'demo.json'}, {args.out / 'demo.png'}")
    ok = result.get("ok") and result["guest_exit"] == 0 and not result["guest_kernel_warnings"]
    if not ok:
        print("demo: FAILED: a data check failed or the guest kernel warned (see demo.json)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
