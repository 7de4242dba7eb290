// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** A single-beat internal write of one 64-byte line (the merge writer): address, data, byte enables. */
class LineWriteData extends Bundle {
  val data = UInt(512.W)
  val strb = UInt(64.W)
}

/** The two internal writers that share the memory side's write channels with the CXL side. */
class InternalWriters(memAddrBits: Int) extends Bundle {
  val mergeAw = Flipped(Decoupled(UInt(memAddrBits.W)))      // one single-beat write per line
  val mergeW  = Flipped(Decoupled(new LineWriteData))
  val scrubAw = Flipped(Decoupled(new ScrubAw(memAddrBits))) // 64-beat bursts of zeros, every strobe
  val scrubW  = Flipped(Decoupled(new ScrubW))
}

/** The copy engine's reads (docs/spec.md 7.1): its bursts, and the R beats of its ID back to it (no READY). */
class CopyReads(memAddrBits: Int) extends Bundle {
  val ar = Flipped(Decoupled(new CopyAr(memAddrBits)))
  val r  = Valid(UInt(512.W))
}

/** What the data path tells the tables about the requests it passes (one of each per cycle at most). */
class RequestEvents(pageBits: Int) extends Bundle {
  val readAccept  = Valid(UInt(pageBits.W)) // an AR accepted inside the device, with its page
  val writeAccept = Valid(UInt(pageBits.W)) // an AW accepted inside the device (write begin)
  val extWriteEnd = Valid(UInt(pageBits.W)) // a CXL-side write's B handshake (write end), with its page
  val intWriteEnd = Valid(Bool())           // an internal write's B (bits: it was the scrub's)
}

/**
 * The AXI4 data path between the CXL.mem side (`s_axi`) and device memory (`m_axi`) (docs/spec.md section 2).
 *
 * Reads: AR and R pass through combinationally (0 added cycles). A read beyond the capacity is answered locally with
 * `arlen + 1` beats of zero data and DECERR, once the earlier reads have drained (per-ID order without a reorder
 * buffer).
 *
 * Writes: AW/W go through an arbiter shared with the internal writers (slot merge, scrub): one burst owns both channels
 * from its AW to its last W beat; after an external grant the next free choice prefers an internal writer, so neither
 * side starves. A write beyond the capacity takes the grant, its data is swallowed and B answers DECERR once the
 * earlier external writes have drained. The memory-side ID is the external ID with a top bit 0; internal writes set the
 * top bit (bit 0: scrub), so B is routed back by it. Each external ID keeps a FIFO of the pages of its outstanding
 * writes (`wrPerId` deep; an AW beyond that waits), so a B names its page (write end).
 *
 * Copy reads (CHUNK_COPY, [[CopyEngine]]): the copy engine's bursts share the memory side's AR with the CXL side, which
 * has priority: a copy AR is put on `m_axi` only in a cycle without a CXL-side AR to pass, unless it has waited 64
 * cycles (then it goes at the next point where no CXL-side AR is on `m_axi`), and an AR on `m_axi` stays there until
 * accepted (AXI: VALID and payload held). The copy's ID is the internal top bit with the low bits 0; its R beats go to
 * the copy engine, always accepted (it requests only what it has room for), so they never hold the CXL side's beats.
 * Copy reads are not requests: no accept event, no statistics, no tracking.
 *
 * Statistics: accepted reads and writes (64-bit), decode errors (saturating at 2^32 - 1).
 */
class DataPath(p: CxlTrackParams) extends Module {
  val s_axi    = IO(Flipped(new Axi4(p.addrBits, p.dataBits, p.idBits)))
  val m_axi    = IO(new Axi4(p.memAddrBits, p.dataBits, p.idBits + 1))
  val internal = IO(new InternalWriters(p.memAddrBits))
  val copyRead = IO(new CopyReads(p.memAddrBits))
  val events   = IO(Output(new RequestEvents(p.pageBits)))
  val stats = IO(Output(new Bundle {
    val reads  = UInt(64.W)
    val writes = UInt(64.W)
    val decerr = UInt(32.W)
  }))

