// SPDX-License-Identifier: Apache-2.0
//
// Top level of the cxltrack build for the AMD/Xilinx Alveo U250 (xcu250-figd2104-2L-e).
// Only vendor primitives and IP live here: the PCIe block (pcie4_uscale_plus_0, fpga/au250/ip/),
// the DDR4 controller of DIMM C0 (ddr4_0), the reference-clock buffers and the MMCM of the core
// clock. Everything else, including every clock-domain crossing, is the Chisel wrapper
// CxlTrackBoard (rtl/src/cxltrack/board/), which the cocotb benches simulate as it is here.
//
// Clocks: PCIe user_clk 250 MHz (Gen3 x16, 512-bit interface), core 100 MHz (by default; see
// docs/rtl-results.md, "Place and route") from the 300 MHz oscillator of DDR bank 1 (its DIMM is
// unused), DDR4 ui_clk 300 MHz (DDR4-2400, 4:1).
// LEDs: 0 = PCIe link up, 1 = DDR4 calibrated, 2 = tracker idle.

`timescale 1ns / 1ps
`default_nettype none

module cxltrack_au250 #(
    // from the generated board_params.tcl (cxlt_mem_addr_bits, cxlt_id_bits + 1), set by build.tcl
    parameter int MEM_ADDR_BITS = 28,
    parameter int DDR_ID_BITS = 5,
    // core clock = 1200 MHz (the MMCM's VCO) / CORE_CLK_DIVIDE, from cxlt_core_mhz
    parameter int CORE_CLK_DIVIDE = 12
) (
    // PCIe x16 (edge connector)
    input  wire [15:0] pcie_rx_p,
    input  wire [15:0] pcie_rx_n,
    output wire [15:0] pcie_tx_p,
    output wire [15:0] pcie_tx_n,
    input  wire        pcie_refclk_p,
    input  wire        pcie_refclk_n,
    input  wire        pcie_reset_n,

    // DDR4 DIMM C0 (16 GB RDIMM, 72-bit with ECC, x4 devices, one rank)
    input  wire        c0_sys_clk_p,
    input  wire        c0_sys_clk_n,
    output wire        c0_ddr4_act_n,
    output wire [16:0] c0_ddr4_adr,
    output wire [1:0]  c0_ddr4_ba,
    output wire [1:0]  c0_ddr4_bg,
    output wire [0:0]  c0_ddr4_cke,
    output wire [0:0]  c0_ddr4_odt,
    output wire [0:0]  c0_ddr4_cs_n,
    output wire [0:0]  c0_ddr4_ck_t,
    output wire [0:0]  c0_ddr4_ck_c,
    output wire        c0_ddr4_reset_n,
    output wire        c0_ddr4_parity,
    inout  wire [71:0] c0_ddr4_dq,
    inout  wire [17:0] c0_ddr4_dqs_t,
    inout  wire [17:0] c0_ddr4_dqs_c,

    // 300 MHz oscillator of DDR bank 1: the core clock's source
    input  wire        clk_300mhz_1_p,
    input  wire        clk_300mhz_1_n,

    output wire [2:0]  led
);

    // ------------------------------------------------------------------ PCIe reference clock
    wire pcie_sys_clk_gt, pcie_sys_clk_div2, pcie_sys_clk;
    IBUFDS_GTE4 #(.REFCLK_HROW_CK_SEL(2'b00)) pcie_refclk_ibuf (
        .I(pcie_refclk_p), .IB(pcie_refclk_n), .CEB(1'b0),
        .O(pcie_sys_clk_gt), .ODIV2(pcie_sys_clk_div2)
    );
    BUFG_GT pcie_sys_clk_bufg (
        .I(pcie_sys_clk_div2), .CE(1'b1), .CEMASK(1'b0), .CLR(1'b0), .CLRMASK(1'b0), .DIV(3'd0),
        .O(pcie_sys_clk)
    );
    wire pcie_perst_n;
    IBUF pcie_reset_ibuf (.I(pcie_reset_n), .O(pcie_perst_n));

    // ------------------------------------------------------------------ core clock: 300 MHz -> VCO 1200 MHz -> core
    wire clk_300_1, core_clk_mmcm, core_clk, core_fb, core_fb_buf, core_locked;
    IBUFDS clk_300_1_ibuf (.I(clk_300mhz_1_p), .IB(clk_300mhz_1_n), .O(clk_300_1));
    MMCME4_BASE #(
        .CLKIN1_PERIOD(3.333),
        .CLKFBOUT_MULT_F(4.0),   // VCO 1200 MHz
        .DIVCLK_DIVIDE(1),
        .CLKOUT0_DIVIDE_F(CORE_CLK_DIVIDE)
    ) core_mmcm (
        .CLKIN1(clk_300_1), .CLKFBIN(core_fb_buf), .RST(1'b0), .PWRDWN(1'b0),
        .CLKOUT0(core_clk_mmcm), .CLKFBOUT(core_fb), .LOCKED(core_locked),
        .CLKOUT0B(), .CLKOUT1(), .CLKOUT1B(), .CLKOUT2(), .CLKOUT2B(), .CLKOUT3(), .CLKOUT3B(),
        .CLKOUT4(), .CLKOUT5(), .CLKOUT6(), .CLKFBOUTB()
    );
    BUFG core_fb_bufg (.I(core_fb), .O(core_fb_buf));
    BUFG core_clk_bufg (.I(core_clk_mmcm), .O(core_clk));

    // ------------------------------------------------------------------ PCIe block
    wire         user_clk, user_reset, user_lnk_up;
    wire [511:0] cq_tdata, cc_tdata, rq_tdata, rc_tdata;
    wire [15:0]  cq_tkeep, cc_tkeep, rq_tkeep, rc_tkeep;
    wire         cq_tlast, cc_tlast, rq_tlast, rc_tlast;
    wire         cq_tvalid, cc_tvalid, rq_tvalid, rc_tvalid;
    wire         cq_tready, rc_tready;
    wire [3:0]   cc_tready, rq_tready;
    wire [182:0] cq_tuser;
    wire [80:0]  cc_tuser;
    wire [136:0] rq_tuser;
    wire [160:0] rc_tuser;
    wire [1:0]   cq_np_req;
    wire [15:0]  cfg_function_status;
    wire [3:0]   cfg_msix_enable, cfg_msix_mask, cfg_flr_in_process, cfg_flr_done;
    wire [63:0]  cfg_msix_address;
    wire [31:0]  cfg_msix_data;
    wire [1:0]   cfg_msix_vec_pending;
    wire [7:0]   cfg_msi_function_number;
    wire         cfg_msix_int, cfg_msix_sent, cfg_msix_fail;

    pcie4_uscale_plus_0 pcie (
        .pci_exp_txn(pcie_tx_n), .pci_exp_txp(pcie_tx_p),
        .pci_exp_rxn(pcie_rx_n), .pci_exp_rxp(pcie_rx_p),
        .sys_clk(pcie_sys_clk), .sys_clk_gt(pcie_sys_clk_gt), .sys_reset(pcie_perst_n),
        .user_clk(user_clk), .user_reset(user_reset), .user_lnk_up(user_lnk_up), .phy_rdy_out(),

        .m_axis_cq_tdata(cq_tdata), .m_axis_cq_tkeep(cq_tkeep), .m_axis_cq_tlast(cq_tlast),
        .m_axis_cq_tready(cq_tready), .m_axis_cq_tuser(cq_tuser), .m_axis_cq_tvalid(cq_tvalid),
        .s_axis_cc_tdata(cc_tdata), .s_axis_cc_tkeep(cc_tkeep), .s_axis_cc_tlast(cc_tlast),
        .s_axis_cc_tready(cc_tready), .s_axis_cc_tuser(cc_tuser), .s_axis_cc_tvalid(cc_tvalid),
        .s_axis_rq_tdata(rq_tdata), .s_axis_rq_tkeep(rq_tkeep), .s_axis_rq_tlast(rq_tlast),
        .s_axis_rq_tready(rq_tready), .s_axis_rq_tuser(rq_tuser), .s_axis_rq_tvalid(rq_tvalid),
        .m_axis_rc_tdata(rc_tdata), .m_axis_rc_tkeep(rc_tkeep), .m_axis_rc_tlast(rc_tlast),
        .m_axis_rc_tready(rc_tready), .m_axis_rc_tuser(rc_tuser), .m_axis_rc_tvalid(rc_tvalid),
        .pcie_cq_np_req(cq_np_req), .pcie_cq_np_req_count(),
        .pcie_rq_seq_num0(), .pcie_rq_seq_num_vld0(), .pcie_rq_seq_num1(), .pcie_rq_seq_num_vld1(),
        .pcie_rq_tag0(), .pcie_rq_tag1(), .pcie_rq_tag_av(), .pcie_rq_tag_vld0(), .pcie_rq_tag_vld1(),
        .pcie_tfc_nph_av(), .pcie_tfc_npd_av(),

        // configuration management: unused (the host configures both functions)
        .cfg_mgmt_addr(10'd0), .cfg_mgmt_function_number(8'd0), .cfg_mgmt_write(1'b0),
        .cfg_mgmt_write_data(32'd0), .cfg_mgmt_byte_enable(4'd0), .cfg_mgmt_read(1'b0),
        .cfg_mgmt_read_data(), .cfg_mgmt_read_write_done(), .cfg_mgmt_debug_access(1'b0),

        // status
        .cfg_function_status(cfg_function_status),
        .cfg_phy_link_down(), .cfg_phy_link_status(), .cfg_negotiated_width(), .cfg_current_speed(),
        .cfg_max_payload(), .cfg_max_read_req(), .cfg_function_power_state(), .cfg_vf_status(),
        .cfg_vf_power_state(), .cfg_link_power_state(), .cfg_err_cor_out(), .cfg_err_nonfatal_out(),
        .cfg_err_fatal_out(), .cfg_local_error_out(), .cfg_local_error_valid(), .cfg_ltssm_state(),
        .cfg_rx_pm_state(), .cfg_tx_pm_state(), .cfg_rcb_status(), .cfg_obff_enable(),
        .cfg_pl_status_change(), .cfg_tph_requester_enable(), .cfg_tph_st_mode(),
        .cfg_vf_tph_requester_enable(), .cfg_vf_tph_st_mode(),

        // messages, flow control
        .cfg_msg_received(), .cfg_msg_received_data(), .cfg_msg_received_type(),
        .cfg_msg_transmit(1'b0), .cfg_msg_transmit_type(3'd0), .cfg_msg_transmit_data(32'd0),
        .cfg_msg_transmit_done(),
        .cfg_fc_ph(), .cfg_fc_pd(), .cfg_fc_nph(), .cfg_fc_npd(), .cfg_fc_cplh(), .cfg_fc_cpld(),
        .cfg_fc_sel(3'd0),

        // control
        .cfg_dsn(64'd0), .cfg_bus_number(), .cfg_power_state_change_ack(1'b1),
        .cfg_power_state_change_interrupt(), .cfg_err_cor_in(1'b0), .cfg_err_uncor_in(1'b0),
        .cfg_flr_in_process(cfg_flr_in_process), .cfg_flr_done(cfg_flr_done),
        .cfg_vf_flr_in_process(), .cfg_vf_flr_func_num(8'd0), .cfg_vf_flr_done(1'b0),
        .cfg_link_training_enable(1'b1), .cfg_config_space_enable(1'b1),
        .cfg_req_pm_transition_l23_ready(1'b0), .cfg_hot_reset_in(1'b0), .cfg_hot_reset_out(),
        .cfg_ds_port_number(8'd0), .cfg_ds_bus_number(8'd0), .cfg_ds_device_number(5'd0),
        .cfg_pm_aspm_l1_entry_reject(1'b0), .cfg_pm_aspm_tx_l0s_entry_disable(1'b1),

        // interrupts: no INTx; MSI-X in external mode (the table is in the wrapper, function 1 BAR2)
        .cfg_interrupt_int(4'd0), .cfg_interrupt_pending(4'd0), .cfg_interrupt_sent(),
        .cfg_interrupt_msix_enable(cfg_msix_enable), .cfg_interrupt_msix_mask(cfg_msix_mask),
        .cfg_interrupt_msix_vf_enable(), .cfg_interrupt_msix_vf_mask(),
        .cfg_interrupt_msix_address(cfg_msix_address), .cfg_interrupt_msix_data(cfg_msix_data),
        .cfg_interrupt_msix_int(cfg_msix_int), .cfg_interrupt_msix_vec_pending(cfg_msix_vec_pending),
        .cfg_interrupt_msix_vec_pending_status(), .cfg_interrupt_msix_sent(cfg_msix_sent),
        .cfg_interrupt_msix_fail(cfg_msix_fail), .cfg_interrupt_msi_attr(3'd0),
        .cfg_interrupt_msi_tph_present(1'b0), .cfg_interrupt_msi_tph_type(2'd0),
        .cfg_interrupt_msi_tph_st_tag(8'd0), .cfg_interrupt_msi_function_number(cfg_msi_function_number)
    );

    // ------------------------------------------------------------------ DDR4 controller (C0)
    wire         ddr_clk, ddr_ui_rst, ddr_calib;
    wire [DDR_ID_BITS-1:0]   ddr_awid, ddr_bid, ddr_arid, ddr_rid;
    wire [MEM_ADDR_BITS-1:0] ddr_awaddr, ddr_araddr;  // the core's device address (DPA)
    wire [7:0]   ddr_awlen, ddr_arlen;
    wire [2:0]   ddr_awsize, ddr_arsize, ddr_awprot, ddr_arprot;
    wire [1:0]   ddr_awburst, ddr_arburst, ddr_bresp, ddr_rresp;
    wire         ddr_awlock, ddr_arlock;
    wire [3:0]   ddr_awcache, ddr_arcache;
    wire         ddr_awvalid, ddr_awready, ddr_wvalid, ddr_wready, ddr_wlast;
    wire         ddr_bvalid, ddr_bready, ddr_arvalid, ddr_arready;
    wire         ddr_rvalid, ddr_rready, ddr_rlast;
    wire [511:0] ddr_wdata, ddr_rdata;
    wire [63:0]  ddr_wstrb;
    reg          ddr_aresetn = 1'b0;

    ddr4_0 ddr (
        .sys_rst(1'b0),
        .c0_sys_clk_p(c0_sys_clk_p), .c0_sys_clk_n(c0_sys_clk_n),
        .c0_ddr4_act_n(c0_ddr4_act_n), .c0_ddr4_adr(c0_ddr4_adr), .c0_ddr4_ba(c0_ddr4_ba),
        .c0_ddr4_bg(c0_ddr4_bg), .c0_ddr4_cke(c0_ddr4_cke), .c0_ddr4_odt(c0_ddr4_odt),
        .c0_ddr4_cs_n(c0_ddr4_cs_n), .c0_ddr4_ck_t(c0_ddr4_ck_t), .c0_ddr4_ck_c(c0_ddr4_ck_c),
        .c0_ddr4_reset_n(c0_ddr4_reset_n), .c0_ddr4_parity(c0_ddr4_parity),
        .c0_ddr4_dq(c0_ddr4_dq), .c0_ddr4_dqs_t(c0_ddr4_dqs_t), .c0_ddr4_dqs_c(c0_ddr4_dqs_c),
        .c0_init_calib_complete(ddr_calib),
        .c0_ddr4_ui_clk(ddr_clk), .c0_ddr4_ui_clk_sync_rst(ddr_ui_rst),
        .dbg_clk(), .dbg_bus(),
        .c0_ddr4_aresetn(ddr_aresetn),
        .c0_ddr4_s_axi_awid(ddr_awid), .c0_ddr4_s_axi_awaddr({{(34 - MEM_ADDR_BITS){1'b0}}, ddr_awaddr}),
        .c0_ddr4_s_axi_awlen(ddr_awlen), .c0_ddr4_s_axi_awsize(ddr_awsize),
        .c0_ddr4_s_axi_awburst(ddr_awburst), .c0_ddr4_s_axi_awlock(ddr_awlock),
        .c0_ddr4_s_axi_awcache(ddr_awcache), .c0_ddr4_s_axi_awprot(ddr_awprot),
        .c0_ddr4_s_axi_awqos(4'd0), .c0_ddr4_s_axi_awvalid(ddr_awvalid),
        .c0_ddr4_s_axi_awready(ddr_awready),
        .c0_ddr4_s_axi_wdata(ddr_wdata), .c0_ddr4_s_axi_wstrb(ddr_wstrb),
        .c0_ddr4_s_axi_wlast(ddr_wlast), .c0_ddr4_s_axi_wvalid(ddr_wvalid),
        .c0_ddr4_s_axi_wready(ddr_wready),
        .c0_ddr4_s_axi_bready(ddr_bready), .c0_ddr4_s_axi_bid(ddr_bid),
        .c0_ddr4_s_axi_bresp(ddr_bresp), .c0_ddr4_s_axi_bvalid(ddr_bvalid),
        .c0_ddr4_s_axi_arid(ddr_arid), .c0_ddr4_s_axi_araddr({{(34 - MEM_ADDR_BITS){1'b0}}, ddr_araddr}),
        .c0_ddr4_s_axi_arlen(ddr_arlen), .c0_ddr4_s_axi_arsize(ddr_arsize),
        .c0_ddr4_s_axi_arburst(ddr_arburst), .c0_ddr4_s_axi_arlock(ddr_arlock),
        .c0_ddr4_s_axi_arcache(ddr_arcache), .c0_ddr4_s_axi_arprot(ddr_arprot),
        .c0_ddr4_s_axi_arqos(4'd0), .c0_ddr4_s_axi_arvalid(ddr_arvalid),
        .c0_ddr4_s_axi_arready(ddr_arready),
        .c0_ddr4_s_axi_rready(ddr_rready), .c0_ddr4_s_axi_rlast(ddr_rlast),
        .c0_ddr4_s_axi_rvalid(ddr_rvalid), .c0_ddr4_s_axi_rresp(ddr_rresp),
        .c0_ddr4_s_axi_rid(ddr_rid), .c0_ddr4_s_axi_rdata(ddr_rdata),
        // ECC control port: left at its defaults (correction on, no interrupt)
        .c0_ddr4_s_axi_ctrl_awvalid(1'b0), .c0_ddr4_s_axi_ctrl_awready(),
        .c0_ddr4_s_axi_ctrl_awaddr(32'd0), .c0_ddr4_s_axi_ctrl_wvalid(1'b0),
        .c0_ddr4_s_axi_ctrl_wready(), .c0_ddr4_s_axi_ctrl_wdata(32'd0),
        .c0_ddr4_s_axi_ctrl_bvalid(), .c0_ddr4_s_axi_ctrl_bready(1'b1),
        .c0_ddr4_s_axi_ctrl_bresp(), .c0_ddr4_s_axi_ctrl_arvalid(1'b0),
        .c0_ddr4_s_axi_ctrl_arready(), .c0_ddr4_s_axi_ctrl_araddr(32'd0),
        .c0_ddr4_s_axi_ctrl_rvalid(), .c0_ddr4_s_axi_ctrl_rready(1'b1),
        .c0_ddr4_s_axi_ctrl_rdata(), .c0_ddr4_s_axi_ctrl_rresp(), .c0_ddr4_interrupt()
    );

    // The DDR side is usable once calibrated; any reset of the design also resets the controller's
    // AXI port (not the memory: no recalibration), so no half transaction survives on either side.
    wire ddr_reset = ddr_ui_rst | ~ddr_calib;
    (* ASYNC_REG = "TRUE" *) reg [1:0] ddr_other_rst = 2'b11;
    always @(posedge ddr_clk or posedge user_reset or negedge core_locked) begin
        if (user_reset || !core_locked) ddr_other_rst <= 2'b11;
        else ddr_other_rst <= {ddr_other_rst[0], 1'b0};
    end
    always @(posedge ddr_clk) ddr_aresetn <= ~(ddr_reset | ddr_other_rst[1]);

    // ------------------------------------------------------------------ the device
    CxlTrackBoard dev (
        .user_clk(user_clk), .user_reset(user_reset),
        .s_axis_cq_tdata(cq_tdata), .s_axis_cq_tkeep(cq_tkeep), .s_axis_cq_tlast(cq_tlast),
        .s_axis_cq_tuser(cq_tuser), .s_axis_cq_tvalid(cq_tvalid), .s_axis_cq_tready(cq_tready),
        .m_axis_cc_tdata(cc_tdata), .m_axis_cc_tkeep(cc_tkeep), .m_axis_cc_tlast(cc_tlast),
        .m_axis_cc_tuser(cc_tuser), .m_axis_cc_tvalid(cc_tvalid), .m_axis_cc_tready(cc_tready[0]),
        .m_axis_rq_tdata(rq_tdata), .m_axis_rq_tkeep(rq_tkeep), .m_axis_rq_tlast(rq_tlast),
        .m_axis_rq_tuser(rq_tuser), .m_axis_rq_tvalid(rq_tvalid), .m_axis_rq_tready(rq_tready[0]),
        .s_axis_rc_tdata(rc_tdata), .s_axis_rc_tkeep(rc_tkeep), .s_axis_rc_tlast(rc_tlast),
        .s_axis_rc_tuser(rc_tuser), .s_axis_rc_tvalid(rc_tvalid), .s_axis_rc_tready(rc_tready),
        .pcie_cq_np_req(cq_np_req),
        .cfg_function_status(cfg_function_status),
        .cfg_interrupt_msix_enable(cfg_msix_enable), .cfg_interrupt_msix_mask(cfg_msix_mask),
        .cfg_interrupt_msix_address(cfg_msix_address), .cfg_interrupt_msix_data(cfg_msix_data),
        .cfg_interrupt_msix_int(cfg_msix_int), .cfg_interrupt_msix_vec_pending(cfg_msix_vec_pending),
        .cfg_interrupt_msix_sent(cfg_msix_sent), .cfg_interrupt_msix_fail(cfg_msix_fail),
        .cfg_interrupt_msi_function_number(cfg_msi_function_number),
        .cfg_flr_in_process(cfg_flr_in_process), .cfg_flr_done(cfg_flr_done),

        .core_clk(core_clk), .core_reset(~core_locked),
        .dbg_time_en(1'b1), .dbg_tick(1'b0), .core_idle(led[2]),

        .ddr_clk(ddr_clk), .ddr_reset(ddr_reset),
        .m_axi_ddr_awid(ddr_awid), .m_axi_ddr_awaddr(ddr_awaddr), .m_axi_ddr_awlen(ddr_awlen),
        .m_axi_ddr_awsize(ddr_awsize), .m_axi_ddr_awburst(ddr_awburst), .m_axi_ddr_awlock(ddr_awlock),
        .m_axi_ddr_awcache(ddr_awcache), .m_axi_ddr_awprot(ddr_awprot), .m_axi_ddr_awvalid(ddr_awvalid),
        .m_axi_ddr_awready(ddr_awready),
        .m_axi_ddr_wdata(ddr_wdata), .m_axi_ddr_wstrb(ddr_wstrb), .m_axi_ddr_wlast(ddr_wlast),
        .m_axi_ddr_wvalid(ddr_wvalid), .m_axi_ddr_wready(ddr_wready),
        .m_axi_ddr_bid(ddr_bid), .m_axi_ddr_bresp(ddr_bresp), .m_axi_ddr_bvalid(ddr_bvalid),
        .m_axi_ddr_bready(ddr_bready),
        .m_axi_ddr_arid(ddr_arid), .m_axi_ddr_araddr(ddr_araddr), .m_axi_ddr_arlen(ddr_arlen),
        .m_axi_ddr_arsize(ddr_arsize), .m_axi_ddr_arburst(ddr_arburst), .m_axi_ddr_arlock(ddr_arlock),
        .m_axi_ddr_arcache(ddr_arcache), .m_axi_ddr_arprot(ddr_arprot), .m_axi_ddr_arvalid(ddr_arvalid),
        .m_axi_ddr_arready(ddr_arready),
        .m_axi_ddr_rid(ddr_rid), .m_axi_ddr_rdata(ddr_rdata), .m_axi_ddr_rresp(ddr_rresp),
        .m_axi_ddr_rlast(ddr_rlast), .m_axi_ddr_rvalid(ddr_rvalid), .m_axi_ddr_rready(ddr_rready)
    );

    assign led[0] = user_lnk_up;
    assign led[1] = ddr_calib;

endmodule

`default_nettype wire
