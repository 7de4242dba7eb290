// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * The cxltrack tracking engine (docs/spec.md): an AXI4 pass-through from the CXL.mem side (`s_axi`) to device memory
 * (`m_axi`) with tracking on the side band, plus the BAR0 register block on AXI4-Lite (`s_axil`). Every register
 * offset, field position, opcode, status and event type comes from the generated [[Regs]].
 *
 * Data path: AR/R and B are combinational pass-throughs (0 added cycles); AW/W go through a burst arbiter shared with
 * the internal writers (slot merge, scrub). A request whose address is beyond the capacity is answered DECERR locally
 * once earlier requests have drained.
 *
 * Tables: dirty, accessed, BAT-valid bitmaps and hotness counters are [[TrackTable]]s (RAM, one read-modify-write per
 * port and cycle, effect two cycles after the request). Within one cycle the port order decides: a harvest step before
 * the sets/increments of its cycle, write invalidations before a BAT command. See docs/rtl-notes.md.
 */
object St extends ChiselEnum {
  val sInit, sIdle, sCheck, sHarvest, sBatRd, sBatWait, sMergeRd, sMergeWait, sMergeWr, sMergeDrain, sQueryRd,
      sQueryWait, sList =
    Value
}

class CxlTrackCore(val p: CxlTrackParams) extends Module {
  override def desiredName = "CxlTrackCore"

  val s_axi       = IO(Flipped(new Axi4(p.addrBits, p.dataBits, p.idBits)))
  val m_axi       = IO(new Axi4(p.memAddrBits, p.dataBits, p.idBits + 1))
  val s_axil      = IO(Flipped(new AxiLite(p.liteAddrBits)))
  val irq         = IO(Output(Bool()))
  val msi         = IO(Output(Bool()))
  val idle        = IO(Output(Bool()))
  val dbg_time_en = IO(Input(Bool()))
  val dbg_tick    = IO(Input(Bool()))

  val W                          = p.words
  val S                          = p.slots
  val C                          = p.chunks
  val wordBits                   = log2Ceil(W) max 1
  def wordOf(pg: UInt): UInt     = if (W == 1) 0.U(wordBits.W) else pg(p.pageBits - 1, 6)
  def bitOf(pg: UInt): UInt      = pg(5, 0)
  def pageOf(a: UInt): UInt      = (a >> p.pageShift)(p.pageBits - 1, 0)
  def sat32(x: UInt): UInt       = Mux(x(32), "hffffffff".U(32.W), x(31, 0))
  def fit(x: UInt, w: Int): UInt = x.pad(w)(w - 1, 0)

  // ------------------------------------------------------------------ registers
  val ctrl        = RegInit(Regs.CTRL.RESET.U(2.W))
  val trackEn     = ctrl(Regs.CTRL.TRACK_EN_LSB)
  val batEvtEn    = ctrl(Regs.CTRL.BAT_INV_EVT_EN_LSB)
  val slotTimeout = RegInit(0.U(32.W))
  val intSticky   = RegInit(0.U(3.W)) // CMD_DONE and ERROR bits; EVQ is a level
  val intEnable   = RegInit(0.U(3.W))
  val errStatus   = RegInit(0.U(5.W))
  val errAddr     = RegInit(0.U(32.W))
  val errCount    = RegInit(0.U(32.W))
  val cmdArg      = RegInit(VecInit(Seq.fill(3)(0.U(64.W))))
  val cmdOpReg    = RegInit(0.U(32.W))
  val busy        = RegInit(false.B)
  val cmdCode     = RegInit(0.U(8.W))
  val cmdSeq      = RegInit(0.U(16.W))
  val res0        = RegInit(0.U(64.W))
  val res1        = RegInit(0.U(64.W))
  val statReads   = RegInit(0.U(64.W))
  val statWrites  = RegInit(0.U(64.W))
  val statDecerr  = RegInit(0.U(32.W))
  val statBatInv  = RegInit(0.U(32.W))

  // ------------------------------------------------------------------ time
  val presc     = RegInit(0.U(log2Ceil(p.tickCycles + 1).W))
  val prescWrap = presc === (p.tickCycles - 1).U
  when(dbg_time_en) { presc := Mux(prescWrap, 0.U, presc + 1.U) }
  val tick = (dbg_time_en && prescWrap) || dbg_tick

  // ------------------------------------------------------------------ events
  // push ports, in SEQ order within a cycle
  val EV_INV   = 0 // 0..1: write accept, write end (external or internal)
  val EV_ERR   = 2
  val EV_FULL  = 3
  val EV_TO    = 4 // 4 .. 4+S-1: timeouts in slot order
  val EV_MERGE = 4 + S
  val EV_SCRUB = 5 + S
  val EV_PORTS = p.eventPorts
  require(EV_PORTS == EV_SCRUB + 1)
  val evq = Module(new EventQueue(p.evqDepthLog2, EV_PORTS))
  for (k <- 0 until EV_PORTS) { evq.io.push(k).valid := false.B; evq.io.push(k).bits := 0.U.asTypeOf(new EventRec) }
  evq.io.pop := false.B
  def event(k: Int, v: Bool, typ: Int, index: UInt, arg: UInt): Unit = {
    evq.io.push(k).valid      := v
    evq.io.push(k).bits.typ   := typ.U
    evq.io.push(k).bits.index := index
    evq.io.push(k).bits.arg   := arg
  }

  // errors reported by the register port (one access per cycle)
  val errReq     = WireDefault(false.B)
  val errW1c     = WireDefault(0.U(5.W))
  val intW1c     = WireDefault(0.U(3.W))
  val errBit     = WireDefault(0.U(3.W))
  val errOff     = WireDefault(0.U(32.W))
  val cmdDoneSet = WireDefault(false.B)

  // ------------------------------------------------------------------ read path
  val arInRange = s_axi.araddr < p.capacityBytes.U
  val rdOut     = RegInit(0.U(16.W))
  val rdErr     = RegInit(false.B)
  val rdErrId   = RegInit(0.U(p.idBits.W))
  val rdErrLeft = RegInit(0.U(8.W))
  m_axi.arvalid := s_axi.arvalid && arInRange && !rdErr
  m_axi.arid    := Cat(0.U(1.W), s_axi.arid)
  m_axi.araddr  := fit(s_axi.araddr, p.memAddrBits)
  m_axi.arlen   := s_axi.arlen
  m_axi.arsize  := s_axi.arsize
  m_axi.arburst := s_axi.arburst
  m_axi.arlock  := s_axi.arlock
  m_axi.arcache := s_axi.arcache
  m_axi.arprot  := s_axi.arprot
  // READY only with VALID: the decode must not look at an idle (possibly undriven) address
  s_axi.arready := !rdErr && s_axi.arvalid && Mux(arInRange, m_axi.arready, rdOut === 0.U)
  val arFire   = s_axi.arvalid && s_axi.arready
  val rdAccept = arFire && arInRange
  val rdPage   = pageOf(s_axi.araddr)
  when(arFire && !arInRange) {
    rdErr     := true.B
    rdErrId   := s_axi.arid
    rdErrLeft := s_axi.arlen
  }
  s_axi.rvalid := rdErr || m_axi.rvalid
  s_axi.rid    := Mux(rdErr, rdErrId, m_axi.rid(p.idBits - 1, 0))
  s_axi.rdata  := Mux(rdErr, 0.U, m_axi.rdata)
  s_axi.rresp  := Mux(rdErr, Axi.DECERR.U, m_axi.rresp)
  s_axi.rlast  := Mux(rdErr, rdErrLeft === 0.U, m_axi.rlast)
  m_axi.rready := s_axi.rready && !rdErr
  when(rdErr && s_axi.rready) {
    when(rdErrLeft === 0.U)(rdErr := false.B).otherwise(rdErrLeft := rdErrLeft - 1.U)
  }
  val rLastFire = m_axi.rvalid && m_axi.rready && m_axi.rlast
  rdOut := rdOut + rdAccept.asUInt - rLastFire.asUInt

