# SPDX-License-Identifier: Apache-2.0
# Clock-domain crossings of CxlTrackBoard (rtl/src/cxltrack/board/Cdc.scala, AxiCdc.scala) and of
# the top level. Three unrelated clocks: PCIe user_clk (250 MHz, 4.0 ns), core_clk (100 MHz by
# default: cxlt_core_mhz), DDR4 ui_clk (300 MHz, 3.33 ns). Every crossing is one of:
#   - a two-flop synchroniser, first flop named *cdc_sync_0 (gray FIFO pointers, levels, the
#     pulse synchroniser's toggle): ASYNC_REG, and the path into it bounded without clock skew;
#   - the LUT-RAM of a gray-code FIFO (cdcFifoRam), written in one domain and read combinationally
#     in the other once the pointer has crossed (two or more reader cycles later): its read paths
#     are bounded by one reader period;
#   - a reset bridge (cdc_sync_rst_*): asynchronous assertion, released by its own clock.
# No set_clock_groups: every crossing not listed here stays timed and shows up as a failure.

set_property ASYNC_REG TRUE [get_cells -hier -filter {NAME =~ *cdc_sync* && IS_SEQUENTIAL}]
set_property ASYNC_REG TRUE [get_cells -hier -filter {NAME =~ *ddr_other_rst_reg* && IS_SEQUENTIAL}]

set_max_delay -datapath_only 3.000 -to [get_pins -of_objects \
    [get_cells -hier -filter {NAME =~ *cdc_sync_0_reg* && IS_SEQUENTIAL}] -filter {REF_PIN_NAME == D}]

# FIFO storage -> reading domain: bounded by one reader period; those bounds depend on the clock
# plan (the core clock is a build parameter), so fpga/vivado/build.tcl writes them into
# build/fpga/<card>/cdc_fifo.xdc.

# reset bridges: the asynchronous set of the first two flops comes from any domain
set_false_path -to [get_pins -of_objects \
    [get_cells -hier -filter {(NAME =~ *cdc_sync_rst_* || NAME =~ *ddr_other_rst_reg*) && IS_SEQUENTIAL}] \
    -filter {REF_PIN_NAME == PRE || REF_PIN_NAME == CLR}]
