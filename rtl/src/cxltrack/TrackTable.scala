// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** Operations a [[TrackTable]] port applies to the 64-lane word it addresses. */
object TableOp {
  // the code of an operation is its position here (block.json gives the list to the block bench)
  val Names = Seq("READ", "ZERO", "HALVE", "SET", "CLEAR", "INC")
  val READ  = Names.indexOf("READ")  // no change (the old word is still returned)
  val ZERO  = Names.indexOf("ZERO")  // every lane := 0
  val HALVE = Names.indexOf("HALVE") // every lane := lane >> 1
  val SET   = Names.indexOf("SET")   // lane := 1
  val CLEAR = Names.indexOf("CLEAR") // lane := 0
  val INC   = Names.indexOf("INC")   // lane := min(lane + 1, max)
  val Bits  = 3
  require(Names.length <= (1 << Bits))
  def max(laneBits: Int): BigInt = (BigInt(1) << laneBits) - 1
}

class TableReq(val wordBits: Int) extends Bundle {
  val word = UInt(wordBits.W)
  val lane = UInt(6.W)
  val op   = UInt(TableOp.Bits.W)
}

/**
 * A per-page table of `words` x 64 lanes of `laneBits` bits with `nPorts` read-modify-write ports, every port able to
 * take one operation per cycle on any word, without stalls (docs/rtl-notes.md, "Tables").
 *
 * Timing: a request presented in cycle t is registered (stage 1, RAM read) and executed in cycle t + 2 (stage 2), where
 * `resp(p)` carries the word as it was before port p's operation. All requests of one cycle are executed in port order,
 * so a port sees the effect of lower ports on the same word; requests of later cycles see everything earlier. That is
 * exactly the sequential semantics of the reference model with the cycle's requests serialised in port order, so the
 * core sets the same-cycle order of its sources (docs/rtl-notes.md, "Tables") by choosing the port order.
 *
 * Implementation: a live-value table (LVT) multi-port memory. Port p writes its own bank; every bank has one replica
 * per reading port (simple dual-port RAMs: nPorts x nPorts of them); a per-word LVT in flip-flops says which bank holds
 * the word's latest value, or that the word is all zero (the reset state, so no clearing sweep is needed). Several
 * requests to one word in one cycle are combined, and only the last of them writes. A word written in the previous
 * cycle is forwarded from a register, because the RAM read of that cycle could not see it.
 */
class TrackTable(val words: Int, val laneBits: Int, val nPorts: Int, name: String = "") extends Module {
  override def desiredName = if (name.nonEmpty) name else s"TrackTable_w${words}_l${laneBits}_p$nPorts"
  require(words >= 1 && laneBits >= 1 && laneBits <= 8 && nPorts >= 1)
  val wordBits  = log2Ceil(words) max 1
  val wordWidth = 64 * laneBits
  val io = IO(new Bundle {
    val req  = Input(Vec(nPorts, Valid(new TableReq(wordBits))))
    val resp = Output(Vec(nPorts, Valid(UInt(wordWidth.W))))
    val done = Output(Vec(nPorts, new TableReq(wordBits))) // the request resp(p) answers
    val busy = Output(Bool())                              // a request is in stage 1 or 2
  })

  private def lanes(w: UInt): Seq[UInt] = (0 until 64).map(j => w((j + 1) * laneBits - 1, j * laneBits))
  // lane by lane, so that a chain of ports on one word costs a few logic levels per port (no 64:1 lane mux)
  private def apply(old: UInt, r: TableReq): UInt = {
    val max = TableOp.max(laneBits).U(laneBits.W)
    val one = VecInit(lanes(old).zipWithIndex.map { case (v, j) =>
      val here = r.lane === j.U
      MuxLookup(r.op, v)(
        Seq(
          TableOp.ZERO.U  -> 0.U(laneBits.W),
          TableOp.HALVE.U -> (v >> 1).pad(laneBits),
          TableOp.SET.U   -> Mux(here, 1.U(laneBits.W), v),
          TableOp.CLEAR.U -> Mux(here, 0.U(laneBits.W), v),
          TableOp.INC.U   -> Mux(here && v =/= max, v + 1.U, v)
        )
      )
    })
    one.asUInt
  }

  // bank(p)(r): written by port p, read by port r
  val bank = Seq.fill(nPorts, nPorts)(SyncReadMem(words, UInt(wordWidth.W)))
  val ZERO = nPorts.U // LVT value: the word is all zero
  val lvt  = RegInit(VecInit(Seq.fill(words)(ZERO.pad(log2Ceil(nPorts + 1)))))

  // stage 1: registered requests, RAM reads
  val noReq = VecInit(Seq.fill(nPorts)(false.B))
  val s1v   = RegNext(VecInit(io.req.map(_.valid)), noReq)
  val s1    = RegNext(VecInit(io.req.map(_.bits)))
  val rd    = Seq.tabulate(nPorts, nPorts)((p, r) => bank(p)(r).read(s1(r).word, s1v(r)))
  // The LVT is read in stage 1 too: it differs from its stage-2 value only for words written in this cycle, and
  // those are forwarded in stage 2 anyway. This keeps the words-to-1 LVT multiplexer out of stage 2.
  val src2 = RegNext(VecInit(s1.map(r => lvt(r.word))))

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
    // the latest lower port of this cycle on the same word, else the stored word
    val old = (0 until r).foldLeft(base) { (acc, q) =>
      Mux(s2v(q) && s2(q).word === w, newVal(q), acc)
    }
    newVal(r)        := apply(old, s2(r))
    io.resp(r).valid := s2v(r)
    io.resp(r).bits  := old
    io.done(r)       := s2(r)
  }
  for (p <- 0 until nPorts) {
    val w    = s2(p).word
    val last = s2v(p) && !(p + 1 until nPorts).map(q => s2v(q) && s2(q).word === w).foldLeft(false.B)(_ || _)
    when(last) {
      for (r <- 0 until nPorts) bank(p)(r).write(w, newVal(p))
      lvt(w) := p.U
    }
    prevV(p) := last
    prevW(p) := w
    prevD(p) := newVal(p)
  }
  io.busy := s1v.asUInt.orR || s2v.asUInt.orR
}
