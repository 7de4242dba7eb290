// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

class EventRec extends Bundle {
  val typ   = UInt(8.W)
  val index = UInt(16.W)
  val arg   = UInt(64.W)
}

/**
 * Event queue (docs/spec.md section 8) with `nSrc` push ports per cycle. Sources are served in port order, each
 * producing the next SEQ; an event that finds the queue full is dropped (its SEQ is consumed, `dropped` counts it,
 * `overflow` pulses). A pop in the same cycle is applied before the pushes. `lose` counts events known to be lost
 * without a record (a BAT group made all-invalid in DRAM form, docs/spec.md section 12): each takes a SEQ after the
 * cycle's pushes and counts as dropped, so the host sees the gap it resynchronises on.
 *
 * Storage: the pushes accepted in one cycle occupy consecutive positions, so with at least as many banks as can be
 * accepted in a cycle (`min(depth, nSrc)`, rounded up to a power of two) each lands in a bank of its own. A bank is a
 * one-write-port memory with an asynchronous read (LUT RAM), fed by one `nSrc`:1 multiplexer, rather than one such
 * multiplexer per entry.
 */
class EventQueue(depthLog2: Int, nSrc: Int) extends Module {
  val depth = 1 << depthLog2
  val io = IO(new Bundle {
    val push     = Input(Vec(nSrc, Valid(new EventRec)))
    val pop      = Input(Bool())
    val lose     = Input(UInt(2.W))
    val head     = Output(new EventRec)
    val headSeq  = Output(UInt(32.W))
    val count    = Output(UInt((depthLog2 + 1).W))
    val dropped  = Output(UInt(32.W))
    val overflow = Output(Bool())
  })
  class Entry extends Bundle {
    val rec = new EventRec
    val seq = UInt(32.W)
  }
  val bankLog2 = log2Ceil(nSrc) min depthLog2
  val nBanks   = 1 << bankLog2
  val rowBits  = (depthLog2 - bankLog2) max 1
  val banks    = Seq.fill(nBanks)(Mem(1 << (depthLog2 - bankLog2), new Entry))
  val head     = RegInit(0.U(depthLog2.W))
  val count    = RegInit(0.U((depthLog2 + 1).W))
  val seq      = RegInit(0.U(32.W))
  val dropped  = RegInit(0.U(32.W))

  val popNow = io.pop && count =/= 0.U
  val head1  = Mux(popNow, head + 1.U, head)
  val cnt0   = count - popNow.asUInt
  val space  = depth.U - cnt0
  val tail   = (head1 +& cnt0)(depthLog2 - 1, 0)
  // rank of each push among this cycle's pushes (port order)
  val rank   = io.push.map(_.valid.asUInt).scanLeft(0.U(log2Ceil(nSrc + 1).W))(_ +& _)
  val total  = rank.last
  val accept = io.push.indices.map(k => io.push(k).valid && rank(k) < space)
  val pos    = io.push.indices.map(k => (tail +& rank(k))(depthLog2 - 1, 0))
  for (b <- 0 until nBanks) {
    val sel = io.push.indices.map(k => accept(k) && (if (bankLog2 == 0) true.B else pos(k)(bankLog2 - 1, 0) === b.U))
    val e   = Wire(new Entry)
    e.rec := Mux1H(sel, io.push.map(_.bits))
    e.seq := Mux1H(sel, rank.take(nSrc).map(r => seq + r))
    val row = Mux1H(sel, pos.map(p => (p >> bankLog2).pad(rowBits)(rowBits - 1, 0)))
    when(sel.reduce(_ || _))(banks(b).write(row, e))
  }
  val nAcc  = Mux(total > space, space, total)
  val drops = total - nAcc +& io.lose
  head  := head1
  count := cnt0 + nAcc
  seq   := seq + total + io.lose
  val dsum = dropped +& drops
  dropped     := Mux(dsum(32), "hffffffff".U, dsum(31, 0))
  io.overflow := drops =/= 0.U
  val empty = count === 0.U
  val hRow  = (head >> bankLog2).pad(rowBits)(rowBits - 1, 0)
  val hBank = if (bankLog2 == 0) 0.U else head(bankLog2 - 1, 0)
  val headE = VecInit(banks.map(_.read(hRow)))(hBank)
  io.head    := Mux(empty, 0.U.asTypeOf(new EventRec), headE.rec)
  io.headSeq := Mux(empty, 0.U, headE.seq)
  io.count   := count
  io.dropped := dropped
}
