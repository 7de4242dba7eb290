// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.util._
import cxltrack.{Axi, Axi4, AxiLite}

/**
 * The completer side of the UltraScale+ PCIe block: requests from the CQ stream become AXI transactions, read data goes
 * back as completions on CC. Three BARs are served (the others get Unsupported Request):
 *
 *   - function 0, BAR0 (the memory window): AXI4 `mem`, one single-beat 64-byte transaction per line the request
 *     touches, with the request's byte enables as write strobes (a request crossing lines counts as one request per
 *     line, as on the QEMU model);
 *   - function 1, BAR0 (the tracker's registers and windows): AXI4-Lite `lite`, one 32-bit access per DWORD with its
 *     byte enables; the first DWORD's address carries the offset of its first enabled byte, as a CPU's sub-word access
 *     would;
 *   - function 1, BAR2 (the MSI-X table and PBA): the `msix` port.
 *
 * Requests are served one at a time in arrival order, except that memory-window writes are pipelined. Ordering: a
 * request other than a memory-window write starts only when every earlier write has its AXI response (so a register
 * write that launches a command sees every earlier memory write, and a read sees every earlier write). Read data leaves
 * as one completion per 64-byte line (RCB-aligned). Zero-length reads and writes touch nothing.
 */
class PcieCompleter(memBarLog2: Int, regBarLog2: Int, msixBarLog2: Int, memAxiAddrBits: Int, idBits: Int)
    extends Module {
  require(memAxiAddrBits >= memBarLog2)
  import Usp._
  val cq   = IO(Flipped(new Axis(DataBits, CqUserBits)))
  val cc   = IO(new Axis(DataBits, CcUserBits))
  val mem  = IO(new Axi4(memAxiAddrBits, 512, idBits))
  val lite = IO(new AxiLite(regBarLog2))
  val msix = IO(new MsixPort(msixBarLog2))
  // stop taking requests at the next request boundary (function-level reset), and whether all are done
  val hold    = IO(Input(Bool()))
  val drained = IO(Output(Bool()))

  object T extends ChiselEnum { val NONE, MEM, REG, MSIX = Value }
  // offsets within the widest BAR
  val offBits = Seq(memBarLog2, regBarLog2, msixBarLog2).max
  object S extends ChiselEnum { val sIdle, sWrite, sConsume, sGather, sSend, sUr = Value }

  // ---------------------------------------------------------------- request header
  val st      = RegInit(S.sIdle)
  val hOffDw  = Reg(UInt((offBits - 2).W)) // DWORD offset of the first DWORD within its BAR
  val hAddrLo = Reg(UInt(7.W))             // low bits of the full address (completion lower address)
  val hDw     = Reg(UInt(11.W))
  val hReqId  = Reg(UInt(16.W))
  val hTag    = Reg(UInt(8.W))
  val hFunc   = Reg(UInt(8.W))
  val hTc     = Reg(UInt(3.W))
  val hAttr   = Reg(UInt(3.W))
  val hFbe    = Reg(UInt(4.W))
  val hLbe    = Reg(UInt(4.W))
  val hTarget = Reg(T())
  val hRead   = Reg(Bool())                // consume, then gather and send completions
  val hUr     = Reg(Bool())                // consume, then answer Unsupported Request

  val d       = cq.tdata
  val dType   = d(CqTypeHi, CqTypeLo)
  val dFunc   = d(CqFuncHi, CqFuncLo)
  val dBar    = d(CqBarHi, CqBarLo)
  val dTarget = WireDefault(T.NONE)
  when(dFunc === 0.U && dBar === 0.U)(dTarget := T.MEM)
  when(dFunc === 1.U && dBar === 0.U)(dTarget := T.REG)
  when(dFunc === 1.U && dBar === 2.U)(dTarget := T.MSIX)
  val dAddr = Cat(d(CqAddrHi, CqAddrLo), 0.U(2.W))
  val barLog2 = Mux1H(
    Seq(
      (dTarget === T.MEM)  -> memBarLog2.U,
      (dTarget === T.REG)  -> regBarLog2.U,
      (dTarget === T.MSIX) -> msixBarLog2.U,
      (dTarget === T.NONE) -> 12.U
    )
  )
  val dOff    = (dAddr & ((1.U(65.W) << barLog2) - 1.U)(63, 0))(offBits - 1, 0)
  val nonPost = VecInit(NonPostedSet.map(_.U === dType)).asUInt.orR
  val isWrite = dType === ReqMemWrite.U
  val isRead  = dType === ReqMemRead.U && dTarget =/= T.NONE

  // ---------------------------------------------------------------- geometry of the request
  val o        = hOffDw(3, 0)                // first DWORD's lane in its line
  val lineBase = hOffDw(offBits - 3, 4)
  val nLines   = ((o +& hDw) + 15.U) >> 4    // lines touched, 1..65
  val kNeg     = o > CqDescDw.U              // line j's window starts one beat before beat j
  val shift    = (CqDescDw.U(5.W) - o)(3, 0) // window start lane within its beat
  val zeroLen  = hDw === 1.U && hFbe === 0.U
  val firstOff = leadingDisabled(hFbe)
  val byteCount = Mux(
    zeroLen,
    1.U,
    Mux(
      hDw === 1.U,
      4.U - leadingDisabled(hFbe) - trailingDisabled(hFbe),
      (hDw << 2) - leadingDisabled(hFbe) - trailingDisabled(hLbe)
    )
  )

  /** Byte enables of payload DWORD i (the request's first and last DWORDs carry the TLP's). */
  def dwBe(i: UInt): UInt = Mux(i === 0.U, hFbe, Mux(i === hDw - 1.U, hLbe, 15.U))

  // ---------------------------------------------------------------- write pipeline state
  val wrQ      = Module(new Queue(new LineWrite(offBits), 2))
  val iterBits = regBarLog2.max(msixBarLog2)
  val memWrOut = RegInit(0.U(16.W))
  val iterPend = RegInit(0.U(16.W)) // DWORDs of the current line still to write (registers / MSI-X)
  val fenceOk  = memWrOut === 0.U && !wrQ.io.deq.valid && iterPend === 0.U

  // ---------------------------------------------------------------- idle: accept a header
  cq.tready := false.B
  when(st === S.sIdle && cq.tvalid && !hold && (fenceOk || (isWrite && dTarget === T.MEM && iterPend === 0.U))) {
    hOffDw  := dOff(offBits - 1, 2)
    hAddrLo := dAddr(6, 0)
    hDw     := d(CqDwHi, CqDwLo)
    hReqId  := d(CqReqIdHi, CqReqIdLo)
    hTag    := d(CqTagHi, CqTagLo)
    hFunc   := dFunc
    hTc     := d(CqTcHi, CqTcLo)
    hAttr   := d(CqAttrHi, CqAttrLo)
    hFbe    := cq.tuser(CqFirstBe + 3, CqFirstBe)
    hLbe    := cq.tuser(CqLastBe + 3, CqLastBe)
    hTarget := dTarget
    hRead   := isRead
    hUr     := nonPost && !isRead
    st      := Mux(isWrite, S.sWrite, S.sConsume)
  }

  // ---------------------------------------------------------------- sWrite: realign the payload into lines
  val beat     = RegInit(0.U(8.W))
  val flushing = RegInit(false.B)
  val drop     = RegInit(false.B)
  val prevData = RegInit(0.U(512.W))
  val prevStrb = RegInit(0.U(64.W))
  val curData  = Mux(flushing, 0.U, cq.tdata)
  // byte enables of the beat's lanes: the payload starts at stream position 4 (after the descriptor)
  val curStrb = Mux(
    flushing,
    0.U,
    Cat((0 until Dwords).reverse.map { l =>
      val pos = Cat(beat, l.U(4.W))
      val i   = pos - CqDescDw.U
      Mux(pos >= CqDescDw.U && i < hDw, dwBe(i), 0.U(4.W))
    })
  )
  val have      = st === S.sWrite && (flushing || cq.tvalid)
  val poisonNow = !flushing && cq.tvalid && cq.tuser(CqDiscont)
  val jPlus1    = beat +& kNeg.asUInt // 1 + index of the line whose window ends in this beat
  val lineJ     = jPlus1 - 1.U
  val inRange   = jPlus1 >= 1.U && lineJ < nLines
  // line j = the 16 DWORDs from lane `shift` of the previous beat on
  val winData = (Cat(curData, prevData) >> Cat(shift, 0.U(5.W)))(511, 0)
  val winStrb = (Cat(curStrb, prevStrb) >> Cat(shift, 0.U(2.W)))(63, 0)
  val lineOut = Wire(Decoupled(new LineWrite(offBits)))
  val emit    = have && inRange && winStrb =/= 0.U && hTarget =/= T.NONE && !drop && !poisonNow
  lineOut.valid     := emit
  lineOut.bits.addr := Cat(lineBase + lineJ, 0.U(6.W))(offBits - 1, 0)
  lineOut.bits.data := winData
  lineOut.bits.strb := winStrb
  val advance = have && (!emit || lineOut.ready)
  when(st === S.sWrite && !flushing)(cq.tready := advance)
  when(advance) {
    prevData             := curData
    prevStrb             := curStrb
    beat                 := beat + 1.U
    when(poisonNow)(drop := true.B) // a discontinued request writes nothing more
    when(flushing) {
      st       := S.sIdle
      flushing := false.B
      drop     := false.B
      beat     := 0.U
      prevData := 0.U
      prevStrb := 0.U
    }.elsewhen(cq.tlast) {
      flushing := true.B
    }
  }

  // memory-window lines: AXI4 single-beat writes
  wrQ.io.enq.valid := lineOut.valid && hTarget === T.MEM
  wrQ.io.enq.bits  := lineOut.bits
  val awSent = RegInit(false.B)
  val wSent  = RegInit(false.B)
  mem.awvalid := wrQ.io.deq.valid && !awSent
  mem.awid    := 0.U
  mem.awaddr  := wrQ.io.deq.bits.addr(memBarLog2 - 1, 0).pad(memAxiAddrBits)
  mem.awlen   := 0.U
  mem.awsize  := 6.U
  mem.awburst := Axi.INCR.U
  mem.awlock  := false.B
  mem.awcache := 0.U
  mem.awprot  := 0.U
  mem.wvalid  := wrQ.io.deq.valid && !wSent
  mem.wdata   := wrQ.io.deq.bits.data
  mem.wstrb   := wrQ.io.deq.bits.strb
  mem.wlast   := true.B
  mem.bready  := true.B
  val awFire = mem.awvalid && mem.awready
  val wFire  = mem.wvalid && mem.wready
  val awDone = awSent || awFire
  val wDone  = wSent || wFire
  wrQ.io.deq.ready := awDone && wDone
  awSent           := Mux(awDone && wDone, false.B, awDone)
  wSent            := Mux(awDone && wDone, false.B, wDone)
  memWrOut         := memWrOut + awFire.asUInt - (mem.bvalid && mem.bready).asUInt

  // register and MSI-X lines: one DWORD at a time
  val iterData  = Reg(UInt(512.W))
  val iterStrb  = Reg(UInt(64.W))
  val iterAddr  = Reg(UInt(iterBits.W)) // line address within the BAR
  val iterFirst = Reg(Bool())
  val iterMsix  = Reg(Bool())
  val lineNib   = VecInit((0 until Dwords).map(l => lineOut.bits.strb(4 * l + 3, 4 * l).orR)).asUInt
  lineOut.ready := Mux(hTarget === T.MEM, wrQ.io.enq.ready, iterPend === 0.U)
  when(lineOut.fire && (hTarget === T.REG || hTarget === T.MSIX)) {
    iterPend  := lineNib
    iterData  := lineOut.bits.data
    iterStrb  := lineOut.bits.strb
    iterAddr  := lineOut.bits.addr(iterBits - 1, 0)
    iterFirst := lineJ === 0.U
    iterMsix  := hTarget === T.MSIX
  }
  val iLane   = PriorityEncoder(iterPend)
  val iBe     = (iterStrb >> Cat(iLane, 0.U(2.W)))(3, 0)
  val iData   = (iterData >> Cat(iLane, 0.U(5.W)))(31, 0)
  val iByte   = Mux(iterFirst && iLane === o, leadingDisabled(iBe), 0.U) // sub-word offset of the first DWORD
  val iAddr   = iterAddr + Cat(iLane, 0.U(2.W)) + iByte
  val lAwSent = RegInit(false.B)
  val lWSent  = RegInit(false.B)
  val lWaitB  = RegInit(false.B)
  val iterReg = iterPend =/= 0.U && !iterMsix
  lite.awvalid := iterReg && !lWaitB && !lAwSent
  lite.awaddr  := iAddr(regBarLog2 - 1, 0)
  lite.awprot  := 0.U
  lite.wvalid  := iterReg && !lWaitB && !lWSent
  lite.wdata   := iData
  lite.wstrb   := iBe
  lite.bready  := lWaitB
  val lAwDone = lAwSent || (lite.awvalid && lite.awready)
  val lWDone  = lWSent || (lite.wvalid && lite.wready)
  when(iterReg && !lWaitB) {
    lAwSent := lAwDone
    lWSent  := lWDone
    when(lAwDone && lWDone) {
      lAwSent := false.B
      lWSent  := false.B
      lWaitB  := true.B
    }
  }
  val msixWrite = iterPend =/= 0.U && iterMsix
  msix.wr.valid := msixWrite
  msix.wr.addr  := (iterAddr + Cat(iLane, 0.U(2.W)))(msixBarLog2 - 1, 0)
  msix.wr.data  := iData
  msix.wr.be    := iBe
  when((lWaitB && lite.bvalid) || msixWrite) {
    iterPend := iterPend & ~UIntToOH(iLane, Dwords)
    lWaitB   := false.B
  }

  // ---------------------------------------------------------------- sConsume: drop the request's beats
  when(st === S.sConsume) {
    cq.tready := true.B
    when(cq.tvalid && cq.tlast) {
      st := Mux(hRead, S.sGather, Mux(hUr, S.sUr, S.sIdle))
    }
  }

  // ---------------------------------------------------------------- reads: gather a line, then send it
  val cplJ     = RegInit(0.U(7.W))
  val arJ      = RegInit(0.U(7.W))
  val remBytes = Reg(UInt(13.W))
  val lineBuf  = Reg(Vec(Dwords, UInt(32.W)))
  val gPend    = RegInit(0.U(16.W))
  val gStarted = RegInit(false.B)
  // DWORDs of line j the request covers: lanes [first, last]
  def firstLane(j: UInt): UInt = Mux(j === 0.U, o, 0.U)
  def lastLane(j: UInt): UInt = {
    val end = (o +& hDw - 1.U) - Cat(j, 0.U(4.W)) // lane of the request's last DWORD, relative to line j
    Mux(end > 15.U, 15.U, end(3, 0))
  }
  def laneMask(j: UInt): UInt = {
    val lo = firstLane(j); val hi = lastLane(j)
    VecInit((0 until Dwords).map(l => l.U >= lo && l.U <= hi)).asUInt
  }
  when(st === S.sConsume && cq.tvalid && cq.tlast && hRead) {
    cplJ     := 0.U
    arJ      := 0.U
    gStarted := false.B
    remBytes := byteCount
  }

  // memory window: AR runs up to four lines ahead of the completions
  mem.arvalid := (st === S.sGather || st === S.sSend) && hTarget === T.MEM && !zeroLen && arJ < nLines &&
    (arJ - cplJ) < 4.U
  mem.arid                             := 0.U
  mem.araddr                           := Cat(lineBase + arJ, 0.U(6.W))(memBarLog2 - 1, 0).pad(memAxiAddrBits)
  mem.arlen                            := 0.U
  mem.arsize                           := 6.U
  mem.arburst                          := Axi.INCR.U
  mem.arlock                           := false.B
  mem.arcache                          := 0.U
  mem.arprot                           := 0.U
  when(mem.arvalid && mem.arready)(arJ := arJ + 1.U)
  mem.rready                           := st === S.sGather && hTarget === T.MEM && !zeroLen

  // registers / MSI-X: one DWORD at a time
  val gLane   = PriorityEncoder(gPend)
  val gByte   = Mux(cplJ === 0.U && gLane === o, firstOff, 0.U)
  val gAddr   = Cat(lineBase + cplJ, 0.U(6.W)) + Cat(gLane, 0.U(2.W)) + gByte
  val gArSent = RegInit(false.B)
  lite.arvalid := st === S.sGather && hTarget === T.REG && gStarted && gPend =/= 0.U && !gArSent
  lite.araddr  := gAddr(regBarLog2 - 1, 0)
  lite.arprot  := 0.U
  lite.rready  := st === S.sGather && hTarget === T.REG && gArSent
  when(lite.arvalid && lite.arready)(gArSent := true.B)
  msix.rdAddr := (Cat(lineBase + cplJ, 0.U(6.W)) + Cat(gLane, 0.U(2.W)))(msixBarLog2 - 1, 0)

  when(st === S.sGather) {
    when(hTarget === T.MEM) {
      when(zeroLen) {
        lineBuf.foreach(_ := 0.U)
        st := S.sSend
      }.elsewhen(mem.rvalid) {
        lineBuf := mem.rdata.asTypeOf(lineBuf)
        st      := S.sSend
      }
    }.otherwise {
      when(!gStarted) {
        lineBuf.foreach(_ := 0.U)
        // a zero-length read reads nothing
        gPend    := Mux(zeroLen, 0.U, laneMask(cplJ))
        gStarted := true.B
      }.elsewhen(gPend === 0.U) {
        st       := S.sSend
        gStarted := false.B
      }.elsewhen(hTarget === T.MSIX) {
        lineBuf(gLane) := msix.rdData
        gPend          := gPend & ~UIntToOH(gLane, Dwords)
      }.elsewhen(lite.rvalid && gArSent) {
        lineBuf(gLane) := lite.rdata
        gPend          := gPend & ~UIntToOH(gLane, Dwords)
        gArSent        := false.B
      }
    }
  }

  // ---------------------------------------------------------------- completions
  val ccBeat   = RegInit(0.U(1.W))
  val fl       = firstLane(cplJ)
  val cj       = (Cat(0.U(1.W), lastLane(cplJ)) - fl) + 1.U // DWORDs in this completion, 1..16
  val payload  = (lineBuf.asUInt >> Cat(fl, 0.U(5.W)))(511, 0)
  val lower    = Mux(cplJ === 0.U, hAddrLo + firstOff, Cat((lineBase + cplJ)(0), 0.U(6.W)))
  val desc     = ccDescriptor(lower, remBytes, cj, CplSc.U, hReqId, hTag, hFunc, hTc, hAttr)
  val urDesc   = ccDescriptor(hAddrLo + firstOff, byteCount, 0.U, CplUr.U, hReqId, hTag, hFunc, hTc, hAttr)
  val beat0    = Cat(payload(32 * (Dwords - CcDescDw) - 1, 0), desc)
  val beat1    = payload(511, 32 * (Dwords - CcDescDw))
  val twoBeats = cj > (Dwords - CcDescDw).U
  val lastDw = Mux(ccBeat === 0.U, Mux(twoBeats, (Dwords - 1).U, cj + (CcDescDw - 1).U), cj - (Dwords - CcDescDw + 1).U)
  val sending = st === S.sSend || st === S.sUr
  cc.tvalid := sending
  cc.tdata  := Mux(st === S.sUr, urDesc, Mux(ccBeat === 0.U, beat0, beat1))
  val ccLastDw = Mux(st === S.sUr, (CcDescDw - 1).U, lastDw)
  cc.tkeep := (UIntToOH(ccLastDw, Dwords) << 1) - 1.U
  cc.tlast := st === S.sUr || ccBeat === 1.U || !twoBeats
  // is_sop[0] (bit 0), is_eop[0] (bit 6), is_eop0_ptr (bits 11:8); no straddling, no parity
  cc.tuser := Cat(
    0.U((CcUserBits - 12).W),
    Mux(cc.tlast, ccLastDw(3, 0), 0.U(4.W)),
    0.U(1.W),
    cc.tlast,
    0.U(5.W),
    st === S.sUr || ccBeat === 0.U
  )
  when(cc.tvalid && cc.tready) {
    when(st === S.sUr) {
      st := S.sIdle
    }.elsewhen(!cc.tlast) {
      ccBeat := 1.U
    }.otherwise {
      ccBeat   := 0.U
      remBytes := remBytes - ((cj << 2) - Mux(cplJ === 0.U, firstOff, 0.U))
      cplJ     := cplJ + 1.U
      st       := Mux(cplJ + 1.U === nLines, S.sIdle, S.sGather)
    }
  }

  drained := st === S.sIdle && fenceOk
}

/** One line of a write on its way to memory (address within the BAR, data, byte strobes). */
class LineWrite(addrBits: Int) extends Bundle {
  val addr = UInt(addrBits.W)
  val data = UInt(512.W)
  val strb = UInt(64.W)
}

/** Access to the MSI-X table and PBA: DWORD writes with byte enables, combinational DWORD reads. */
class MsixPort(addrBits: Int) extends Bundle {
  val wr = Output(new Bundle {
    val valid = Bool()
    val addr  = UInt(addrBits.W)
    val data  = UInt(32.W)
    val be    = UInt(4.W)
  })
  val rdAddr = Output(UInt(addrBits.W))
  val rdData = Input(UInt(32.W))
}
