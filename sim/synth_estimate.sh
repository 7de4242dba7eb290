#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Yosys estimate for an UltraScale+ part: synth_xilinx -family xcup -flatten -uram.
# usage: synth_estimate.sh <rtl dir with filelist.f> <work dir> [timeout seconds] [top] [black box]
# (top: CxlTrackCore by default; a black-box module is counted as one cell, so the board wrapper
# is estimated without the core it holds)
set -euo pipefail
rtl=$1
work=$2
limit=${3:-900}
top=${4:-CxlTrackCore}
bbox=${5:-}
mkdir -p "$work"
name=$(basename "$rtl")
bbcmd=""
if [ -n "$bbox" ]; then
	name="$name-without-$bbox"
	bbcmd="blackbox $bbox;"
fi
files=$(sed "s|^|$rtl/|" "$rtl/filelist.f" | tr '\n' ' ')
log=$work/$name.log
start=$(date +%s)
echo "synth-estimate[$name]: yosys synth_xilinx -family xcup -flatten -uram -top $top (takes minutes; log: $log)"
timeout "$limit" nice yosys -q -l "$log" -p "read_verilog -sv $files; $bbcmd synth_xilinx -family xcup -flatten -uram -top $top; tee -o $work/$name.stat stat" >/dev/null 2>&1 &
pid=$!
# progress: the pass Yosys is in, every 30 s
n=0
while kill -0 "$pid" 2>/dev/null; do
	sleep 1
	n=$((n + 1))
	if [ $((n % 30)) = 0 ]; then
		pass=$(grep -E '^[0-9.]+ Executing' "$log" 2>/dev/null | tail -1 | sed -E 's/^[0-9.]+ Executing ([^ ]+).*/\1/')
		echo "synth-estimate[$name]: ${n}s, in ${pass:-startup}"
	fi
done
if ! wait "$pid"; then
	echo "synth-estimate: $name failed or did not finish within ${limit}s (log: $log)"
	exit 3
fi
secs=$(( $(date +%s) - start ))
stat=$work/$name.stat
# yosys stat lines: "     <cell>   <count>" (top module, after flatten)
cells() { awk -v pat="^($1)\$" '$1 ~ pat && $2 ~ /^[0-9]+$/ {s += $2} END {print s + 0}' "$stat"; }
lut=$(cells 'LUT[1-6]')
ff=$(cells 'FD[A-Z]+')
bram=$(cells 'RAMB36E2')
bram18=$(cells 'RAMB18E2')
uram=$(cells 'URAM288')
dsp=$(cells 'DSP48E2')
lutram=$(cells 'RAM[0-9]+[SMX][0-9A-Z]*')
echo "synth-estimate[$name]: LUT=$lut FF=$ff BRAM36=$bram BRAM18=$bram18 URAM=$uram DSP=$dsp LUTRAM=$lutram (yosys ${secs}s)"
# for the side-by-side table of `make synth-estimate`
echo "$name $top $lut $ff $bram $bram18 $uram $lutram $secs" > "$work/$name.summary"
