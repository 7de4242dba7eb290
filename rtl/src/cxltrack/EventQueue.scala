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
 * `overflow` pulses). A pop in the same cycle is applied before the pushes.
 */
class EventQueue(depthLog2: Int, nSrc: Int) extends Module {
  val depth = 1 << depthLog2
  val io = IO(new Bundle {
    val push     = Input(Vec(nSrc, Valid(new EventRec)))
    val pop      = Input(Bool())
    val head     = Output(new EventRec)
    val headSeq  = Output(UInt(32.W))
    val count    = Output(UInt((depthLog2 + 1).W))
    val dropped  = Output(UInt(32.W))
    val overflow = Output(Bool())
  })
  val recs    = Reg(Vec(depth, new EventRec))
  val seqs    = Reg(Vec(depth, UInt(32.W)))
  val head    = RegInit(0.U(depthLog2.W))
  val count   = RegInit(0.U((depthLog2 + 1).W))
  val seq     = RegInit(0.U(32.W))
  val dropped = RegInit(0.U(32.W))

  val popNow = io.pop && count =/= 0.U
  val head1  = Mux(popNow, head + 1.U, head)
  var cnt    = count - popNow.asUInt
  var s      = seq
  var drops  = 0.U(8.W)
  for (k <- 0 until nSrc) {
    val v    = io.push(k).valid
    val fits = cnt < depth.U
    when(v && fits) {
      val pos = (head1 +& cnt)(depthLog2 - 1, 0)
      recs(pos) := io.push(k).bits
      seqs(pos) := s
    }
    cnt = cnt + (v && fits).asUInt
    drops = drops + (v && !fits).asUInt
    s = s + v.asUInt
  }
  head  := head1
  count := cnt
  seq   := s
  val dsum = dropped +& drops
  dropped     := Mux(dsum(32), "hffffffff".U, dsum(31, 0))
  io.overflow := drops =/= 0.U
  val empty = count === 0.U
  io.head    := Mux(empty, 0.U.asTypeOf(new EventRec), recs(head))
  io.headSeq := Mux(empty, 0.U, seqs(head))
  io.count   := count
  io.dropped := dropped
}