  // ------------------------------------------------------------------ write path
  // internal writers (driven below)
  val mgAwValid = WireDefault(false.B)
  val mgAddr    = WireDefault(0.U(p.memAddrBits.W))
  val mgWValid  = WireDefault(false.B)
  val mgData    = WireDefault(0.U(512.W))
  val mgStrb    = WireDefault(0.U(64.W))
  val scAwValid = WireDefault(false.B)
  val scAddr    = WireDefault(0.U(p.memAddrBits.W))
  val scWValid  = WireDefault(false.B)
  val scWLast   = WireDefault(false.B)

  val awInRange = s_axi.awaddr < p.capacityBytes.U
  val nIds      = 1 << p.idBits
  val D         = p.wrPerId
  require(isPow2(D))
  val fifoPages = Reg(Vec(nIds, Vec(D, UInt(p.pageBits.W))))
  val fifoHead  = RegInit(VecInit(Seq.fill(nIds)(0.U(log2Ceil(D).W))))
  val fifoCnt   = RegInit(VecInit(Seq.fill(nIds)(0.U(log2Ceil(D + 1).W))))
  val wrOut     = RegInit(0.U(16.W))
  val decB      = RegInit(false.B)
  val decBId    = RegInit(0.U(p.idBits.W))
  val decAwId   = RegInit(0.U(p.idBits.W))

  val NONE      = 0.U(3.W); val EXT = 1.U(3.W); val DEC = 2.U(3.W); val MRG = 3.U(3.W); val SCR = 4.U(3.W)
  val owner     = RegInit(NONE)
  val awDone    = RegInit(false.B)
  val wDone     = RegInit(false.B)
  val preferInt = RegInit(false.B)
  val extOk     = s_axi.awvalid && Mux(awInRange, fifoCnt(s_axi.awid) =/= D.U, wrOut === 0.U && !decB)
  val intReq    = mgAwValid || scAwValid
  val pick = Mux(
    extOk && (!intReq || !preferInt),
    Mux(awInRange, EXT, DEC),
    Mux(mgAwValid, MRG, Mux(scAwValid, SCR, NONE))
  )
  val grant = Mux(owner === NONE, pick, owner)
  when(owner === NONE && pick =/= NONE)(preferInt := pick === EXT || pick === DEC)
  val gExt = grant === EXT
  val gDec = grant === DEC
  val gMg  = grant === MRG
  val gSc  = grant === SCR
  m_axi.awvalid := !awDone && (gExt && s_axi.awvalid || gMg && mgAwValid || gSc && scAwValid)
  m_axi.awid    := Mux(gExt, Cat(0.U(1.W), s_axi.awid), Mux(gMg, (1 << p.idBits).U, ((1 << p.idBits) | 1).U))
  m_axi.awaddr  := Mux(gExt, fit(s_axi.awaddr, p.memAddrBits), Mux(gMg, mgAddr, scAddr))
  m_axi.awlen   := Mux(gExt, s_axi.awlen, Mux(gMg, 0.U, 63.U))
  m_axi.awsize  := Mux(gExt, s_axi.awsize, 6.U)
  m_axi.awburst := Mux(gExt, s_axi.awburst, Axi.INCR.U)
  m_axi.awlock  := gExt && s_axi.awlock
  m_axi.awcache := Mux(gExt, s_axi.awcache, 0.U)
  m_axi.awprot  := Mux(gExt, s_axi.awprot, 0.U)
  m_axi.wvalid  := !wDone && (gExt && s_axi.wvalid || gMg && mgWValid || gSc && scWValid)
  m_axi.wdata   := Mux(gExt, s_axi.wdata, Mux(gMg, mgData, 0.U))
  m_axi.wstrb   := Mux(gExt, s_axi.wstrb, Mux(gMg, mgStrb, Fill(64, 1.U(1.W))))
  m_axi.wlast   := Mux(gExt, s_axi.wlast, Mux(gMg, true.B, scWLast))
  s_axi.awready := !awDone && (gExt && m_axi.awready || gDec)
  s_axi.wready  := !wDone && (gExt && m_axi.wready || gDec)
  val mgAwReady = !awDone && gMg && m_axi.awready
  val mgWReady  = !wDone && gMg && m_axi.wready
  val scAwReady = !awDone && gSc && m_axi.awready
  val scWReady  = !wDone && gSc && m_axi.wready
  val awFire    = !awDone && Mux(gDec, s_axi.awvalid, m_axi.awvalid && m_axi.awready)
  val wLastFire = !wDone && Mux(gDec, s_axi.wvalid && s_axi.wlast, m_axi.wvalid && m_axi.wready && m_axi.wlast)
  val awD       = awDone || awFire
  val wD        = wDone || wLastFire
  when(grant =/= NONE) {
    when(awD && wD) {
      owner  := NONE
      awDone := false.B
      wDone  := false.B
    }.otherwise {
      owner  := grant
      awDone := awD
      wDone  := wD
    }
  }
  when(gDec && !awDone)(decAwId := s_axi.awid)
  when(gDec && awD && wD) {
    decB   := true.B
    decBId := Mux(awDone, decAwId, s_axi.awid)
  }
  val wrAccept    = gExt && awFire
  val decWrAccept = gDec && awFire
  val awPage      = pageOf(s_axi.awaddr)

