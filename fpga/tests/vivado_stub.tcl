# SPDX-License-Identifier: Apache-2.0
# A dry run of fpga/vivado/build.tcl in plain tclsh: every Vivado command the flow calls is a proc
# that appends its name and arguments to $::stub_log (one Tcl list per line) and returns what the
# flow needs (a board part, IP handles, timing paths with the slack in $::env(STUB_SLACK)). The
# tests read the log to check what the flow would do. Nothing here knows Vivado's behaviour beyond
# these return values.
# usage: tclsh stub.tcl <log> <build.tcl> <build.tcl args...>

set stub_log [lindex $argv 0]
set script [lindex $argv 1]
set argv [lrange $argv 2 end]
set argc [llength $argv]
set stub_fd [open $stub_log w]

proc stub_record {name args} { puts $::stub_fd [list $name {*}$args]; flush $::stub_fd }

foreach cmd {create_project set_property create_ip generate_target synth_ip read_verilog read_xdc
             synth_design write_checkpoint report_utilization report_timing_summary opt_design
             place_design phys_opt_design route_design report_clock_interaction report_cdc
             report_methodology report_drc report_power write_bitstream write_debug_probes
             write_cfgmem current_project} {
    proc $cmd {args} "stub_record $cmd {*}\$args; return {}"
}
proc get_board_parts {args} {
    stub_record get_board_parts {*}$args
    if {[info exists ::env(STUB_NO_BOARD)]} { return {} }
    return [list xilinx.com:au250:part0:1.3]
}
proc get_ips {args} { stub_record get_ips {*}$args; return [lindex $args end] }
proc get_timing_paths {args} { stub_record get_timing_paths {*}$args; return [list path0] }
proc get_property {prop obj} {
    if {$prop eq "SLACK"} { return $::env(STUB_SLACK) }
    return {}
}
# the flow's exit code is the run's exit code; the log is flushed first
rename exit tcl_exit
proc exit {{code 0}} { close $::stub_fd; tcl_exit $code }

source $script