  private def pageOf(a: UInt): UInt      = (a >> p.pageShift)(p.pageBits - 1, 0)
  private def fit(x: UInt, w: Int): UInt = x.pad(w)(w - 1, 0)
  private def sat32(x: UInt): UInt       = Mux(x(32), "hffffffff".U(32.W), x(31, 0))

  // ------------------------------------------------------------------ reads
  val arInRange      = s_axi.araddr < p.capacityBytes.U
  val readsInFlight  = RegInit(0.U(16.W))
  val readDecerr     = RegInit(false.B)  // answering a read beyond the capacity
  val readDecerrId   = RegInit(0.U(p.idBits.W))
  val readDecerrLeft = RegInit(0.U(8.W)) // beats still to answer after the current one
  // AR arbiter: the CXL side first; the copy engine in a cycle without a CXL-side AR, or after waiting 64 cycles at the
  // next cycle no CXL-side AR is held on m_axi; whichever AR is on m_axi stays until accepted
  val extAr    = s_axi.arvalid && arInRange && !readDecerr
  val extHold  = RegInit(false.B) // a CXL-side AR was on m_axi last cycle and not accepted
  val copyHold = RegInit(false.B) // the copy's AR was on m_axi last cycle and not accepted
  val copyWait = RegInit(0.U(7.W))
  val copyAr   = copyRead.ar
  val gCopy    = copyHold || (!extHold && copyAr.valid && (!extAr || copyWait(6)))
  extHold       := !gCopy && extAr && !m_axi.arready
  copyHold      := gCopy && copyAr.valid && !m_axi.arready
  copyWait      := Mux(!copyAr.valid || copyAr.ready, 0.U, Mux(copyWait(6), copyWait, copyWait + 1.U))
  m_axi.arvalid := Mux(gCopy, copyAr.valid, extAr)
  m_axi.arid    := Mux(gCopy, (1 << p.idBits).U, Cat(0.U(1.W), s_axi.arid))
  m_axi.araddr  := Mux(gCopy, copyAr.bits.addr, fit(s_axi.araddr, p.memAddrBits))
  m_axi.arlen   := Mux(gCopy, copyAr.bits.len, s_axi.arlen)
  m_axi.arsize  := Mux(gCopy, 6.U, s_axi.arsize)
  m_axi.arburst := Mux(gCopy, Axi.INCR.U, s_axi.arburst)
  m_axi.arlock  := !gCopy && s_axi.arlock
  m_axi.arcache := Mux(gCopy, 0.U, s_axi.arcache)
  m_axi.arprot  := Mux(gCopy, 0.U, s_axi.arprot)
  copyAr.ready  := gCopy && m_axi.arready
  // READY only with VALID: the decode must not look at an idle (possibly undriven) address
  s_axi.arready := !readDecerr && s_axi.arvalid && Mux(arInRange, m_axi.arready && !gCopy, readsInFlight === 0.U)
  val arFire     = s_axi.arvalid && s_axi.arready
  val readAccept = arFire && arInRange
  when(arFire && !arInRange) {
    readDecerr     := true.B
    readDecerrId   := s_axi.arid
    readDecerrLeft := s_axi.arlen
  }
  val rCopy = m_axi.rid(p.idBits) // a beat of the copy engine's reads
  s_axi.rvalid     := readDecerr || (m_axi.rvalid && !rCopy)
  s_axi.rid        := Mux(readDecerr, readDecerrId, m_axi.rid(p.idBits - 1, 0))
  s_axi.rdata      := Mux(readDecerr, 0.U, m_axi.rdata)
  s_axi.rresp      := Mux(readDecerr, Axi.DECERR.U, m_axi.rresp)
  s_axi.rlast      := Mux(readDecerr, readDecerrLeft === 0.U, m_axi.rlast)
  m_axi.rready     := (m_axi.rvalid && rCopy) || (s_axi.rready && !readDecerr)
  copyRead.r.valid := m_axi.rvalid && rCopy
  copyRead.r.bits  := m_axi.rdata
  when(readDecerr && s_axi.rready) {
    when(readDecerrLeft === 0.U)(readDecerr := false.B).otherwise(readDecerrLeft := readDecerrLeft - 1.U)
  }
  val rLastFire = m_axi.rvalid && m_axi.rready && m_axi.rlast && !rCopy
  readsInFlight := readsInFlight + readAccept.asUInt - rLastFire.asUInt

