// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.util._
import cxltrack.{Axi4, CxlTrackCore, CxlTrackParams, Regs}

/**
 * Board-level parameters of the PCIe-attached build: the memory BAR (function 0, BAR0) and the MSI-X BAR (function 1,
 * BAR2) sizes, and the PCI identity of the two functions. Function 1's identity and BAR0 size come from the register
 * map (regmap/cxltrack.rdl), function 0's device id too (the PCIe-BAR flavour of the memory function, docs/spec.md
 * section 10).
 */
case class BoardParams(core: CxlTrackParams, memBarLog2: Int) {
  require(
    (BigInt(1) << memBarLog2) >= core.capacityBytes,
    "the memory BAR must cover the capacity (a larger one answers beyond it with decode errors)"
  )
  val regBarLog2: Int  = log2Ceil(Regs.BAR_SIZE)
  val msixBarLog2: Int = 12 // table at 0, PBA at half the BAR (as QEMU's msix_init_exclusive_bar lays it out)
  val pbaOffset: Int   = 1 << (msixBarLog2 - 1)
  val msixVectors: Int = Regs.MSIX_VECTORS.toInt
}

/**
 * The PCIe-attached cxltrack device: [[CxlTrackCore]] between the UltraScale+ PCIe block's user interface and the DDR4
 * controller's AXI4 port, with no tracking logic of its own (fpga/README.md). Three clock domains:
 *
 *   - `user_clk` (PCIe, 250 MHz): the completer ([[PcieCompleter]]), the MSI-X table, function-level reset;
 *   - `core_clk`: the core; its AXI4 slave (memory window), AXI4-Lite slave (registers) and the interrupt cross from
 *     the PCIe domain through [[Axi4Async]], [[AxiLiteAsync]] and a [[PulseSync]];
 *   - `ddr_clk` (the DDR4 controller's user clock): the core's AXI4 master reaches it through an [[Axi4Async]].
 *
 * Resets: any of `user_reset`, `core_reset`, `ddr_reset` resets all three domains (asserted at once, released
 * synchronously per domain). A function-level reset of function 1 resets the core alone (spec section 11: tables,
 * slots, chunks, events; device memory untouched) after the completer has stopped at a request boundary and the core is
 * idle, so no transaction is cut; then the MSI-X table returns to its reset state and `cfg_flr_done` is pulsed.
 *
 * `dbg_time_en`/`dbg_tick` (core domain) drive the core's tick as in the core's benches; the board ties time on.
 * `core_idle` (core domain) drives a LED on the board and tells the simulation that the engines have settled.
 */
class CxlTrackBoard(bp: BoardParams) extends RawModule {
  import Usp._
  val p                    = bp.core
  override def desiredName = "CxlTrackBoard"

  // ---------------------------------------------------------------- PCIe block (user_clk)
  val user_clk                          = IO(Input(Clock()))
  val user_reset                        = IO(Input(Bool()))
  val s_axis_cq                         = IO(Flipped(new Axis(DataBits, CqUserBits)))
  val m_axis_cc                         = IO(new Axis(DataBits, CcUserBits))
  val m_axis_rq                         = IO(new Axis(DataBits, RqUserBits))
  val s_axis_rc                         = IO(Flipped(new Axis(DataBits, RcUserBits)))
  val pcie_cq_np_req                    = IO(Output(UInt(2.W)))
  val cfg_function_status               = IO(Input(UInt(16.W)))
  val cfg_interrupt_msix_enable         = IO(Input(UInt(4.W)))
  val cfg_interrupt_msix_mask           = IO(Input(UInt(4.W)))
  val cfg_interrupt_msix_address        = IO(Output(UInt(64.W)))
  val cfg_interrupt_msix_data           = IO(Output(UInt(32.W)))
  val cfg_interrupt_msix_int            = IO(Output(Bool()))
  val cfg_interrupt_msix_vec_pending    = IO(Output(UInt(2.W)))
  val cfg_interrupt_msix_sent           = IO(Input(Bool()))
  val cfg_interrupt_msix_fail           = IO(Input(Bool()))
  val cfg_interrupt_msi_function_number = IO(Output(UInt(8.W)))
  val cfg_flr_in_process                = IO(Input(UInt(4.W)))
  val cfg_flr_done                      = IO(Output(UInt(4.W)))

  // ---------------------------------------------------------------- core domain
  val core_clk    = IO(Input(Clock()))
  val core_reset  = IO(Input(Bool()))
  val dbg_time_en = IO(Input(Bool()))
  val dbg_tick    = IO(Input(Bool()))
  val core_idle   = IO(Output(Bool()))

  // ---------------------------------------------------------------- DDR4 controller (ddr_clk)
  val ddr_clk   = IO(Input(Clock()))
  val ddr_reset = IO(Input(Bool()))
  val m_axi_ddr = IO(new Axi4(p.memAddrBits, p.dataBits, p.idBits + 1))

  // ---------------------------------------------------------------- resets
  val anyReset = user_reset || core_reset || ddr_reset
  val rstPcie  = ResetSync(user_clk, anyReset)
  val rstCore  = ResetSync(core_clk, anyReset)
  val rstDdr   = ResetSync(ddr_clk, anyReset)

  // ---------------------------------------------------------------- PCIe domain: completer, MSI-X, FLR
  val flrCoreReq  = Wire(Bool())
  val quiesceReq  = Wire(Bool())
  val coreQuiet   = Wire(Bool()) // core domain: quiesce requested and the core idle
  val coreInReset = Wire(Bool()) // core domain: the FLR reset has reached the core
  val msiPulse    = Wire(Bool())

