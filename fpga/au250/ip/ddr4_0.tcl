# SPDX-License-Identifier: Apache-2.0
# DDR4 controller for DIMM C0 of the U250 (PG150): the pin-out, the DIMM (16 GB RDIMM,
# MTA18ASF2G72PZ-2G3, 72 bits with ECC) and its timing come from the board files through the
# board interfaces; DDR4-2400 (833 ps) from the 300 MHz oscillator of bank C0, 4:1, so the user
# clock is 300 MHz; AXI4 slave port 512 bits wide (one beat = one 64-byte line, as the core's
# master port), ids one wider than the core's CXL.mem ids (the core tags its internal writers).
# Sourced by fpga/vivado/build.tcl with $ip_dir set.

create_ip -name ddr4 -vendor xilinx.com -library ip -module_name ddr4_0 -dir $ip_dir

set_property -dict [list \
    CONFIG.C0_DDR4_BOARD_INTERFACE {ddr4_sdram_c0} \
    CONFIG.C0_CLOCK_BOARD_INTERFACE {default_300mhz_clk0} \
    CONFIG.RESET_BOARD_INTERFACE {Custom} \
    CONFIG.C0.DDR4_MemoryType {RDIMMs} \
    CONFIG.C0.DDR4_MemoryPart {MTA18ASF2G72PZ-2G3} \
    CONFIG.C0.DDR4_DataWidth {72} \
    CONFIG.C0.DDR4_Ecc {true} \
    CONFIG.C0.DDR4_TimePeriod {833} \
    CONFIG.C0.DDR4_InputClockPeriod {3332} \
    CONFIG.C0.DDR4_AxiSelection {true} \
    CONFIG.C0.DDR4_AxiDataWidth {512} \
    CONFIG.C0.DDR4_AxiAddressWidth {34} \
    CONFIG.C0.DDR4_AxiIDWidth [expr {$cxlt_id_bits + 1}] \
    CONFIG.C0.DDR4_AxiNarrowBurst {false} \
    CONFIG.C0.DDR4_Mem_Add_Map {ROW_COLUMN_BANK_INTLV} \
] [get_ips ddr4_0]
