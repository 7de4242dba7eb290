# SPDX-License-Identifier: Apache-2.0
"""Summarise a nextpnr run (`make pnr-check`): Fmax per clock, the utilisation of the ECP5's
resources, and the critical path (from the JSON report written with --report and
--detailed-timing-report), as the lines docs/rtl-results.md records."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

# the resources worth a line (nextpnr-ecp5 bel types)
RESOURCES = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D", "TRELLIS_IO")


def owner(name: str) -> str:
    """The RTL signal a netlist cell or net is named after (Yosys appends the mapped cells)."""
    return re.split(r"_(?:LUT4|TRELLIS|CCU2C|PFUMX|L6MUX21|DPR16X4|DP16KD)", name)[0]


def critical_path(report: dict[str, Any]) -> list[str]:
    """The worst register-to-register path: start and end, LUT levels and carry-chain hops,
    logic and routing time, and the RTL signals it runs through (in order, repeats merged)."""
    paths = [p for p in report.get("critical_paths") or [] if "async" not in (p.get("from", "") + p.get("to", ""))]
    if not paths:
        return []
    worst = max(paths, key=lambda p: sum(step.get("delay", 0.0) for step in p.get("path", [])))
    steps = worst.get("path", [])
    logic = [s for s in steps if s.get("type") == "logic"]
    levels = [s for s in logic if s.get("delay", 0.0) >= 0.15]  # LUTs and carry-chain entries
    routing = sum(s.get("delay", 0.0) for s in steps if s.get("type") == "routing")
    through: list[str] = []
    for s in steps:
        o = owner(s.get("net") or s.get("to", {}).get("cell", ""))
        if o and not o.startswith("$") and (not through or through[-1] != o):
            through.append(o)
    total = sum(s.get("delay", 0.0) for s in steps)
    return [
        f"pnr-check: critical path {total:.2f} ns: {len(levels)} LUT levels + {len(logic) - len(levels)} "
        f"carry-chain hops, logic {sum(s.get('delay', 0.0) for s in logic):.2f} ns, routing {routing:.2f} ns",
        f"pnr-check:   from {steps[0].get('from', {}).get('cell')} to {steps[-1].get('to', {}).get('cell')}",
        "pnr-check:   through " + " > ".join(through),
    ]


def summarise(report: dict[str, Any], synth_s: int, pnr_s: int) -> list[str]:
    out = []
    for clk, f in sorted(report.get("fmax", {}).items()):
        out.append(f"pnr-check: Fmax {f['achieved']:.2f} MHz (asked {f['constraint']:.2f} MHz) for clock {clk}")
    util = report.get("utilization", {})
    parts = []
    for res in RESOURCES:
        if res in util:
            u, a = util[res]["used"], util[res]["available"]
            parts.append(f"{res} {u}/{a} ({100.0 * u / a:.1f} %)")
    out.append("pnr-check: utilisation " + ", ".join(parts))
    out.append(f"pnr-check: yosys {synth_s} s, nextpnr {pnr_s} s")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("report", type=Path)
    ap.add_argument("log", type=Path)
    ap.add_argument("--synth-seconds", type=int, default=0)
    ap.add_argument("--pnr-seconds", type=int, default=0)
    args = ap.parse_args(argv)
    report = json.loads(args.report.read_text())
    if not report.get("fmax"):
        print(f"pnr-check: no Fmax in {args.report} (see {args.log})", file=sys.stderr)
        return 1
    for line in summarise(report, args.synth_seconds, args.pnr_seconds):
        print(line)
    for line in critical_path(report):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