  // B: external ids have the top bit clear, internal ones set (bit 0: scrub)
  val mbExt = !m_axi.bid(p.idBits)
  s_axi.bvalid                    := decB || (m_axi.bvalid && mbExt)
  s_axi.bid                       := Mux(decB, decBId, m_axi.bid(p.idBits - 1, 0))
  s_axi.bresp                     := Mux(decB, Axi.DECERR.U, m_axi.bresp)
  m_axi.bready                    := !m_axi.bvalid || Mux(mbExt, s_axi.bready && !decB, true.B)
  when(decB && s_axi.bready)(decB := false.B)
  val extEnd      = !decB && m_axi.bvalid && mbExt && s_axi.bready
  val bIdLo       = m_axi.bid(p.idBits - 1, 0)
  val extEndPage  = fifoPages(bIdLo)(fifoHead(bIdLo))
  val intEnd      = m_axi.bvalid && !mbExt
  val intEndScrub = m_axi.bid(0)
  val intEndPage  = Wire(UInt(p.pageBits.W))
  for (i <- 0 until nIds) {
    val push = wrAccept && s_axi.awid === i.U
    val pop  = extEnd && bIdLo === i.U
    when(push)(fifoPages(i)((fifoHead(i) + fifoCnt(i))(log2Ceil(D) - 1, 0)) := awPage)
    fifoHead(i)                                                             := fifoHead(i) + pop.asUInt
    fifoCnt(i)                                                              := fifoCnt(i) + push.asUInt - pop.asUInt
  }
  wrOut := wrOut + wrAccept.asUInt - extEnd.asUInt

  when(rdAccept)(statReads  := statReads + 1.U)
  when(wrAccept)(statWrites := statWrites + 1.U)
  statDecerr                := sat32(statDecerr +& (arFire && !arInRange).asUInt +& decWrAccept.asUInt)

  // ------------------------------------------------------------------ tables
  // Every per-page table is a TrackTable (RAM banks + live-value table): a request enters in the cycle of its
  // handshake and takes effect two cycles later, in port order within its cycle. The port order keeps v1's
  // same-cycle order (docs/rtl-notes.md): a harvest step before the sets/increments of its cycle; write
  // invalidations before a BAT command of the same cycle.
  import TableOp._
  val dirtyT = Module(new TrackTable(W, 1, 2))         // 0 harvest, 1 write end
  val accT   = Module(new TrackTable(W, 1, 3))         // 0 harvest, 1 read accept, 2 write accept
  val hotT   = Module(new TrackTable(W, p.hotBits, 3)) // 0 harvest, 1 read accept, 2 write accept
  val batT   = Module(new TrackTable(W, 1, 3))         // 0 write accept, 1 write end, 2 BAT command
  val batMem = SyncReadMem(p.pages.toInt, UInt((p.batDiskBits + p.batBlockBits).W))
  def drive(t: TrackTable, port: Int, v: Bool, pg: UInt, op: UInt): Unit = {
    t.io.req(port).valid     := v
    t.io.req(port).bits.word := wordOf(pg)
    t.io.req(port).bits.lane := bitOf(pg)
    t.io.req(port).bits.op   := op
  }

  // harvest step (command engine): issued in the step's cycle, answered two cycles later on port 0
  val hvStep = WireDefault(false.B)
  val hvWord = WireDefault(0.U(wordBits.W))
  val hvKind = WireDefault(0.U(2.W)) // Op low bits: 1 dirty, 2 accessed, 3 hotness
  val hvOp   = WireDefault(READ.U(TableOp.Bits.W))
  val hvPg   = Cat(hvWord, 0.U(6.W))
  drive(dirtyT, 0, hvStep && hvKind === 1.U, hvPg, hvOp)
  drive(accT, 0, hvStep && hvKind === 2.U, hvPg, hvOp)
  drive(hotT, 0, hvStep && hvKind === 3.U, hvPg, hvOp)
  val hvRespValid = dirtyT.io.resp(0).valid || accT.io.resp(0).valid || hotT.io.resp(0).valid
  val hvBits      = Mux(dirtyT.io.resp(0).valid, dirtyT.io.resp(0).bits, accT.io.resp(0).bits)
  val hvHot       = VecInit(Seq.tabulate(64)(j => hotT.io.resp(0).bits((j + 1) * p.hotBits - 1, j * p.hotBits)))

  val rdT   = rdAccept && trackEn
  val wrT   = wrAccept && trackEn
  val wEnd  = extEnd || intEnd // one B per cycle on the memory side
  val endPg = Mux(extEnd, extEndPage, intEndPage)
  drive(dirtyT, 1, wEnd && trackEn, endPg, SET.U)
  drive(accT, 1, rdT, rdPage, SET.U)
  drive(accT, 2, wrT, awPage, SET.U)
  drive(hotT, 1, rdT, rdPage, INC.U)
  drive(hotT, 2, wrT, awPage, INC.U)

  // association: invalidated at write begin and write end (internal writes included), whatever TRACK_EN says
  drive(batT, 0, wrAccept, awPage, CLEAR.U)
  drive(batT, 1, wEnd, endPg, CLEAR.U)
  val batCmd  = WireDefault(false.B)
  val batOp   = WireDefault(READ.U(TableOp.Bits.W))
  val batPage = WireDefault(0.U(p.pageBits.W))
  val batData = WireDefault(0.U((p.batDiskBits + p.batBlockBits).W))
  drive(batT, 2, batCmd, batPage, batOp)
  val batEvtEnAt                = ShiftRegister(batEvtEn, 2) // CTRL as it was in the request's cycle
  def pageAt(r: TableReq): UInt = fit(Cat(r.word, r.lane), p.pageBits)
  val cleared = (0 until 2).map(k => batT.io.resp(k).valid && batT.io.resp(k).bits(batT.io.done(k).lane))
  for (k <- 0 until 2)
    event(EV_INV + k, cleared(k) && batEvtEnAt, Regs.Event.BAT_INVALIDATED, 0.U, pageAt(batT.io.done(k)))
  statBatInv := sat32(statBatInv +& PopCount(cleared))
  val batValidNow = batT.io.resp(2).bits(batT.io.done(2).lane)
  val batRd       = batMem.read(batPage, batCmd && batOp =/= SET.U)
  when(batCmd && batOp === SET.U)(batMem.write(batPage, batData))
  val tablesBusy = dirtyT.io.busy || accT.io.busy || hotT.io.busy || batT.io.busy

  // ------------------------------------------------------------------ slots
  val FREE        = Regs.SlotState.FREE.U(2.W)
  val OPEN        = Regs.SlotState.OPEN.U(2.W)
  val MERGING     = Regs.SlotState.MERGING.U(2.W)
  val slotState   = RegInit(VecInit(Seq.fill(S)(FREE)))
  val slotTag     = RegInit(VecInit(Seq.fill(S)(0.U(64.W))))
  val slotCount   = RegInit(VecInit(Seq.fill(S)(0.U(13.W))))
  val slotLines   = RegInit(VecInit(Seq.fill(S)(0.U(64.W)))) // line holds data written since SLOT_ALLOC
  val slotAge     = RegInit(VecInit(Seq.fill(S)(0.U(32.W))))
  val slotFullRep = RegInit(VecInit(Seq.fill(S)(false.B)))
  val slotToRep   = RegInit(VecInit(Seq.fill(S)(false.B)))
  // one memory for every slot: 64 lines of 64 x (valid bit, byte)
  val slotMem        = SyncReadMem(S * 64, Vec(64, UInt(9.W)))
  val liteSlotRd     = WireDefault(false.B)
  val liteSlotAddr   = WireDefault(0.U(log2Ceil(S * 64).W))
  val engSlotRd      = WireDefault(false.B)
  val engSlotAddr    = WireDefault(0.U(log2Ceil(S * 64).W))
  val slotRdData     = slotMem.read(Mux(liteSlotRd, liteSlotAddr, engSlotAddr), liteSlotRd || engSlotRd)
  val engSlotGranted = engSlotRd && !liteSlotRd
  def lineAddr(slot: UInt, line: UInt): UInt = fit(slot * 64.U + line(5, 0), log2Ceil(S * 64))