  val cpl = withClockAndReset(user_clk, rstPcie) {
    Module(new PcieCompleter(bp.memBarLog2, bp.regBarLog2, bp.msixBarLog2, p.addrBits, p.idBits))
  }
  cpl.cq <> s_axis_cq
  m_axis_cc <> cpl.cc

  withClockAndReset(user_clk, rstPcie) {
    // no requests of our own: MSI-X messages go through the cfg interface, so RQ stays idle and RC is drained
    m_axis_rq.tvalid := false.B
    m_axis_rq.tdata  := 0.U
    m_axis_rq.tkeep  := 0.U
    m_axis_rq.tlast  := false.B
    m_axis_rq.tuser  := 0.U
    s_axis_rc.tready := true.B
    pcie_cq_np_req   := 1.U // always ready for one more non-posted request

    val msix = Module(new MsixTable(bp.msixVectors, bp.msixBarLog2, bp.pbaOffset))
    msix.port <> cpl.msix
    msix.trigger                      := msiPulse
    msix.enable                       := cfg_interrupt_msix_enable(1)
    msix.fmask                        := cfg_interrupt_msix_mask(1)
    msix.busMstr                      := cfg_function_status(4 + 2)
    msix.msixSent                     := cfg_interrupt_msix_sent
    msix.msixFail                     := cfg_interrupt_msix_fail
    cfg_interrupt_msix_int            := msix.msixInt
    cfg_interrupt_msix_address        := msix.msixAddress
    cfg_interrupt_msix_data           := msix.msixData
    cfg_interrupt_msix_vec_pending    := 0.U
    cfg_interrupt_msi_function_number := 1.U

    // function 0 holds no state: its reset is done at once
    val flr0     = cfg_flr_in_process(0)
    val flr0Done = RegInit(false.B)
    when(flr0 && !flr0Done)(flr0Done := true.B)
    when(!flr0)(flr0Done             := false.B)
    val flr0Pulse = flr0 && !flr0Done

    // function 1: stop at a request boundary, wait for the core to go idle, reset it, wait for it to come back
    object F extends ChiselEnum { val fRun, fHold, fQuiesce, fReset, fRelease, fDone, fWait = Value }
    val fs        = RegInit(F.fRun)
    val quiet     = Cdc.level(coreQuiet)
    val inReset   = Cdc.level(coreInReset)
    val flr1Pulse = fs === F.fDone
    cpl.hold := fs =/= F.fRun
    // registered: they cross into the core domain
    quiesceReq := RegNext(fs === F.fQuiesce || fs === F.fReset || fs === F.fRelease, false.B)
    flrCoreReq := RegNext(fs === F.fReset, false.B)
    msix.clear := flr1Pulse
    switch(fs) {
      is(F.fRun)(when(cfg_flr_in_process(1))(fs := F.fHold))
      is(F.fHold)(when(cpl.drained)(fs := F.fQuiesce))
      is(F.fQuiesce)(when(quiet)(fs := F.fReset))
      is(F.fReset)(when(inReset)(fs := F.fRelease))
      is(F.fRelease)(when(!inReset && quiet)(fs := F.fDone))
      is(F.fDone)(fs := F.fWait)
      is(F.fWait)(when(!cfg_flr_in_process(1))(fs := F.fRun))
    }
    cfg_flr_done := Cat(0.U(2.W), flr1Pulse, flr0Pulse)
  }

  // ---------------------------------------------------------------- core domain
  val core = withClockAndReset(core_clk, rstCore) {
    val flrReset = Cdc.level(flrCoreReq)
    val c        = withReset(rstCore || flrReset)(Module(new CxlTrackCore(p)))
    val qReq     = Cdc.level(quiesceReq)
    coreQuiet     := RegNext(qReq && c.idle && !flrReset, false.B)
    coreInReset   := RegNext(flrReset, false.B)
    c.dbg_time_en := dbg_time_en
    // no DMA on the board yet (BoardMain builds the core with CAP_DMA.PRESENT = 0): the port never sees a handshake
    c.h_axi.awready := false.B
    c.h_axi.wready  := false.B
    c.h_axi.bvalid  := false.B
    c.h_axi.bid     := 0.U
    c.h_axi.bresp   := 0.U
    c.dbg_tick      := dbg_tick
    core_idle       := c.idle
    c
  }
  val msiSync = Module(new PulseSync)
  msiSync.srcClock := core_clk
  msiSync.srcReset := rstCore
  msiSync.dstClock := user_clk
  msiSync.dstReset := rstPcie
  msiSync.in       := core.msi
  msiPulse         := msiSync.out

  // memory window: PCIe domain -> core (the BAR offset is the core's CXL.mem address)
  val memX = Module(new Axi4Async(p.addrBits, p.dataBits, p.idBits))
  memX.s_clock := user_clk
  memX.s_reset := rstPcie
  memX.m_clock := core_clk
  memX.m_reset := rstCore
  memX.s <> cpl.mem
  core.s_axi <> memX.m

  // registers: PCIe domain -> core
  val regX = Module(new AxiLiteAsync(bp.regBarLog2))
  regX.s_clock := user_clk
  regX.s_reset := rstPcie
  regX.m_clock := core_clk
  regX.m_reset := rstCore
  regX.s <> cpl.lite
  core.s_axil <> regX.m

  // device memory: core -> DDR4 controller
  val ddrX = Module(new Axi4Async(p.memAddrBits, p.dataBits, p.idBits + 1))
  ddrX.s_clock := core_clk
  ddrX.s_reset := rstCore
  ddrX.m_clock := ddr_clk
  ddrX.m_reset := rstDdr
  ddrX.s <> core.m_axi
  m_axi_ddr <> ddrX.m
}
