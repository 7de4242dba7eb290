#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Yosys estimate for an UltraScale+ part: synth_xilinx -family xcup -flatten -uram.
# usage: [NOFSM=1] synth_estimate.sh <rtl dir with filelist.f> <work dir> [timeout seconds] [top] [black box]
# (top: CxlTrackCore by default; a black-box module is counted as one cell, so the board wrapper
# is estimated without the core it holds)
# NOFSM=1 runs synth_xilinx without its `fsm` pass (Yosys 0.23 has no -nofsm): the script up to the
# `prepare` label, that label's commands by hand minus `fsm` (as `yosys -p 'help synth_xilinx'` lists
# them for -family xcup without -widemux/-nosrl), then the script from `map_dsp` on. Used for the 1 TiB
# harvest top and the default core (mk/30-rtl.mk): the top's 1 024-entry chunk owner table (2-bit state
# registers assigned constants) is 1 024 FSM candidates, on which FSM_DETECT alone ran ~1 h, and on
# a default core's it had not ended at 900 s under load; a table of registers is not a state machine, and
# re-encoding gains nothing for an estimate. The board wrapper (its core a black box) keeps the full
# script. The default core's rows before RTL v3 were measured with the full script.
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
base="synth_xilinx -family xcup -flatten -uram -top $top"
synth=""
from=begin
if [ "${NOFSM:-0}" = 1 ]; then
	echo "synth-estimate[$name]: NOFSM=1: synth_xilinx without its fsm pass"
	synth="$base -run begin:prepare; proc; flatten; tribuf -logic; deminout; opt_expr; opt_clean; check;"
	synth="$synth opt -nodffe -nosdff; opt; wreduce; peepopt; opt_clean; pmux2shiftx; clean;"
	from=map_dsp
fi
# ABC_LIGHT=1 runs the `map_luts` label by hand with a lighter ABC script (strash; dc2; dretime; strash; if)
# instead of ABC's default LUT script (&fraig -x; scorr; dc2; dretime; strash; dch -f; if; mfs2): on the 1 TiB
# harvest top's flattened netlist (~416 K gates, 52 K inputs) the default script ran 42 min of wall time (1 238 s
# of CPU) for 150 148 LUTs in the end; the light one 89 s for 143 291 (-5 %, FF/RAM counts the same).
if [ "${ABC_LIGHT:-0}" = 1 ]; then
	echo "synth-estimate[$name]: ABC_LIGHT=1: abc -script 'strash; dc2; dretime; strash; if'"
	echo "strash; dc2; dretime; strash; if" > "$work/$name.abc"
	synth="$synth $base -run $from:map_luts; opt_expr -mux_undef -noclkinv;"
	synth="$synth abc -luts 2:2,3,6:5,10,20 -script $work/$name.abc; clean; techmap -map +/xilinx/ff_map.v;"
	synth="$synth xilinx_srl -fixed -minlen 3; techmap -map +/xilinx/lut_map.v -map +/xilinx/cells_map.v -D LUT_WIDTH=6;"
	synth="$synth xilinx_dffopt; opt_lut_ins -tech xilinx; $base -run finalize:"
elif [ "$from" = begin ]; then
	synth="$base"
else
	synth="$synth $base -run $from:"
fi
# -t: time stamps in the log, to see where the time goes
timeout "$limit" nice yosys -q -t -l "$log" -p "read_verilog -sv $files; $bbcmd $synth; tee -o $work/$name.stat stat" >/dev/null 2>&1 &
pid=$!
# progress: the pass Yosys is in, every 30 s
n=0
while kill -0 "$pid" 2>/dev/null; do
	sleep 1
	n=$((n + 1))
	if [ $((n % 30)) = 0 ]; then
		pass=$(grep -E '^\[[0-9.]+\] [0-9.]+ Executing' "$log" 2>/dev/null | tail -1 |
			sed -E 's/^\[[0-9.]+\] ([0-9.]+) Executing ([^ ]+).*/\2 (step \1)/')
		echo "synth-estimate[$name]: ${n}s, in ${pass:-startup}"
	fi
done
if ! wait "$pid"; then
	echo "synth-estimate: $name failed or did not finish within ${limit}s (log: $log)"
	exit 3
fi
secs=$(( $(date +%s) - start ))
stat=$work/$name.stat
sed -i -E 's/^\[[0-9.]+\] //' "$stat" # the -t time stamps
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
