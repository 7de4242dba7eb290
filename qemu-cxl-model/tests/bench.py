# SPDX-License-Identifier: Apache-2.0
"""Window throughput of the QEMU device with tracking enabled vs disabled.

One QEMU (accel=qtest) with the default configuration; the CXL window is
decoded to the type-3 device as in the tests. qtest's `memset` (writes) and
`b64read` (reads) move large blocks through the window in one command each;
QEMU's memory core splits them into 8-byte accesses, each of which passes
the HDM decode, cxl_type3_read/write and the tracker, as a guest access
does.

Drift (another process on the machine, CPU frequency, the host's page cache)
moves single runs by several per cent, more than the tracker costs. So the
bench measures many short *pairs*: one transfer with tracking on and one with
it off, back to back, in an order that alternates from pair to pair, and
takes the ratio within each pair. Slow phases of the machine hit both halves
of a pair alike; the median of the pair ratios ignores the pairs a burst of
load split. The last line is `ratio=<median on/off throughput> ci95=<lo..hi>
pairs=<n>`: the median of the pair ratios and its 95 % bootstrap confidence
interval (single transfers on this machine vary by +-30 %, bimodally, with
tracking on or off alike, so single pairs spread widely; the interval says how
well the median is known).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cxlt_env import TrackerVM

from cxltrack import regs
from cxltrack.config import named

MiB = 1 << 20


def measure(t: TrackerVM, track: bool, size: int) -> tuple[float, float]:
    t.reg_write(regs.CTRL, 1 if track else 0)
    base = t.window
    start = time.perf_counter()
    t.vm.qt(f"memset 0x{base:x} 0x{size:x} 0x5a")
    mid = time.perf_counter()
    t.vm.qt(f"b64read 0x{base:x} 0x{size:x}")
    end = time.perf_counter()
    return mid - start, end - mid


def quantile(xs: list[float], q: float) -> float:
    """Linear-interpolated quantile of a non-empty sample."""
    ys = sorted(xs)
    pos = q * (len(ys) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ys) - 1)
    return ys[lo] + (ys[hi] - ys[lo]) * (pos - lo)


def median_ci(xs: list[float], n: int = 2000, seed: int = 1) -> tuple[float, float]:
    """95 % bootstrap confidence interval of the median (fixed seed: reproducible)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=1, help="block size per transfer (MiB)")
    ap.add_argument("--pairs", type=int, default=120, help="on/off pairs")
    args = ap.parse_args(argv)
    if args.mib < 1 or args.pairs < 2:
        ap.error("--mib must be >= 1 and --pairs >= 2")
    size = args.mib * MiB
    cfg = named("default")
    ratios: list[float] = []
    w_ratios: list[float] = []
    r_ratios: list[float] = []
    tot = {True: [0.0, 0.0], False: [0.0, 0.0]}
    with TrackerVM(cfg) as t:
        measure(t, True, size)  # warm-up: touch the backing RAM
        measure(t, False, size)
        for i in range(args.pairs):
            order = (True, False) if i % 2 == 0 else (False, True)
            got = {track: measure(t, track, size) for track in order}
            for track in order:
                tot[track][0] += got[track][0]
                tot[track][1] += got[track][1]
            # throughput ratio on/off = time off / time on
            ratios.append(sum(got[False]) / sum(got[True]))
            w_ratios.append(got[False][0] / got[True][0])
            r_ratios.append(got[False][1] / got[True][1])
        writes = t.reg_read(regs.STAT_WRITES_LO) | t.reg_read(regs.STAT_WRITES_HI) << 32
        t.close()
    moved = args.pairs * size / MiB
    for track in (True, False):
        w, r = tot[track]
        print(
            f"tracking={'on ' if track else 'off'} write {moved / w:8.1f} MiB/s  "
            f"read {moved / r:8.1f} MiB/s  ({args.pairs} x {args.mib} MiB each way)"
        )
    print(f"write requests seen by the tracker: {writes}")
    for name, xs in (("write", w_ratios), ("read", r_ratios)):
        print(
            f"{name:5} pair ratio: median {statistics.median(xs):.3f}  "
            f"p10..p90 {quantile(xs, 0.1):.3f}..{quantile(xs, 0.9):.3f}"
        )
    lo, hi = median_ci(ratios)
    print(f"pair ratios: p10..p90 {quantile(ratios, 0.1):.3f}..{quantile(ratios, 0.9):.3f} (single pairs)")
    print(f"ratio={statistics.median(ratios):.3f} ci95={lo:.3f}..{hi:.3f} pairs={len(ratios)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