  for (i <- 0 until S) {
    val ageNext = sat32(slotAge(i) +& 1.U)
    val open    = slotState(i) === OPEN
    when(tick && open)(slotAge(i) := ageNext)
    val fire = tick && open && slotCount(i) =/= 4096.U && !slotToRep(i) && slotTimeout =/= 0.U &&
      ageNext >= slotTimeout
    when(fire)(slotToRep(i) := true.B)
    event(EV_TO + i, fire, Regs.Event.SLOT_TIMEOUT, i.U, slotTag(i))
  }

  // ------------------------------------------------------------------ chunks + scrub
  val OWNED     = Regs.ChunkState.OWNED.U(2.W)
  val SCRUBBING = Regs.ChunkState.SCRUBBING.U(2.W)
  val chState   = RegInit(VecInit(Seq.fill(C)(Regs.ChunkState.FREE.U(2.W))))
  val chOwner   = RegInit(VecInit(Seq.fill(C)(0.U(16.W))))
  // released chunks are zero-filled in release order by the scrub engine; the owner table and SCRUB_DONE stay here
  val scrub = Module(new ScrubEngine(C, p.chunkShift, p.pageShift, p.pageBits, p.memAddrBits))
  scrub.io.enq.valid := false.B
  scrub.io.enq.bits  := 0.U
  scAwValid          := scrub.io.aw.valid
  scAddr             := scrub.io.aw.bits.addr
  scWValid           := scrub.io.w.valid
  scWLast            := scrub.io.w.bits.last
  scrub.io.aw.ready  := scAwReady
  scrub.io.w.ready   := scWReady
  scrub.io.bDone     := intEnd && intEndScrub
  val scEndPage = scrub.io.endPage
  val scFinish  = scrub.io.finish.valid
  val scChunk   = scrub.io.finish.bits
  event(EV_SCRUB, scFinish, Regs.Event.SCRUB_DONE, scChunk, chOwner(scChunk))
  when(scFinish) {
    chState(scChunk) := Regs.ChunkState.FREE.U
    chOwner(scChunk) := 0.U
  }

  // ------------------------------------------------------------------ RESULT window
  val resMem  = SyncReadMem(64, Vec(64, UInt(8.W)))
  val resWr   = WireDefault(false.B)
  val resLine = WireDefault(0.U(6.W))
  val resData = WireDefault(VecInit(Seq.fill(64)(0.U(8.W))))
  val resMask = WireDefault(VecInit(Seq.fill(64)(false.B)))
  when(resWr)(resMem.write(resLine, resData, resMask))
  def bytes64(v: UInt): Vec[UInt]   = VecInit(Seq.tabulate(64)(b => v((b % 8) * 8 + 7, (b % 8) * 8)))
  def maskSub(sub: UInt): Vec[Bool] = VecInit(Seq.tabulate(64)(b => (b / 8).U === sub))

  // ------------------------------------------------------------------ command engine
  val st         = RegInit(St.sInit)
  val initLine   = RegInit(0.U(7.W))
  val cOp        = RegInit(0.U(8.W))
  val cClear     = RegInit(false.B)
  val cDecay     = RegInit(false.B)
  val cRsvd      = RegInit(0.U(22.W))
  val a0         = RegInit(0.U(64.W))
  val a1         = RegInit(0.U(64.W))
  val a2         = RegInit(0.U(64.W))
  val hvCur      = RegInit(0.U((wordBits + 1).W))
  val hvEnd      = RegInit(0.U((wordBits + 1).W))
  val idx        = RegInit(0.U(10.W))
  val total      = RegInit(0.U(16.W))
  val hvN        = RegInit(0.U(10.W)) // words to harvest
  val batPayload = RegInit(0.U((p.batDiskBits + p.batBlockBits).W))
  val mSlot      = RegInit(0.U(p.slotBits.W))
  val mPage      = RegInit(0.U(p.pageBits.W))
  val mLine      = RegInit(0.U(6.W))
  val mValid     = RegInit(0.U(13.W))
  val mData      = RegInit(0.U(512.W))
  val mStrb      = RegInit(0.U(64.W))
  val mAwDone    = RegInit(false.B)
  val mWDone     = RegInit(false.B)
  val mOut       = RegInit(0.U(8.W))
  val qR0        = RegInit(0.U(64.W))
  val qR1        = RegInit(0.U(64.W))

  // MERGE_DONE follows the events of the merge's last write end (the tables emit them two cycles after it)
  val mgEnd       = intEnd && !intEndScrub
  val mgEndRecent = ShiftRegister(mgEnd, 1) || ShiftRegister(mgEnd, 2)
  val mergeDone   = st === St.sMergeDrain && mOut === 0.U && !mgEndRecent

  val launch    = WireDefault(false.B)
  val launchVal = WireDefault(0.U(32.W))

  def complete(code: Int, r0: UInt, r1: UInt): Unit = {
    busy       := false.B
    cmdCode    := code.U
    res0       := r0
    res1       := r1
    cmdDoneSet := true.B
    st         := St.sIdle
  }

  when(launch) {
    cmdOpReg := launchVal
    cOp      := launchVal(Regs.CMD_OP.OP_LSB + Regs.CMD_OP.OP_WIDTH - 1, Regs.CMD_OP.OP_LSB)
    cClear   := launchVal(Regs.CMD_OP.CLEAR_LSB)
    cDecay   := launchVal(Regs.CMD_OP.DECAY_LSB)
    cRsvd    := launchVal(Regs.CMD_OP.RSVD_LSB + Regs.CMD_OP.RSVD_WIDTH - 1, Regs.CMD_OP.RSVD_LSB)
    a0       := cmdArg(0)
    a1       := cmdArg(1)
    a2       := cmdArg(2)
    busy     := true.B
    cmdSeq   := cmdSeq + 1.U
    res0     := 0.U
    res1     := 0.U
    st       := St.sCheck
  }

