# SPDX-License-Identifier: Apache-2.0
"""Summarise a nextpnr run (`make pnr-check`): Fmax per clock, the utilisation of the ECP5's
resources, and the critical path (from the JSON report written with --report and
--detailed-timing-report), as the lines docs/rtl-results.md records."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# the resources worth a line (nextpnr-ecp5 bel types)
RESOURCES = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D", "TRELLIS_IO")


def critical_path(report: dict[str, Any]) -> list[str]:
    """The worst path as `kind delay net/cell` lines, with the cells it passes through."""
    paths = report.get("critical_paths") or []
    if not paths:
        return []
    worst = max(paths, key=lambda p: sum(step.get("delay", 0.0) for step in p.get("path", [])))
    lines = [f"critical path {worst.get('from')} -> {worst.get('to')}:"]
    total = 0.0
    for step in worst.get("path", []):
        delay = float(step.get("delay", 0.0))
        total += delay
        where = step.get("net") or step.get("to", {}).get("cell") or step.get("from", {}).get("cell") or ""
        lines.append(f"  {step.get('type', '?'):9} {delay:6.2f} ns  (cum {total:6.2f})  {where}")
    return lines


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