  // ------------------------------------------------------------------ write arbiter
  val awInRange = s_axi.awaddr < p.capacityBytes.U
  val nIds      = 1 << p.idBits
  val depth     = p.wrPerId
  require(isPow2(depth))
  val pageFifo       = Reg(Vec(nIds, Vec(depth, UInt(p.pageBits.W))))
  val pageFifoHead   = RegInit(VecInit(Seq.fill(nIds)(0.U(log2Ceil(depth).W))))
  val pageFifoCount  = RegInit(VecInit(Seq.fill(nIds)(0.U(log2Ceil(depth + 1).W))))
  val writesInFlight = RegInit(0.U(16.W)) // external writes accepted, B not yet forwarded
  val decerrB        = RegInit(false.B)   // a DECERR B waiting for its handshake
  val decerrBId      = RegInit(0.U(p.idBits.W))
  val decerrAwId     = RegInit(0.U(p.idBits.W))

  // the owner of the write channels: none, an external write, an external write beyond the capacity, merge, scrub
  val NONE      = 0.U(3.W)
  val EXTERNAL  = 1.U(3.W)
  val DECERR    = 2.U(3.W)
  val MERGE     = 3.U(3.W)
  val SCRUB     = 4.U(3.W)
  val owner     = RegInit(NONE)
  val awDone    = RegInit(false.B) // the owner's AW has been accepted
  val wDone     = RegInit(false.B) // the owner's last W beat has been accepted
  val preferInt = RegInit(false.B) // the last grant was external: the next free choice prefers an internal writer
  val extOk =
    s_axi.awvalid && Mux(awInRange, pageFifoCount(s_axi.awid) =/= depth.U, writesInFlight === 0.U && !decerrB)
  val intReq = internal.mergeAw.valid || internal.scrubAw.valid
  val pick = Mux(
    extOk && (!intReq || !preferInt),
    Mux(awInRange, EXTERNAL, DECERR),
    Mux(internal.mergeAw.valid, MERGE, Mux(internal.scrubAw.valid, SCRUB, NONE))
  )
  val grant = Mux(owner === NONE, pick, owner)
  when(owner === NONE && pick =/= NONE)(preferInt := pick === EXTERNAL || pick === DECERR)
  val gExt   = grant === EXTERNAL
  val gDec   = grant === DECERR
  val gMerge = grant === MERGE
  val gScrub = grant === SCRUB
  m_axi.awvalid := !awDone && (gExt && s_axi.awvalid || gMerge && internal.mergeAw.valid ||
    gScrub && internal.scrubAw.valid)
  m_axi.awid := Mux(gExt, Cat(0.U(1.W), s_axi.awid), Mux(gMerge, (1 << p.idBits).U, ((1 << p.idBits) | 1).U))
  m_axi.awaddr := Mux(
    gExt,
    fit(s_axi.awaddr, p.memAddrBits),
    Mux(gMerge, internal.mergeAw.bits, internal.scrubAw.bits.addr)
  )
  m_axi.awlen   := Mux(gExt, s_axi.awlen, Mux(gMerge, 0.U, 63.U))
  m_axi.awsize  := Mux(gExt, s_axi.awsize, 6.U)
  m_axi.awburst := Mux(gExt, s_axi.awburst, Axi.INCR.U)
  m_axi.awlock  := gExt && s_axi.awlock
  m_axi.awcache := Mux(gExt, s_axi.awcache, 0.U)
  m_axi.awprot  := Mux(gExt, s_axi.awprot, 0.U)
  m_axi.wvalid := !wDone && (gExt && s_axi.wvalid || gMerge && internal.mergeW.valid ||
    gScrub && internal.scrubW.valid)
  m_axi.wdata            := Mux(gExt, s_axi.wdata, Mux(gMerge, internal.mergeW.bits.data, 0.U))
  m_axi.wstrb            := Mux(gExt, s_axi.wstrb, Mux(gMerge, internal.mergeW.bits.strb, Fill(64, 1.U(1.W))))
  m_axi.wlast            := Mux(gExt, s_axi.wlast, Mux(gMerge, true.B, internal.scrubW.bits.last))
  s_axi.awready          := !awDone && (gExt && m_axi.awready || gDec)
  s_axi.wready           := !wDone && (gExt && m_axi.wready || gDec)
  internal.mergeAw.ready := !awDone && gMerge && m_axi.awready
  internal.mergeW.ready  := !wDone && gMerge && m_axi.wready
  internal.scrubAw.ready := !awDone && gScrub && m_axi.awready
  internal.scrubW.ready  := !wDone && gScrub && m_axi.wready
  val awFire     = !awDone && Mux(gDec, s_axi.awvalid, m_axi.awvalid && m_axi.awready)
  val wLastFire  = !wDone && Mux(gDec, s_axi.wvalid && s_axi.wlast, m_axi.wvalid && m_axi.wready && m_axi.wlast)
  val awDoneNext = awDone || awFire
  val wDoneNext  = wDone || wLastFire
  when(grant =/= NONE) {
    when(awDoneNext && wDoneNext) {
      owner  := NONE
      awDone := false.B
      wDone  := false.B
    }.otherwise {
      owner  := grant
      awDone := awDoneNext
      wDone  := wDoneNext
    }
  }
  when(gDec && !awDone)(decerrAwId := s_axi.awid)
  when(gDec && awDoneNext && wDoneNext) {
    decerrB   := true.B
    decerrBId := Mux(awDone, decerrAwId, s_axi.awid)
  }
  val writeAccept       = gExt && awFire
  val decerrWriteAccept = gDec && awFire
  val awPage            = pageOf(s_axi.awaddr)