  val O  = Regs.Op
  val ST = Regs.Status
  val known = Seq(
    O.NOP,
    O.HARVEST_DIRTY,
    O.HARVEST_ACCESSED,
    O.HARVEST_HOTNESS,
    O.BAT_SET,
    O.BAT_GET,
    O.BAT_CLEAR,
    O.BAT_DISCARD,
    O.SLOT_ALLOC,
    O.SLOT_MERGE,
    O.SLOT_RELEASE,
    O.SLOT_QUERY,
    O.CHUNK_ASSIGN,
    O.CHUNK_RELEASE,
    O.CHUNK_QUERY,
    O.CHUNK_LIST
  ).map(o => cOp === o.U).reduce(_ || _)
  val isHarvest = cOp === O.HARVEST_DIRTY.U || cOp === O.HARVEST_ACCESSED.U || cOp === O.HARVEST_HOTNESS.U
  val flagsBad = cRsvd =/= 0.U || ((cClear || cDecay) && !isHarvest) ||
    (cDecay && (cOp =/= O.HARVEST_HOTNESS.U || cClear))
  val alignBad  = a0(5, 0) =/= 0.U || a1(5, 0) =/= 0.U
  val hLimit    = Mux(cOp === O.HARVEST_HOTNESS.U, 4096.U, 32768.U)
  val hRangeBad = a1 === 0.U || a1 > hLimit || (a0 +& a1) > p.pages.U
  val page0Bad  = a0 >= p.pages.U
  val page1Bad  = a1 >= p.pages.U
  val slotBad   = a0 >= S.U
  val chunkBad  = a0 >= C.U || a1 === 0.U || a1 > 0xffff.U
  val slotIx    = a0(p.slotBits - 1, 0)
  val chIx      = a0(p.chunkBits - 1, 0)
  val freeSlots = VecInit(slotState.map(_ === FREE)).asUInt

