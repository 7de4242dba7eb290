#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench-rtl`: run tb.bench_perf on Verilator and print the figures; the last line is
`ratio=<x> added_latency=<n> sim_cps=<n>`."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rtlsim import BUILD, SIM_DIR, build_sim, rtl_dir, run, sources

CYCLES_RAW = int(os.environ.get("CXLTRACK_BENCH_RAW_CYCLES", "300000"))


def build_vperf() -> Path:
    """The Python-free harness sim/perf/vperf.cpp, built with Verilator -O3."""
    exe = BUILD / "sim" / "vperf" / "vperf"
    srcs = [*sources("small"), SIM_DIR / "perf" / "vperf.cpp"]
    if exe.exists() and all(exe.stat().st_mtime > s.stat().st_mtime for s in srcs):
        return exe
    env = {**os.environ, "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include"}
    cmd = [
        "verilator",
        "--cc",
        "--exe",
        "--build",
        "-j",
        "2",
        "-O3",
        "--x-assign",
        "fast",
        "--x-initial",
        "fast",
        "-Wno-fatal",
        "-Wno-lint",
        "-Mdir",
        str(exe.parent),
        "--top-module",
        "CxlTrackCore",
        "-o",
        "vperf",
        *map(str, srcs),
    ]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return exe


def raw(exe: Path, track: int, *mode: str) -> dict[str, float]:
    """One vperf run of CYCLES_RAW cycles, tracking on or off (mode: vperf's further arguments,
    e.g. the harvest mode of bench_harvest.py); its key=value figures."""
    cmd = [str(exe), str(CYCLES_RAW), str(track), "1", *mode]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    line = out.stdout.strip().splitlines()[-1]
    print(f"  vperf: {line}")
    return {k: float(v) for k, v in (kv.split("=") for kv in line.split())}


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
    print(f"cocotb bench (AxiRam DDR, Python in the loop): ratio {on['req_per_cycle'] / off['req_per_cycle']:.3f}")
    exe = build_vperf()
    print(
        f"raw Verilator harness ({rtl_dir('small').name}, {CYCLES_RAW} cycles, DDR stub 4-cycle latency, "
        "10% stalls on every ready):"
    )
    r_on, r_off = raw(exe, 1), raw(exe, 0)
    ratio = r_on["req_per_cycle"] / r_off["req_per_cycle"]
    added = max(on["read_latency_cxl"] - on["read_latency_ddr"], on["write_latency_cxl"] - on["write_latency_ddr"])
    print(
        f"ratio={ratio:.3f} added_latency={math.ceil(added - 1e-9) if added > 0 else 0} "
        f"sim_cps={r_on['cycles_per_s']:.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
