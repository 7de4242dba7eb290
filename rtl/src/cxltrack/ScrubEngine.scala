// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** Scrub write request: one 4 KiB burst (64 beats of 64 bytes, INCR) at `addr`. */
class ScrubAw(memAddrBits: Int) extends Bundle {
  val addr = UInt(memAddrBits.W)
}

/** Scrub write data beat: zero data, all strobes; `last` on the 64th beat of a burst. */
class ScrubW extends Bundle {
  val last = Bool()
}

/**
 * The scrub engine (docs/spec.md section 7): a FIFO of released chunks (`chunks` entries, so every chunk can be in it
 * at once) and the zero-fill burst engine. Chunks are scrubbed one at a time in release order; a chunk of
 * `2^chunkShift` bytes is written as `2^(chunkShift - 12)` bursts of 4 KiB (64 beats of 64 bytes, zero data, every
 * strobe), at most 4 of them outstanding (AW accepted, B not yet counted).
 *
 * The caller (the write-path arbiter of [[CxlTrackCore]]) owns AXI: `aw` and `w` are requests with AXI valid/ready
 * semantics (valid held, payload stable until ready), carrying only what varies (address, last); W of the next burst is
 * offered independently of its AW (AXI allows either order; the core's arbiter pairs them per grant). `bDone` pulses
 * once per answered scrub burst, in issue order; `endPage` is the first page of the burst being answered (valid with
 * `bDone`). `finish` is high for one cycle, with the chunk, once the chunk's last B is counted and the table effects of
 * that write end (two cycles later in the core) are past, so that SCRUB_DONE follows their events.
 *
 * The chunk owner table and the SCRUB_DONE event stay in the core.
 */
class ScrubEngine(chunks: Int, chunkShift: Int, pageShift: Int, pageBits: Int, memAddrBits: Int) extends Module {
  require(chunkShift >= 12 && pageShift >= 12 && chunkShift >= pageShift)
  val chunkBits = log2Ceil(chunks) max 1
  val io = IO(new Bundle {
    val enq     = Flipped(Decoupled(UInt(chunkBits.W))) // CHUNK_RELEASE: never full in the core (at most `chunks`)
    val aw      = Decoupled(new ScrubAw(memAddrBits))
    val w       = Decoupled(new ScrubW)
    val bDone   = Input(Bool())
    val endPage = Output(UInt(pageBits.W))
    val finish  = Valid(UInt(chunkBits.W))
    val idle    = Output(Bool())                        // nothing queued, no chunk in flight
  })
  def fit(x: UInt, w: Int): UInt = x.pad(w)(w - 1, 0)

  val queue = Module(new Queue(UInt(chunkBits.W), chunks))
  queue.io.enq <> io.enq
  val blocksPerChunk = 1 << (chunkShift - 12)
  val blkBits        = log2Ceil(blocksPerChunk + 1)
  val scActive       = RegInit(false.B)
  val scChunk        = RegInit(0.U(chunkBits.W))
  val scIssued       = RegInit(0.U(blkBits.W)) // bursts whose AW was accepted
  val scWBlk         = RegInit(0.U(blkBits.W)) // bursts whose data was sent
  val scBeat         = RegInit(0.U(6.W))
  val scBDone        = RegInit(0.U(blkBits.W)) // bursts answered
  queue.io.deq.ready := !scActive
  when(!scActive && queue.io.deq.valid) {
    scActive := true.B
    scChunk  := queue.io.deq.bits
    scIssued := 0.U
    scWBlk   := 0.U
    scBeat   := 0.U
    scBDone  := 0.U
  }
  val chunkBase = (scChunk << (chunkShift - 12)).asUInt // in 4 KiB blocks
  io.aw.valid                               := scActive && scIssued =/= blocksPerChunk.U && (scIssued - scBDone) < 4.U
  io.aw.bits.addr                           := fit((chunkBase + scIssued) << 12, memAddrBits)
  io.w.valid                                := scActive && scWBlk =/= blocksPerChunk.U
  io.w.bits.last                            := scBeat === 63.U
  when(io.aw.valid && io.aw.ready)(scIssued := scIssued + 1.U)
  when(io.w.valid && io.w.ready) {
    scBeat                      := scBeat + 1.U
    when(io.w.bits.last)(scWBlk := scWBlk + 1.U)
  }
  io.endPage             := fit((chunkBase + scBDone) >> (pageShift - 12), pageBits)
  when(io.bDone)(scBDone := scBDone + 1.U)
  // the finish waits for the table effects of the chunk's last write end, which the core applies two cycles after it
  val scEndRecent = ShiftRegister(io.bDone, 1) || ShiftRegister(io.bDone, 2)
  io.finish.valid                := scActive && scBDone === blocksPerChunk.U && !scEndRecent
  io.finish.bits                 := scChunk
  when(io.finish.valid)(scActive := false.B)
  io.idle                        := !scActive && !queue.io.deq.valid
}
