// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.util._

/**
 * Clock-domain crossings of the board wrapper. Every crossing is one of these three: a gray-coded asynchronous FIFO
 * (bus channels), a two-flop level synchroniser (status levels and handshakes) or a toggle synchroniser (pulses). The
 * Vivado constraints (fpga/au250/constraints/cdc.xdc) find their flops by the `cdc_sync` name prefix and bound the FIFO
 * paths with `set_max_delay -datapath_only`.
 */
object Cdc {

  /** Two flops in the destination domain (the implicit clock); the first is named `cdc_sync_*` for the constraints. */
  def level(in: Bool, init: Boolean = false): Bool = {
    val s0 = RegNext(in, init.B).suggestName("cdc_sync_0")
    RegNext(s0, init.B).suggestName("cdc_sync_1")
  }

  def levelU(in: UInt): UInt = {
    val s0 = RegNext(in).suggestName("cdc_sync_0")
    RegNext(s0).suggestName("cdc_sync_1")
  }
}

/**
 * A reset that asserts at once (asynchronously) and deasserts two edges after its source does, in the domain of
 * `clock`: the standard reset bridge. The output is a synchronous Bool for modules of that domain.
 */
class ResetSync extends RawModule {
  val clock = IO(Input(Clock()))
  val in    = IO(Input(Bool()))
  val out   = IO(Output(Bool()))
  withClockAndReset(clock, in.asAsyncReset) {
    val s0 = RegInit(true.B).suggestName("cdc_sync_rst_0")
    val s1 = RegInit(true.B).suggestName("cdc_sync_rst_1")
    s0  := false.B
    s1  := s0
    out := s1
  }
}

object ResetSync {
  def apply(clock: Clock, in: Bool): Bool = {
    val r = Module(new ResetSync)
    r.clock := clock
    r.in    := in
    r.out
  }
}

/**
 * A pulse in the source domain becomes a one-cycle pulse in the destination domain. Pulses closer together than the
 * synchroniser's latency (about three destination cycles) merge into one; callers use it for "something happened, look
 * at the state" (the interrupt line), where that is harmless.
 */
class PulseSync extends RawModule {
  val srcClock = IO(Input(Clock()))
  val srcReset = IO(Input(Bool()))
  val dstClock = IO(Input(Clock()))
  val dstReset = IO(Input(Bool()))
  val in       = IO(Input(Bool()))
  val out      = IO(Output(Bool()))
  val toggle = withClockAndReset(srcClock, srcReset) {
    val t = RegInit(false.B)
    when(in)(t := !t)
    t
  }
  withClockAndReset(dstClock, dstReset) {
    val s    = Cdc.level(toggle)
    val prev = RegNext(s, false.B)
    out := s =/= prev
  }
}

/**
 * Asynchronous FIFO: write side in `enqClock`, read side in `deqClock`, storage written in the write domain and read
 * combinationally in the read domain (LUT RAM on UltraScale+), pointers crossed in gray code through two flops. Both
 * resets must be asserted together (they come from the same sources through [[ResetSync]]s); a side that leaves reset
 * first sees the other's pointer at zero, which is consistent.
 */
class AsyncFifo[T <: Data](gen: T, depthLog2: Int = 3) extends RawModule {
  require(depthLog2 >= 2, "the full test compares the two top pointer bits")
  val depth    = 1 << depthLog2
  val enqClock = IO(Input(Clock()))
  val enqReset = IO(Input(Bool()))
  val deqClock = IO(Input(Clock()))
  val deqReset = IO(Input(Bool()))
  val enq      = IO(Flipped(Decoupled(gen)))
  val deq      = IO(Decoupled(gen))

  def toGray(b: UInt): UInt = b ^ (b >> 1)
  val cdcFifoRam            = Mem(depth, gen) // found by name in fpga/au250/constraints/cdc.xdc

  val wGray = Wire(UInt((depthLog2 + 1).W))
  val rGray = Wire(UInt((depthLog2 + 1).W))

  withClockAndReset(enqClock, enqReset) {
    val wBin   = RegInit(0.U((depthLog2 + 1).W))
    val wG     = RegInit(0.U((depthLog2 + 1).W))
    val rGSync = Cdc.levelU(rGray)
    // full: the read pointer is one lap behind (top two gray bits inverted, the rest equal)
    val full = wG === Cat(~rGSync(depthLog2, depthLog2 - 1), rGSync(depthLog2 - 2, 0))
    enq.ready := !full
    when(enq.fire) {
      cdcFifoRam.write(wBin(depthLog2 - 1, 0), enq.bits)
      val next = wBin + 1.U
      wBin := next
      wG   := toGray(next)
    }
    wGray := wG
  }

  withClockAndReset(deqClock, deqReset) {
    val rBin   = RegInit(0.U((depthLog2 + 1).W))
    val rG     = RegInit(0.U((depthLog2 + 1).W))
    val wGSync = Cdc.levelU(wGray)
    deq.valid := rG =/= wGSync
    deq.bits  := cdcFifoRam.read(rBin(depthLog2 - 1, 0))
    when(deq.fire) {
      val next = rBin + 1.U
      rBin := next
      rG   := toGray(next)
    }
    rGray := rG
  }
}

object AsyncFifo {

  /** A crossing of one channel: `src` (in the enqueue domain) to the returned Decoupled (in the dequeue domain). */
  def apply[T <: Data](
      src: DecoupledIO[T],
      enqClock: Clock,
      enqReset: Bool,
      deqClock: Clock,
      deqReset: Bool,
      depthLog2: Int = 3
  ): DecoupledIO[T] = {
    val f = Module(new AsyncFifo(chiselTypeOf(src.bits), depthLog2))
    f.enqClock := enqClock
    f.enqReset := enqReset
    f.deqClock := deqClock
    f.deqReset := deqReset
    f.enq <> src
    f.deq
  }
}
