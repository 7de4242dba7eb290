# SPDX-License-Identifier: Apache-2.0
# Alveo U250 (xcu250-figd2104-2L-e) pins and clocks of the cxltrack build. Pin numbers are the
# card's (UG1289, "Alveo U200 and U250 Data Center Accelerator Cards User Guide"). DIMM C0's pins and
# its 300 MHz clock come from the board files through the DDR4 IP's board interfaces (ip/ddr4_0.tcl).

# configuration: bank 0 at 1.8 V, 1 Gb quad-SPI flash (MT25QU01G), 32-bit addressing
set_property CFGBVS GND [current_design]
set_property CONFIG_VOLTAGE 1.8 [current_design]
set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]
set_property BITSTREAM.CONFIG.CONFIGRATE 63.8 [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4 [current_design]
set_property BITSTREAM.CONFIG.SPI_32BIT_ADDR YES [current_design]
set_property BITSTREAM.CONFIG.SPI_FALL_EDGE YES [current_design]
set_property BITSTREAM.CONFIG.EXTMASTERCCLK_EN DISABLE [current_design]
set_property BITSTREAM.CONFIG.UNUSEDPIN PULLUP [current_design]
set_operating_conditions -design_power_budget 160

# PCIe edge connector: x16 on GTY quads 224-227, 100 MHz reference clock on MGTREFCLK0 of quad 226,
# PERST# from the slot. Lane n's receive and transmit P pins (N pins follow from the P pins).
set_property PACKAGE_PIN AM11 [get_ports pcie_refclk_p]
create_clock -period 10.000 -name pcie_refclk [get_ports pcie_refclk_p]
set_property -dict {PACKAGE_PIN BD21 IOSTANDARD LVCMOS12 PULLUP TRUE} [get_ports pcie_reset_n]
set_false_path -from [get_ports pcie_reset_n]
set_property PACKAGE_PIN AF2 [get_ports {pcie_rx_p[0]}]
set_property PACKAGE_PIN AF7 [get_ports {pcie_tx_p[0]}]
set_property PACKAGE_PIN AG4 [get_ports {pcie_rx_p[1]}]
set_property PACKAGE_PIN AG9 [get_ports {pcie_tx_p[1]}]
set_property PACKAGE_PIN AH2 [get_ports {pcie_rx_p[2]}]
set_property PACKAGE_PIN AH7 [get_ports {pcie_tx_p[2]}]
set_property PACKAGE_PIN AJ4 [get_ports {pcie_rx_p[3]}]
set_property PACKAGE_PIN AJ9 [get_ports {pcie_tx_p[3]}]
set_property PACKAGE_PIN AK2 [get_ports {pcie_rx_p[4]}]
set_property PACKAGE_PIN AK7 [get_ports {pcie_tx_p[4]}]
set_property PACKAGE_PIN AL4 [get_ports {pcie_rx_p[5]}]
set_property PACKAGE_PIN AL9 [get_ports {pcie_tx_p[5]}]
set_property PACKAGE_PIN AM2 [get_ports {pcie_rx_p[6]}]
set_property PACKAGE_PIN AM7 [get_ports {pcie_tx_p[6]}]
set_property PACKAGE_PIN AN4 [get_ports {pcie_rx_p[7]}]
set_property PACKAGE_PIN AN9 [get_ports {pcie_tx_p[7]}]
set_property PACKAGE_PIN AP2 [get_ports {pcie_rx_p[8]}]
set_property PACKAGE_PIN AP7 [get_ports {pcie_tx_p[8]}]
set_property PACKAGE_PIN AR4 [get_ports {pcie_rx_p[9]}]
set_property PACKAGE_PIN AR9 [get_ports {pcie_tx_p[9]}]
set_property PACKAGE_PIN AT2 [get_ports {pcie_rx_p[10]}]
set_property PACKAGE_PIN AT7 [get_ports {pcie_tx_p[10]}]
set_property PACKAGE_PIN AU4 [get_ports {pcie_rx_p[11]}]
set_property PACKAGE_PIN AU9 [get_ports {pcie_tx_p[11]}]
set_property PACKAGE_PIN AV2 [get_ports {pcie_rx_p[12]}]
set_property PACKAGE_PIN AV7 [get_ports {pcie_tx_p[12]}]
set_property PACKAGE_PIN AW4 [get_ports {pcie_rx_p[13]}]
set_property PACKAGE_PIN BB5 [get_ports {pcie_tx_p[13]}]
set_property PACKAGE_PIN BA2 [get_ports {pcie_rx_p[14]}]
set_property PACKAGE_PIN BD5 [get_ports {pcie_tx_p[14]}]
set_property PACKAGE_PIN BC2 [get_ports {pcie_rx_p[15]}]
set_property PACKAGE_PIN BF5 [get_ports {pcie_tx_p[15]}]

# 300 MHz LVDS oscillator of DDR bank 1 (DIMM C1 is not used): source of the 200 MHz core clock
set_property -dict {PACKAGE_PIN AW20 IOSTANDARD LVDS} [get_ports clk_300mhz_1_p]
set_property -dict {PACKAGE_PIN AW19 IOSTANDARD LVDS} [get_ports clk_300mhz_1_n]
create_clock -period 3.333 -name clk_300mhz_1 [get_ports clk_300mhz_1_p]

# LEDs: link up, DDR4 calibrated, tracker idle (status only: not timed)
set_property -dict {PACKAGE_PIN BC21 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[0]}]
set_property -dict {PACKAGE_PIN BB21 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[1]}]
set_property -dict {PACKAGE_PIN BA20 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[2]}]
set_false_path -to [get_ports {led[*]}]
