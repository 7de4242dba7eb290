# SPDX-License-Identifier: Apache-2.0
# The AMD/Xilinx Alveo U250 build of cxltrack, for fpga/vivado/build.tcl.
set card_part       xcu250-figd2104-2L-e
set card_board_part xilinx.com:au250:part0:*
set card_top        cxltrack_au250
set card_rtl        [list rtl/cxltrack_au250.sv]
set card_xdc        [list constraints/au250.xdc constraints/cdc.xdc]
set card_ips        [list pcie4_uscale_plus_0 ddr4_0]
# flash for write_cfgmem (UG1289): 1 Gb quad SPI
set card_flash_size 128
set card_flash_if   SPIx4
# clock plan: the core clock comes from an MMCM with a 1200 MHz VCO (rtl/cxltrack_au250.sv)
set card_core_vco_mhz 1200
set card_user_clk_ns  4.000
set card_ddr_clk_ns   3.333
