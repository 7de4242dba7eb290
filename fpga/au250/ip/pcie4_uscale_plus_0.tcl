# SPDX-License-Identifier: Apache-2.0
# The UltraScale+ PCIe block of the U250 (PG213): Gen3 x16, 512-bit AXI4-Stream at 250 MHz,
# DWORD-aligned, no straddling (what CxlTrackBoard's completer and the cocotbext-pcie model in the
# benches use), two physical functions, MSI-X external (the table is in the wrapper).
# Identity and BAR geometry come from the generated board_params.tcl (cxlt_* variables), the
# same numbers the benches configure the PCIe model with.
# Sourced by fpga/vivado/build.tcl with $ip_dir set.

proc cxlt_hex {v width} { return [format "%0${width}x" $v] }

# Vivado gives BAR sizes as a number and a scale
proc cxlt_bar_size {log2} {
    if {$log2 >= 30} { return [list [expr {1 << ($log2 - 30)}] Gigabytes] }
    if {$log2 >= 20} { return [list [expr {1 << ($log2 - 20)}] Megabytes] }
    return [list [expr {1 << ($log2 - 10)}] Kilobytes]
}

create_ip -name pcie4_uscale_plus -vendor xilinx.com -library ip -module_name pcie4_uscale_plus_0 -dir $ip_dir

lassign [cxlt_bar_size $cxlt_fn0_bar0_log2] f0b0_size f0b0_scale
lassign [cxlt_bar_size $cxlt_fn1_bar0_log2] f1b0_size f1b0_scale
lassign [cxlt_bar_size $cxlt_fn1_bar2_log2] f1b2_size f1b2_scale

set_property -dict [list \
    CONFIG.mode_selection {Advanced} \
    CONFIG.PL_LINK_CAP_MAX_LINK_SPEED {8.0_GT/s} \
    CONFIG.PL_LINK_CAP_MAX_LINK_WIDTH {X16} \
    CONFIG.axisten_if_width {512_bit} \
    CONFIG.axisten_freq {250} \
    CONFIG.AXISTEN_IF_EXT_512_CQ_STRADDLE {false} \
    CONFIG.AXISTEN_IF_EXT_512_CC_STRADDLE {false} \
    CONFIG.AXISTEN_IF_EXT_512_RQ_STRADDLE {false} \
    CONFIG.AXISTEN_IF_EXT_512_RC_STRADDLE {false} \
    CONFIG.axisten_if_enable_client_tag {true} \
    CONFIG.en_parity {false} \
    CONFIG.TL_PF_ENABLE_REG {2} \
    CONFIG.vendor_id [cxlt_hex $cxlt_pci_vendor_id 4] \
    CONFIG.PF0_DEVICE_ID [cxlt_hex $cxlt_fn0_device_id 4] \
    CONFIG.PF0_Use_Class_Code_Lookup_Assistant {false} \
    CONFIG.PF0_CLASS_CODE [cxlt_hex $cxlt_fn0_class 6] \
    CONFIG.PF0_SUBSYSTEM_VENDOR_ID [cxlt_hex $cxlt_pci_vendor_id 4] \
    CONFIG.PF0_SUBSYSTEM_ID [cxlt_hex $cxlt_fn0_device_id 4] \
    CONFIG.PF0_INTERRUPT_PIN {NONE} \
    CONFIG.PF0_DEV_CAP_FUNCTION_LEVEL_RESET_CAPABLE {true} \
    CONFIG.pf0_bar0_enabled {true} \
    CONFIG.pf0_bar0_type {Memory} \
    CONFIG.pf0_bar0_64bit {true} \
    CONFIG.pf0_bar0_prefetchable {true} \
    CONFIG.pf0_bar0_size $f0b0_size \
    CONFIG.pf0_bar0_scale $f0b0_scale \
    CONFIG.pf0_bar2_enabled {false} \
    CONFIG.pf0_msi_enabled {false} \
    CONFIG.pf0_msix_enabled {false} \
    CONFIG.PF1_DEVICE_ID [cxlt_hex $cxlt_fn1_device_id 4] \
    CONFIG.PF1_Use_Class_Code_Lookup_Assistant {false} \
    CONFIG.PF1_CLASS_CODE [cxlt_hex $cxlt_fn1_class 6] \
    CONFIG.PF1_SUBSYSTEM_VENDOR_ID [cxlt_hex $cxlt_pci_vendor_id 4] \
    CONFIG.PF1_SUBSYSTEM_ID [cxlt_hex $cxlt_fn1_device_id 4] \
    CONFIG.PF1_INTERRUPT_PIN {NONE} \
    CONFIG.PF1_DEV_CAP_FUNCTION_LEVEL_RESET_CAPABLE {true} \
    CONFIG.pf1_bar0_enabled {true} \
    CONFIG.pf1_bar0_type {Memory} \
    CONFIG.pf1_bar0_64bit {true} \
    CONFIG.pf1_bar0_prefetchable {false} \
    CONFIG.pf1_bar0_size $f1b0_size \
    CONFIG.pf1_bar0_scale $f1b0_scale \
    CONFIG.pf1_bar2_enabled {true} \
    CONFIG.pf1_bar2_type {Memory} \
    CONFIG.pf1_bar2_64bit {true} \
    CONFIG.pf1_bar2_prefetchable {false} \
    CONFIG.pf1_bar2_size $f1b2_size \
    CONFIG.pf1_bar2_scale $f1b2_scale \
    CONFIG.pf1_msi_enabled {false} \
    CONFIG.MSI_X_OPTIONS {MSI-X_External} \
    CONFIG.pf1_msix_enabled {true} \
    CONFIG.PF1_MSIX_CAP_TABLE_SIZE [cxlt_hex [expr {$cxlt_fn1_msix_vectors - 1}] 3] \
    CONFIG.PF1_MSIX_CAP_TABLE_BIR {BAR_3:2} \
    CONFIG.PF1_MSIX_CAP_TABLE_OFFSET [cxlt_hex $cxlt_fn1_msix_table_offset 8] \
    CONFIG.PF1_MSIX_CAP_PBA_BIR {BAR_3:2} \
    CONFIG.PF1_MSIX_CAP_PBA_OFFSET [cxlt_hex $cxlt_fn1_msix_pba_offset 8] \
] [get_ips pcie4_uscale_plus_0]

if {$cxlt_fn1_msix_table_bar != 2} {
    error "board_params.tcl puts the MSI-X table in BAR$cxlt_fn1_msix_table_bar; this script configures BAR_3:2"
}
