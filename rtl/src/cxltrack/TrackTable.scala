// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** Operations a [[TrackTable]] port applies to the row (of 64 or 512 lanes) it addresses. */
object TableOp {
  // the code of an operation is its position here (block.json gives the list to the block bench)
  val Names = Seq("READ", "ZERO", "HALVE", "SET", "CLEAR", "INC", "MARK")
  val READ  = Names.indexOf("READ")  // no change (the old word is still returned)
  val ZERO  = Names.indexOf("ZERO")  // every lane of the masked 64-lane groups := 0
  val HALVE = Names.indexOf("HALVE") // every lane of the masked 64-lane groups := lane >> 1
  val SET   = Names.indexOf("SET")   // lane := 1
  val CLEAR = Names.indexOf("CLEAR") // lane := 0
  val INC   = Names.indexOf("INC")   // lane := min(lane + 1, max)
  // every lane of the masked 64-lane groups := max(lane, 1): a failed DMA harvest gives back what it cleared
  val MARK = Names.indexOf("MARK")
  val Bits = 3
  require(Names.length <= (1 << Bits))
  def max(laneBits: Int): BigInt = (BigInt(1) << laneBits) - 1
}

/**
 * A request to one row of a [[TrackTable]]: `lane` for the per-page operations (SET, CLEAR, INC), `mask` (one bit per
 * 64-lane group of the row) for the harvest operations (ZERO, HALVE), which leave unmasked groups as they are.
 */
class TableReq(val wordBits: Int, val laneBits: Int = 6, val groups: Int = 1) extends Bundle {
  val word = UInt(wordBits.W)
  val lane = UInt(laneBits.W)
  val op   = UInt(TableOp.Bits.W)
  val mask = UInt(groups.W)
}

/**
 * A per-page table of `words` rows x `lanes` lanes (64 or 512) of `laneBits` bits with `nPorts` read-modify-write
 * ports, every port able to take one operation per cycle on any row, without stalls (docs/rtl-notes.md, "Tables").
 *
 * Timing: a request presented in cycle t is registered (stage 1, RAM read) and executed in cycle t + 2 (stage 2), where
 * `resp(p)` carries the row as it was before port p's operation. All requests of one cycle are executed in port order,
 * so a port sees the effect of lower ports on the same row; requests of later cycles see everything earlier. That is
 * exactly the sequential semantics of the reference model with the cycle's requests serialised in port order, so the
 * core sets the same-cycle order of its sources (docs/rtl-notes.md, "Tables") by choosing the port order.
 *
 * Implementation: a live-value table (LVT) multi-port memory. Port p writes its own bank; every bank has one replica
 * per reading port (simple dual-port RAMs: nPorts x nPorts of them); a per-row LVT in flip-flops says which bank holds
 * the row's latest value, or that the row is all zero (the reset state, so no clearing sweep is needed). Several
 * requests to one row in one cycle are combined, and only the last of them writes. A row written in the previous cycle
 * is forwarded from a register, because the RAM read of that cycle could not see it.
 *
 * Summary (`regionLanes` > 0): one flip-flop per region of `regionLanes` lanes (a divisor of `lanes`), written in stage
 * 2 together with the row: the OR of the region's lanes in the row's new value. So at every cycle boundary a summary
 * bit is exactly "the region is not all zero" for the operations executed so far (those presented two or more cycles
 * before). `scanBits` gives, combinationally, one bit per row for `scanWidth` rows from row `scanRow` (bit i: row
 * scanRow + i has a summary bit set; rows beyond the table read 0).
 *
 * `packedState`: the per-row flip-flops (LVT, summary) as bit planes of `words` bits (plane b holds bit b of every
 * row's LVT entry; summary plane k holds region k of every row), each row written through a one-hot mask, instead of
 * one register per row with its own write decode. The same function; for tables of tens of thousands of rows (the 64
 * GiB harvest benchmark) it is the form Verilator compiles in minutes instead of hours. The core uses the default form.
 */
