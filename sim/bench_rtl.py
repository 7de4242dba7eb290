#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench-rtl`: run tb.bench_perf on Verilator and print the figures; the last line is
`ratio=<x> added_latency=<n> sim_cps=<n>`."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rtlsim import build_sim, run


def main() -> int:
    bdir = build_sim("verilator", "small")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        env = {"CXLTRACK_BENCH_OUT": str(out)}
        for k in ("CXLTRACK_BENCH_CYCLES", "CXLTRACK_BENCH_STALL", "CXLTRACK_SEED"):
            if k in os.environ:
                env[k] = os.environ[k]
        _tests, fails, tdir = run("verilator", bdir, "bench_perf", env=env)
        if fails or not out.exists():
            print(f"bench failed (log in {tdir})")
            return 1
        res = json.loads(out.read_text())
    on, off = res["track1"], res["track0"]
    for name, r in (("TRACK_EN=1", on), ("TRACK_EN=0", off)):
        print(
            f"{name}: {r['cycles']} cycles, {r['reads']} reads + {r['writes']} writes accepted = "
            f"{r['req_per_cycle']:.3f} req/cycle; read latency {r['read_latency_cxl']:.2f} cycles at the CXL "
            f"port vs {r['read_latency_ddr']:.2f} at DDR; write {r['write_latency_cxl']:.2f} vs "
            f"{r['write_latency_ddr']:.2f}; {r['sim_cps']:.0f} cycles/s"
        )
    ratio = on["req_per_cycle"] / off["req_per_cycle"]
    added = max(on["read_latency_cxl"] - on["read_latency_ddr"], on["write_latency_cxl"] - on["write_latency_ddr"])
    print(f"ratio={ratio:.3f} added_latency={math.ceil(added - 1e-9) if added > 0 else 0} sim_cps={on['sim_cps']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
