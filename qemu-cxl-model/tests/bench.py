# SPDX-License-Identifier: Apache-2.0
"""Window throughput of the QEMU device with tracking enabled vs disabled.

One QEMU (accel=qtest) with the default configuration; the CXL window is
decoded to the type-3 device as in the tests. qtest's `memset` (writes) and
`b64read` (reads) move large blocks through the window in one command each;
QEMU's memory core splits them into 8-byte accesses, each of which passes
the HDM decode, cxl_type3_read/write and the tracker, as a guest access
does. Rounds alternate CTRL.TRACK_EN = 1 and 0 to share any drift. The last
line is `ratio=<enabled throughput / disabled throughput>`.
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=8, help="block size per transfer (MiB)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    size = args.mib * MiB
    cfg = named("default")
    tot = {True: [0.0, 0.0], False: [0.0, 0.0]}
    with TrackerVM(cfg) as t:
        measure(t, True, size)  # warm-up: touch the backing RAM
        for _ in range(args.rounds):
            for track in (True, False):
                w, r = measure(t, track, size)
                tot[track][0] += w
                tot[track][1] += r
        pages = t.reg_read(regs.STAT_WRITES_LO) | t.reg_read(regs.STAT_WRITES_HI) << 32
        t.close()
    moved = args.rounds * size / MiB
    for track in (True, False):
        w, r = tot[track]
        print(
            f"tracking={'on ' if track else 'off'} write {moved / w:8.1f} MiB/s  "
            f"read {moved / r:8.1f} MiB/s  ({args.rounds} x {args.mib} MiB each way)"
        )
    print(f"write requests seen by the tracker: {pages}")
    on = 2 * moved / sum(tot[True])
    off = 2 * moved / sum(tot[False])
    print(f"ratio={on / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