class TrackTable(
    val words: Int,
    val laneBits: Int,
    val nPorts: Int,
    name: String = "",
    val lanes: Int = 64,
    val regionLanes: Int = 0,
    val scanWidth: Int = 1,
    val packedState: Boolean = false
) extends Module {
  override def desiredName = if (name.nonEmpty) name else s"TrackTable_w${words}_n${lanes}_l${laneBits}_p$nPorts"
  require(words >= 1 && laneBits >= 1 && laneBits <= 8 && nPorts >= 1)
  require(lanes                     % 64 == 0 && lanes >= 64)
  require(regionLanes == 0 || lanes % regionLanes == 0, "a summary region is a divisor of the row")
  val wordBits  = log2Ceil(words) max 1
  val laneIdx   = log2Ceil(lanes)
  val groups    = lanes / 64
  val wordWidth = lanes * laneBits
  val regions   = if (regionLanes == 0) 0 else lanes / regionLanes // summary bits per row
  val io = IO(new Bundle {
    val req      = Input(Vec(nPorts, Valid(new TableReq(wordBits, laneIdx, groups))))
    val resp     = Output(Vec(nPorts, Valid(UInt(wordWidth.W))))
    val done     = Output(Vec(nPorts, new TableReq(wordBits, laneIdx, groups))) // the request resp(p) answers
    val busy     = Output(Bool())                                               // a request is in stage 1 or 2
    val scanRow  = Input(UInt(wordBits.W))
    val scanBits = Output(UInt(scanWidth.W))
  })

  private def lanesOf(w: UInt): Seq[UInt] = (0 until lanes).map(j => w((j + 1) * laneBits - 1, j * laneBits))
  // lane by lane, so that a chain of ports on one row costs a few logic levels per port (no lanes:1 mux)
  private def apply(old: UInt, r: TableReq): UInt = {
    val max = TableOp.max(laneBits).U(laneBits.W)
    val one = VecInit(lanesOf(old).zipWithIndex.map { case (v, j) =>
      val here = r.lane === j.U
      val mine = r.mask(j / 64)
      MuxLookup(r.op, v)(
        Seq(
          TableOp.ZERO.U  -> Mux(mine, 0.U(laneBits.W), v),
          TableOp.HALVE.U -> Mux(mine, (v >> 1).pad(laneBits), v),
          TableOp.SET.U   -> Mux(here, 1.U(laneBits.W), v),
          TableOp.CLEAR.U -> Mux(here, 0.U(laneBits.W), v),
          TableOp.INC.U   -> Mux(here && v =/= max, v + 1.U, v),
          TableOp.MARK.U  -> Mux(mine && v === 0.U, 1.U(laneBits.W), v)
        )
      )
    })
    one.asUInt
  }

  private def rowIdx(w: UInt): UInt = if (words == 1) 0.U else w

  // bank(p)(r): written by port p, read by port r
  val bank    = Seq.fill(nPorts, nPorts)(SyncReadMem(words, UInt(wordWidth.W)))
  val ZERO    = nPorts.U // LVT value: the row is all zero
  val lvtBits = log2Ceil(nPorts + 1)
  // the default form: one register per row
  val lvt     = if (packedState) None else Some(RegInit(VecInit(Seq.fill(words)(ZERO.pad(lvtBits)))))
  val summary = if (packedState || regions == 0) None else Some(RegInit(VecInit(Seq.fill(words * regions)(false.B))))
  // the packed form: bit planes of one bit per row
  val lvtP =
    if (!packedState) Seq.empty
    else
      Seq.tabulate(lvtBits)(b =>
        RegInit((if ((nPorts >> b & 1) == 1) (BigInt(1) << words) - 1 else BigInt(0)).U(words.W))
      )
  val summaryP = if (!packedState) Seq.empty else Seq.fill(regions)(RegInit(0.U(words.W)))
  private def lvtRead(w: UInt): UInt = lvt match {
    case Some(v) => v(rowIdx(w))
    case None    => Cat(lvtP.reverse.map(plane => (plane >> w)(0)))
  }

  // stage 1: registered requests, RAM reads
  val noReq = VecInit(Seq.fill(nPorts)(false.B))
  val s1v   = RegNext(VecInit(io.req.map(_.valid)), noReq)
  val s1    = RegNext(VecInit(io.req.map(_.bits)))
  val rd    = Seq.tabulate(nPorts, nPorts)((p, r) => bank(p)(r).read(s1(r).word, s1v(r)))
  // The LVT is read in stage 1 too: it differs from its stage-2 value only for rows written in this cycle, and
  // those are forwarded in stage 2 anyway. This keeps the words-to-1 LVT multiplexer out of stage 2.
  val src2 = RegNext(VecInit(s1.map(r => lvtRead(r.word))))

  // stage 2
  val s2     = RegNext(s1)
  val s2v    = RegNext(s1v, noReq)
  val prevV  = RegInit(VecInit(Seq.fill(nPorts)(false.B))) // writes of the previous cycle
  val prevW  = Reg(Vec(nPorts, UInt(wordBits.W)))
  val prevD  = Reg(Vec(nPorts, UInt(wordWidth.W)))
  val newVal = Wire(Vec(nPorts, UInt(wordWidth.W)))
  for (r <- 0 until nPorts) {
    val w    = s2(r).word
    val src  = src2(r)
    val ram  = Mux1H((0 until nPorts).map(p => (src === p.U) -> rd(p)(r)) :+ ((src === ZERO) -> 0.U(wordWidth.W)))
    val fwdH = (0 until nPorts).map(p => prevV(p) && prevW(p) === w)
    val base = Mux(fwdH.reduce(_ || _), Mux1H(fwdH, prevD), ram)
    // the latest lower port of this cycle on the same row, else the stored row
    val old = (0 until r).foldLeft(base) { (acc, q) =>
      Mux(s2v(q) && s2(q).word === w, newVal(q), acc)
    }
    newVal(r)        := apply(old, s2(r))
    io.resp(r).valid := s2v(r)
    io.resp(r).bits  := old
    io.done(r)       := s2(r)
  }
  // the packed form's next values, port by port (the ports of one cycle write different rows)
  var lvtNext     = lvtP.map(r => r: UInt)
  var summaryNext = summaryP.map(r => r: UInt)
  for (p <- 0 until nPorts) {
    val w    = s2(p).word
    val last = s2v(p) && !(p + 1 until nPorts).map(q => s2v(q) && s2(q).word === w).foldLeft(false.B)(_ || _)
    // the summary bits of this row follow its new value (only the last port on a row writes, so no conflict)
    val regionAny = VecInit(Seq.tabulate(regions max 1) { k =>
      if (regions == 0) false.B
      else newVal(p)((k + 1) * regionLanes * laneBits - 1, k * regionLanes * laneBits).orR
    }).asUInt
    when(last) {
      for (r <- 0 until nPorts) bank(p)(r).write(w, newVal(p))
      for (v <- lvt) v(rowIdx(w)) := p.U
      for (v <- summary; k <- 0 until regions) {
        val n   = words * regions
        val idx = w * regions.U + k.U
        v(if (n == 1) 0.U else idx.pad(log2Ceil(n))(log2Ceil(n) - 1, 0)) := regionAny(k)
      }
    }
    if (packedState) {
      val one = (1.U << w)(words - 1, 0) // this row in every plane
      lvtNext = lvtNext.zipWithIndex.map { case (plane, b) =>
        Mux(last, if ((p >> b & 1) == 1) plane | one else plane & ~one, plane)
      }
      summaryNext = summaryNext.zipWithIndex.map { case (plane, k) =>
        Mux(last, Mux(regionAny(k), plane | one, plane & ~one), plane)
      }
    }
    prevV(p) := last
    prevW(p) := w
    prevD(p) := newVal(p)
  }
  for ((r, v) <- lvtP.zip(lvtNext)) r         := v
  for ((r, v) <- summaryP.zip(summaryNext)) r := v
  io.busy := s1v.asUInt.orR || s2v.asUInt.orR

  // summary scan: a row is marked if any of its regions is; a window of scanWidth rows from scanRow, read as two
  // aligned 64-row words of the marks and a shift (many rows per cycle without a words-wide shifter)
  if (regions == 0) io.scanBits := 0.U
  else {
    val marks = summary match {
      case Some(v) =>
        VecInit(Seq.tabulate(words)(w => (0 until regions).map(k => v(w * regions + k)).reduce(_ || _))).asUInt
      case None => summaryP.reduce(_ | _) // region k of row w is bit w of plane k
    }
    val chunks = (words + 63) / 64 + 1 // one all-zero word past the end
    val padded = Cat(0.U((chunks * 64 - words).W), marks)
    require(scanWidth <= 65)
    if (chunks <= 2) io.scanBits := (padded >> io.scanRow)(scanWidth - 1, 0)
    else if (packedState) {
      val two = (padded >> Cat(io.scanRow >> 6, 0.U(6.W)))(127, 0)
      io.scanBits := (two >> io.scanRow(5, 0))(scanWidth - 1, 0)
    } else {
      val cw  = VecInit(Seq.tabulate(chunks)(i => padded(64 * i + 63, 64 * i)))
      val ib  = log2Ceil(chunks)
      val hi  = (io.scanRow >> 6).pad(ib)(ib - 1, 0)
      val two = Cat(cw(hi + 1.U), cw(hi))
      io.scanBits := (two >> io.scanRow(5, 0))(scanWidth - 1, 0)
    }
  }
}