  switch(st) {
    is(St.sInit) {
      // RESULT reads as zero after reset
      resWr                      := true.B
      resLine                    := initLine(5, 0)
      resMask                    := VecInit(Seq.fill(64)(true.B))
      initLine                   := initLine + 1.U
      when(initLine === 63.U)(st := St.sIdle)
    }
    is(St.sCheck) {
      when(!known) {
        complete(ST.UNKNOWN_OP, 0.U, 0.U)
      }.elsewhen(flagsBad) {
        complete(ST.FLAGS, 0.U, 0.U)
      }.elsewhen(cOp === O.NOP.U) {
        complete(ST.OK, 0.U, 0.U)
      }.elsewhen(isHarvest) {
        when(alignBad) {
          complete(ST.ALIGN, 0.U, 0.U)
        }.elsewhen(hRangeBad) {
          complete(ST.RANGE, 0.U, 0.U)
        }.otherwise {
          hvCur := fit(a0 >> 6, wordBits + 1)
          hvEnd := fit((a0 + a1) >> 6, wordBits + 1)
          hvN   := fit(a1 >> 6, 10)
          idx   := 0.U
          total := 0.U
          st    := St.sHarvest
        }
      }.elsewhen(cOp === O.BAT_SET.U) {
        when(page0Bad || (a1 >> p.batBlockBits) =/= 0.U || (a2 >> p.batDiskBits) =/= 0.U) {
          complete(ST.RANGE, 0.U, 0.U)
        }.otherwise {
          batCmd  := true.B
          batOp   := SET.U
          batPage := a0(p.pageBits - 1, 0)
          batData := Cat(a2(p.batDiskBits - 1, 0), a1(p.batBlockBits - 1, 0))
          complete(ST.OK, 0.U, 0.U)
        }
      }.elsewhen(cOp === O.BAT_GET.U || cOp === O.BAT_DISCARD.U || cOp === O.BAT_CLEAR.U) {
        when(page0Bad) {
          complete(ST.RANGE, 0.U, 0.U)
        }.elsewhen(cOp === O.BAT_CLEAR.U) {
          batCmd  := true.B
          batOp   := CLEAR.U
          batPage := a0(p.pageBits - 1, 0)
          complete(ST.OK, 0.U, 0.U)
        }.otherwise {
          batCmd  := true.B
          batOp   := Mux(cOp === O.BAT_GET.U, READ.U, CLEAR.U)
          batPage := a0(p.pageBits - 1, 0)
          st      := St.sBatRd
        }
      }.elsewhen(cOp === O.SLOT_ALLOC.U) {
        when(freeSlots === 0.U) {
          complete(ST.NO_RESOURCE, 0.U, 0.U)
        }.otherwise {
          val i = PriorityEncoder(freeSlots)
          slotState(i)   := OPEN
          slotTag(i)     := a0
          slotCount(i)   := 0.U
          slotLines(i)   := 0.U
          slotAge(i)     := 0.U
          slotFullRep(i) := false.B
          slotToRep(i)   := false.B
          complete(ST.OK, i, 0.U)
        }
      }.elsewhen(cOp === O.SLOT_MERGE.U) {
        when(slotBad || page1Bad) {
          complete(ST.RANGE, 0.U, 0.U)
        }.elsewhen(slotState(slotIx) =/= OPEN) {
          complete(ST.STATE, 0.U, 0.U)
        }.otherwise {
          slotState(slotIx) := MERGING
          mSlot             := slotIx
          mPage             := a1(p.pageBits - 1, 0)
          mLine             := 0.U
          mValid            := slotCount(slotIx)
          mOut              := 0.U
          st                := St.sMergeRd
        }
      }.elsewhen(cOp === O.SLOT_RELEASE.U) {
        when(slotBad) {
          complete(ST.RANGE, 0.U, 0.U)
        }.elsewhen(slotState(slotIx) =/= OPEN) {
          complete(ST.STATE, 0.U, 0.U)
        }.otherwise {
          slotState(slotIx) := FREE
          slotLines(slotIx) := 0.U
          slotCount(slotIx) := 0.U
          complete(ST.OK, 0.U, 0.U)
        }
      }.elsewhen(cOp === O.SLOT_QUERY.U) {
        when(slotBad) {
          complete(ST.RANGE, 0.U, 0.U)
        }.otherwise {
          val L = Regs.LAYOUT_SLOT_QUERY_RESULT0
          qR0 := (slotState(slotIx) << L.STATE_LSB) | ((slotCount(slotIx) === 4096.U).asUInt << L.FULL_LSB) |
            (slotCount(slotIx) << L.VALID_BYTES_LSB)
          qR1   := slotTag(slotIx)
          mSlot := slotIx
          mLine := 0.U
          st    := St.sQueryRd
        }
      }.elsewhen(cOp === O.CHUNK_ASSIGN.U || cOp === O.CHUNK_RELEASE.U) {
        when(chunkBad) {
          complete(ST.RANGE, 0.U, 0.U)
        }.elsewhen(cOp === O.CHUNK_ASSIGN.U) {
          when(chState(chIx) =/= Regs.ChunkState.FREE.U) {
            complete(ST.BUSY, 0.U, 0.U)
          }.otherwise {
            chState(chIx) := OWNED
            chOwner(chIx) := a1(15, 0)
            complete(ST.OK, 0.U, 0.U)
          }
        }.otherwise {
          when(chState(chIx) =/= OWNED) {
            complete(ST.STATE, 0.U, 0.U)
          }.elsewhen(chOwner(chIx) =/= a1) {
            complete(ST.PERM, 0.U, 0.U)
          }.otherwise {
            chState(chIx)      := SCRUBBING
            scrub.io.enq.valid := true.B
            scrub.io.enq.bits  := chIx
            complete(ST.OK, 0.U, 0.U)
          }
        }
      }.elsewhen(cOp === O.CHUNK_QUERY.U) {
        when(a0 >= C.U) {
          complete(ST.RANGE, 0.U, 0.U)
        }.otherwise {
          complete(ST.OK, chState(chIx), chOwner(chIx))
        }
      }.otherwise { // CHUNK_LIST
        when(a1 > 0xffff.U) {
          complete(ST.RANGE, 0.U, 0.U)
        }.otherwise {
          idx   := 0.U
          total := 0.U
          st    := St.sList
        }
      }
    }
    is(St.sHarvest) { // one step per cycle; each answer arrives two cycles after its step
      hvStep                      := hvCur =/= hvEnd
      hvWord                      := hvCur(wordBits - 1, 0)
      hvKind                      := cOp(1, 0)
      hvOp                        := Mux(cClear, ZERO.U, Mux(cDecay, HALVE.U, READ.U))
      when(hvCur =/= hvEnd)(hvCur := hvCur + 1.U)
    }
  }
  when(st === St.sHarvest && hvRespValid) {
    resWr := true.B
    val n = Wire(UInt(16.W))
    when(cOp === O.HARVEST_HOTNESS.U) {
      resLine := idx(5, 0)
      resData := VecInit(hvHot.map(_.pad(8)))
      resMask := VecInit(Seq.fill(64)(true.B))
      n       := PopCount(hvHot.map(_ =/= 0.U))
    }.otherwise {
      resLine := idx(8, 3)
      resData := bytes64(hvBits)
      resMask := maskSub(idx(2, 0))
      n       := PopCount(hvBits)
    }
    val t = total + n
    total := t
    idx   := idx + 1.U
    when(idx + 1.U === hvN)(complete(ST.OK, t, 0.U))
  }
  switch(st) {
    is(St.sBatRd) { // payload from the RAM; the valid bit comes from the table a cycle later
      batPayload := batRd
      st         := St.sBatWait
    }
    is(St.sBatWait) {
      val blk  = batPayload(p.batBlockBits - 1, 0)
      val disk = batPayload >> p.batBlockBits
      val L    = Regs.LAYOUT_BAT_RESULT1
      when(batT.io.resp(2).valid) {
        complete(
          ST.OK,
          Mux(batValidNow, blk, 0.U),
          Mux(batValidNow, (disk << L.DISK_LSB) | (1.U << L.VALID_LSB), 0.U)
        )
      }
    }
    is(St.sMergeRd) {
      when(!slotLines(mSlot)(mLine)) {
        mLine                   := mLine + 1.U
        when(mLine === 63.U)(st := St.sMergeDrain)
      }.otherwise {
        engSlotRd               := true.B
        engSlotAddr             := lineAddr(mSlot, mLine)
        when(engSlotGranted)(st := St.sMergeWait)
      }
    }
    is(St.sMergeWait) {
      val strb = VecInit(slotRdData.map(_(8))).asUInt
      mData   := VecInit(slotRdData.map(_(7, 0))).asUInt
      mStrb   := strb
      mAwDone := false.B
      mWDone  := false.B
      when(strb =/= 0.U) {
        st := St.sMergeWr
      }.otherwise {
        mLine := mLine + 1.U
        st    := Mux(mLine === 63.U, St.sMergeDrain, St.sMergeRd)
      }
    }
    is(St.sMergeWr) {
      mgAwValid := !mAwDone
      mgWValid  := !mWDone
      mgAddr    := fit((mPage << p.pageShift) + (mLine << 6), p.memAddrBits)
      mgData    := mData
      mgStrb    := mStrb
      val a = mAwDone || mgAwReady
      val w = mWDone || mgWReady
      mAwDone := a
      mWDone  := w
      when(a && w) {
        mLine := mLine + 1.U
        st    := Mux(mLine === 63.U, St.sMergeDrain, St.sMergeRd)
      }
    }
    is(St.sMergeDrain) {
      when(mergeDone) {
        slotState(mSlot) := FREE
        slotLines(mSlot) := 0.U
        slotCount(mSlot) := 0.U
        complete(ST.OK, mValid, 0.U)
      }
    }
    is(St.sQueryRd) {
      when(!slotLines(mSlot)(mLine)) {
        resWr   := true.B
        resLine := mLine >> 3
        resData := bytes64(0.U(64.W))
        resMask := maskSub(mLine(2, 0))
        mLine   := mLine + 1.U
        when(mLine === 63.U)(complete(ST.OK, qR0, qR1))
      }.otherwise {
        engSlotRd               := true.B
        engSlotAddr             := lineAddr(mSlot, mLine)
        when(engSlotGranted)(st := St.sQueryWait)
      }
    }
    is(St.sQueryWait) {
      resWr   := true.B
      resLine := mLine >> 3
      resData := bytes64(VecInit(slotRdData.map(_(8))).asUInt)
      resMask := maskSub(mLine(2, 0))
      mLine   := mLine + 1.U
      st      := St.sQueryRd
      when(mLine === 63.U)(complete(ST.OK, qR0, qR1))
    }
    is(St.sList) {
      val groups = (C + 63) / 64
      val nbytes = (C + 7) / 8
      val bitsPerGroup = VecInit(Seq.tabulate(groups) { g =>
        VecInit(Seq.tabulate(64) { j =>
          val c = g * 64 + j
          if (c < C) Mux(a1 === 0.U, chState(c) === Regs.ChunkState.FREE.U, chState(c) === OWNED && chOwner(c) === a1)
          else false.B
        }).asUInt
      })
      val bits = if (groups == 1) bitsPerGroup(0) else bitsPerGroup(idx(log2Ceil(groups) - 1, 0))
      resWr   := true.B
      resLine := idx(8, 3)
      resData := bytes64(bits)
      resMask := VecInit(Seq.tabulate(64)(b => (b / 8).U === idx(2, 0) && (idx * 8.U + (b % 8).U) < nbytes.U))
      val t = total + PopCount(bits)
      total := t
      idx   := idx + 1.U
      when(idx === (groups - 1).U)(complete(ST.OK, t, 0.U))
    }
  }
  when(mgAwReady)(mOut := mOut + 1.U - (intEnd && !intEndScrub).asUInt).otherwise {
    mOut := mOut - (intEnd && !intEndScrub).asUInt
  }
  intEndPage := Mux(intEndScrub, scEndPage, mPage)
  event(EV_MERGE, mergeDone, Regs.Event.MERGE_DONE, mSlot, mPage)