  // ------------------------------------------------------------------ B
  // external ids have the top bit clear, internal ones set (bit 0: scrub)
  val bExternal = !m_axi.bid(p.idBits)
  s_axi.bvalid                          := decerrB || (m_axi.bvalid && bExternal)
  s_axi.bid                             := Mux(decerrB, decerrBId, m_axi.bid(p.idBits - 1, 0))
  s_axi.bresp                           := Mux(decerrB, Axi.DECERR.U, m_axi.bresp)
  m_axi.bready                          := !m_axi.bvalid || Mux(bExternal, s_axi.bready && !decerrB, true.B)
  when(decerrB && s_axi.bready)(decerrB := false.B)
  val extEnd = !decerrB && m_axi.bvalid && bExternal && s_axi.bready
  val bIdLow = m_axi.bid(p.idBits - 1, 0)
  for (i <- 0 until nIds) {
    val push = writeAccept && s_axi.awid === i.U
    val pop  = extEnd && bIdLow === i.U
    when(push)(pageFifo(i)((pageFifoHead(i) + pageFifoCount(i))(log2Ceil(depth) - 1, 0)) := awPage)
    pageFifoHead(i)                                                                      := pageFifoHead(i) + pop.asUInt
    pageFifoCount(i) := pageFifoCount(i) + push.asUInt - pop.asUInt
  }
  writesInFlight := writesInFlight + writeAccept.asUInt - extEnd.asUInt

  events.readAccept.valid  := readAccept
  events.readAccept.bits   := pageOf(s_axi.araddr)
  events.writeAccept.valid := writeAccept
  events.writeAccept.bits  := awPage
  events.extWriteEnd.valid := extEnd
  events.extWriteEnd.bits  := pageFifo(bIdLow)(pageFifoHead(bIdLow))
  events.intWriteEnd.valid := m_axi.bvalid && !bExternal
  events.intWriteEnd.bits  := m_axi.bid(0)

  // ------------------------------------------------------------------ statistics
  val statReads  = RegInit(0.U(64.W))
  val statWrites = RegInit(0.U(64.W))
  val statDecerr = RegInit(0.U(32.W))
  when(readAccept)(statReads   := statReads + 1.U)
  when(writeAccept)(statWrites := statWrites + 1.U)
  statDecerr                   := sat32(statDecerr +& (arFire && !arInRange).asUInt +& decerrWriteAccept.asUInt)
  stats.reads                  := statReads
  stats.writes                 := statWrites
  stats.decerr                 := statDecerr
}