  // ------------------------------------------------------------------ register port
  val lStage = RegInit(0.U(2.W)) // 0 idle, 1 decode + memory read, 2 execute + respond
  val lWr    = RegInit(false.B)
  val lAddr  = RegInit(0.U(p.liteAddrBits.W))
  val lData  = RegInit(0.U(32.W))
  val lStrb  = RegInit(0.U(4.W))
  val bValid = RegInit(false.B)
  val rValid = RegInit(false.B)
  val rData  = RegInit(0.U(32.W))
  s_axil.bvalid                        := bValid
  s_axil.bresp                         := Axi.OKAY.U
  s_axil.rvalid                        := rValid
  s_axil.rresp                         := Axi.OKAY.U
  s_axil.rdata                         := rData
  when(bValid && s_axil.bready)(bValid := false.B)
  when(rValid && s_axil.rready)(rValid := false.B)
  val canTake = lStage === 0.U && !bValid && !rValid && st =/= St.sInit
  val takeW   = canTake && s_axil.awvalid && s_axil.wvalid
  val takeR   = canTake && !takeW && s_axil.arvalid
  s_axil.awready := takeW
  s_axil.wready  := takeW
  s_axil.arready := takeR
  when(takeW) {
    lStage := 1.U
    lWr    := true.B
    lAddr  := s_axil.awaddr
    lData  := s_axil.wdata
    lStrb  := s_axil.wstrb
  }
  when(takeR) {
    lStage := 1.U
    lWr    := false.B
    lAddr  := s_axil.araddr
  }
  val inSlotWin    = lAddr >= Regs.SLOT.OFFSET.U
  val lSlot        = lAddr(15, 12)
  val lSlotOk      = lSlot < S.U
  val lSlotIx      = lSlot(p.slotBits - 1, 0)
  val lLine        = lAddr(11, 6)
  val lWordInLine  = lAddr(5, 2)
  val inResult     = lAddr >= Regs.RESULT.OFFSET.U && lAddr < (Regs.RESULT.OFFSET + Regs.RESULT.SIZE).U
  val lAligned     = lAddr(1, 0) === 0.U
  val queryRunning = st === St.sQueryRd || st === St.sQueryWait
  val resRd        = resMem.read(lAddr(11, 6), lStage === 1.U)
  when(lStage === 1.U && !(lWr && inSlotWin && queryRunning)) {
    liteSlotRd   := inSlotWin && lSlotOk
    liteSlotAddr := lineAddr(lSlotIx, lLine)
    lStage       := 2.U
  }

  def setErr(bit: Int): Unit = {
    errReq := true.B
    errBit := bit.U
  }
  val E = Regs.ERR_STATUS
  val R = Regs
  errOff := lAddr
  // register file view
  val evHead       = evq.io.head
  val intStatusVal = intSticky | evq.io.count.orR.asUInt
  val regRead: Seq[(Int, UInt)] = Seq(
    R.ID.OFFSET           -> R.ID.RESET.U(32.W),
    R.VERSION.OFFSET      -> R.VERSION.RESET.U(32.W),
    R.CAP_PAGES_LO.OFFSET -> (p.pages & 0xffffffffL).U(32.W),
    R.CAP_PAGES_HI.OFFSET -> (p.pages >> 32).U(32.W),
    R.CAP_GEOM.OFFSET -> ((BigInt(p.pageShift) << R.CAP_GEOM.PAGE_SHIFT_LSB) | (BigInt(S) << R.CAP_GEOM.NUM_SLOTS_LSB) |
      (BigInt(p.hotBits) << R.CAP_GEOM.HOT_BITS_LSB) | (BigInt(p.evqDepthLog2) << R.CAP_GEOM.EVQ_DEPTH_LOG2_LSB))
      .U(32.W),
    R.CAP_CHUNK.OFFSET -> ((BigInt(p.chunkShift) << R.CAP_CHUNK.CHUNK_SHIFT_LSB) |
      (BigInt(C) << R.CAP_CHUNK.NUM_CHUNKS_LSB)).U(32.W),
    R.CAP_BAT.OFFSET -> ((BigInt(p.batDiskBits) << R.CAP_BAT.DISK_BITS_LSB) |
      (BigInt(p.batBlockBits) << R.CAP_BAT.BLOCK_BITS_LSB)).U(32.W),
    R.CAP_TICK.OFFSET     -> p.tickNs.U(32.W),
    R.CTRL.OFFSET         -> ctrl,
    R.SLOT_TIMEOUT.OFFSET -> slotTimeout,
    R.INT_STATUS.OFFSET   -> intStatusVal,
    R.INT_ENABLE.OFFSET   -> intEnable,
    R.ERR_STATUS.OFFSET   -> errStatus,
    R.ERR_ADDR.OFFSET     -> errAddr,
    R.ERR_COUNT.OFFSET    -> errCount,
    R.CMD_ARG0_LO.OFFSET  -> cmdArg(0)(31, 0),
    R.CMD_ARG0_HI.OFFSET  -> cmdArg(0)(63, 32),
    R.CMD_ARG1_LO.OFFSET  -> cmdArg(1)(31, 0),
    R.CMD_ARG1_HI.OFFSET  -> cmdArg(1)(63, 32),
    R.CMD_ARG2_LO.OFFSET  -> cmdArg(2)(31, 0),
    R.CMD_ARG2_HI.OFFSET  -> cmdArg(2)(63, 32),
    R.CMD_OP.OFFSET       -> cmdOpReg,
    R.CMD_STATUS.OFFSET -> ((cmdSeq << R.CMD_STATUS.SEQ_LSB) | (cmdCode << R.CMD_STATUS.CODE_LSB) |
      (busy.asUInt << R.CMD_STATUS.BUSY_LSB)),
    R.CMD_RESULT0_LO.OFFSET -> res0(31, 0),
    R.CMD_RESULT0_HI.OFFSET -> res0(63, 32),
    R.CMD_RESULT1_LO.OFFSET -> res1(31, 0),
    R.CMD_RESULT1_HI.OFFSET -> res1(63, 32),
    R.EVQ_COUNT.OFFSET      -> evq.io.count,
    R.EVQ_DROPPED.OFFSET    -> evq.io.dropped,
    R.EVT_HEAD0.OFFSET      -> ((evHead.index << R.EVT_HEAD0.INDEX_LSB) | (evHead.typ << R.EVT_HEAD0.TYPE_LSB)),
    R.EVT_HEAD1.OFFSET      -> evq.io.headSeq,
    R.EVT_ARG_LO.OFFSET     -> evHead.arg(31, 0),
    R.EVT_ARG_HI.OFFSET     -> evHead.arg(63, 32),
    R.STAT_READS_LO.OFFSET  -> statReads(31, 0),
    R.STAT_READS_HI.OFFSET  -> statReads(63, 32),
    R.STAT_WRITES_LO.OFFSET -> statWrites(31, 0),
    R.STAT_WRITES_HI.OFFSET -> statWrites(63, 32),
    R.STAT_DECERR.OFFSET    -> statDecerr,
    R.STAT_BAT_INV.OFFSET   -> statBatInv
  )
  // registers software may write (RDL fields with sw = rw / w); every other one is read-only
  val writable = Seq(
    R.CTRL.OFFSET,
    R.SLOT_TIMEOUT.OFFSET,
    R.INT_STATUS.OFFSET,
    R.INT_ENABLE.OFFSET,
    R.ERR_STATUS.OFFSET,
    R.CMD_ARG0_LO.OFFSET,
    R.CMD_ARG0_HI.OFFSET,
    R.CMD_ARG1_LO.OFFSET,
    R.CMD_ARG1_HI.OFFSET,
    R.CMD_ARG2_LO.OFFSET,
    R.CMD_ARG2_HI.OFFSET,
    R.CMD_OP.OFFSET,
    R.EVQ_POP.OFFSET
  )
  val regHit   = regRead.map { case (o, _) => lAddr === o.U }.reduce(_ || _)
  val regVal   = Mux1H(regRead.map { case (o, v) => (lAddr === o.U) -> v.pad(32) })
  val wrHit    = writable.map(o => lAddr === o.U).reduce(_ || _)
  val intWrite = WireDefault(false.B)

  val slotLineValid = slotLines(lSlotIx)(lLine)
  val w4            = (0 until 4).map(k => slotRdData(Cat(lWordInLine, k.U(2.W))))
  when(lStage === 2.U) {
    lStage := 0.U
    when(lWr) {
      bValid := true.B
      when(inSlotWin) {
        when(!lSlotOk) {
          setErr(E.BAD_REG_LSB)
        }.elsewhen(slotState(lSlotIx) =/= OPEN) {
          setErr(E.SLOT_WRITE_LSB)
        }.otherwise {
          val oldValid = VecInit(w4.map(b => b(8) && slotLineValid)).asUInt
          val newly    = lStrb & ~oldValid
          val data     = Wire(Vec(64, UInt(9.W)))
          val mask     = Wire(Vec(64, Bool()))
          for (b <- 0 until 64) {
            val inWord = lWordInLine === (b / 4).U
            val s      = inWord && lStrb(b % 4)
            data(b) := Mux(s, Cat(1.U(1.W), lData((b % 4) * 8 + 7, (b % 4) * 8)), 0.U)
            mask(b) := s || !slotLineValid
          }
          slotMem.write(lineAddr(lSlotIx, lLine), data, mask)
          slotLines(lSlotIx) := slotLines(lSlotIx) | UIntToOH(lLine, 64)
          val cnt = slotCount(lSlotIx) + PopCount(newly)
          slotCount(lSlotIx) := cnt
          val full = cnt === 4096.U && !slotFullRep(lSlotIx)
          when(full)(slotFullRep(lSlotIx) := true.B)
          event(EV_FULL, full, Regs.Event.SLOT_FULL, lSlotIx, slotTag(lSlotIx))
        }
      }.elsewhen(inResult) {
        setErr(E.BAD_REG_LSB)
      }.elsewhen(!lAligned || lStrb =/= 15.U) {
        setErr(E.BAD_WIDTH_LSB)
      }.elsewhen(!wrHit) {
        setErr(E.BAD_REG_LSB)
      }.otherwise {
        switch(lAddr) {
          is(R.CTRL.OFFSET.U)(ctrl                := lData(1, 0))
          is(R.SLOT_TIMEOUT.OFFSET.U)(slotTimeout := lData)
          is(R.INT_STATUS.OFFSET.U) {
            intW1c   := lData(2, 0) & "b110".U
            intWrite := true.B
          }
          is(R.INT_ENABLE.OFFSET.U) {
            intEnable := lData(2, 0)
            intWrite  := true.B
          }
          is(R.ERR_STATUS.OFFSET.U)(errW1c     := lData(4, 0))
          is(R.CMD_ARG0_LO.OFFSET.U)(cmdArg(0) := Cat(cmdArg(0)(63, 32), lData))
          is(R.CMD_ARG0_HI.OFFSET.U)(cmdArg(0) := Cat(lData, cmdArg(0)(31, 0)))
          is(R.CMD_ARG1_LO.OFFSET.U)(cmdArg(1) := Cat(cmdArg(1)(63, 32), lData))
          is(R.CMD_ARG1_HI.OFFSET.U)(cmdArg(1) := Cat(lData, cmdArg(1)(31, 0)))
          is(R.CMD_ARG2_LO.OFFSET.U)(cmdArg(2) := Cat(cmdArg(2)(63, 32), lData))
          is(R.CMD_ARG2_HI.OFFSET.U)(cmdArg(2) := Cat(lData, cmdArg(2)(31, 0)))
          is(R.CMD_OP.OFFSET.U) {
            when(busy) {
              setErr(E.CMD_OVERRUN_LSB)
            }.otherwise {
              launch    := true.B
              launchVal := lData
            }
          }
          is(R.EVQ_POP.OFFSET.U)(evq.io.pop := lData(0))
        }
      }
    }.otherwise {
      rValid := true.B
      rData  := 0.U
      when(inSlotWin) {
        when(!lSlotOk) {
          setErr(E.BAD_REG_LSB)
        }.elsewhen(!lAligned) {
          setErr(E.BAD_WIDTH_LSB)
        }.otherwise {
          rData := Cat(w4.reverse.map(b => Mux(b(8) && slotLineValid, b(7, 0), 0.U(8.W))))
        }
      }.elsewhen(inResult) {
        when(!lAligned) {
          setErr(E.BAD_WIDTH_LSB)
        }.otherwise {
          rData := Cat((0 until 4).reverse.map(k => resRd(Cat(lWordInLine, k.U(2.W)))))
        }
      }.elsewhen(!lAligned) {
        setErr(E.BAD_WIDTH_LSB)
      }.elsewhen(!regHit) {
        setErr(E.BAD_REG_LSB)
      }.otherwise {
        rData := regVal
      }
    }
  }

  // ------------------------------------------------------------------ errors, interrupt
  val errOH  = UIntToOH(errBit, 5)
  val newErr = errReq && (errStatus & errOH) === 0.U
  event(EV_ERR, newErr, Regs.Event.ERROR, errBit, errOff)
  when(errReq) {
    when(errStatus(3, 0) === 0.U)(errAddr := errOff)
    errCount                              := sat32(errCount +& 1.U)
  }
  val ovf    = evq.io.overflow
  val newOvf = ovf && !errStatus(E.EVQ_OVERFLOW_LSB)
  errStatus := (errStatus & ~errW1c) | Mux(errReq, errOH, 0.U) | Mux(ovf, (1 << E.EVQ_OVERFLOW_LSB).U, 0.U)
  val I = Regs.INT_STATUS
  intSticky := (intSticky & ~intW1c) | Mux(newErr || newOvf, (1 << I.ERROR_LSB).U, 0.U) |
    Mux(cmdDoneSet, (1 << I.CMD_DONE_LSB).U, 0.U)
  val line = (intStatusVal & intEnable).orR
  irq := line
  val linePrev = RegNext(line, false.B)
  val rearm    = RegNext(intWrite, false.B)
  msi  := line && (!linePrev || rearm)
  idle := st === St.sIdle && scrub.io.idle && !tablesBusy
}
