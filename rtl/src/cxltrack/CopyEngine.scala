// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** A copy read request: one INCR burst of `len + 1` 64-byte beats at `addr` in device memory. */
class CopyAr(memAddrBits: Int) extends Bundle {
  val addr = UInt(memAddrBits.W)
  val len  = UInt(8.W)
}

/**
 * The CHUNK_COPY engine's read side (docs/spec.md 7.1, docs/rtl-notes.md "CHUNK_COPY"): reads one chunk of device
 * memory in address order as INCR bursts of `burstBeats` 64-byte beats (`ar`, arbitrated onto the memory port's read
 * channel by [[DataPath]], where the CXL side has priority) and queues the beats (`r`) in a FIFO of `fifoBeats` beats
 * that feeds the DMA writer in stream mode (`data`, `avail`, `end`).
 *
 * Credits: a burst is requested only when the FIFO has room for its beats and for every beat already requested and not
 * yet arrived, so the engine accepts every R beat in the cycle it comes (`r` has no READY): a stalled host side (h_axi)
 * stops the reads, never the memory's R channel, which the CXL side's reads share. Once `ar` is valid it stays valid
 * with the same address until accepted (the free room only grows while no burst is requested).
 *
 * `start` (the chunk) begins a copy; `end` is high from the cycle the chunk's last beat is in the FIFO until the next
 * `start` (the writer finishes once it is up, the FIFO is empty and the last B is back); `idle` when no copy runs and
 * the FIFO is empty. The reads are not requests of the device: they have no tracking effect.
 */
class CopyEngine(chunks: Int, chunkShift: Int, memAddrBits: Int, burstBeats: Int = 16, fifoBeats: Int = 64)
    extends Module {
  require(chunkShift >= 12, "a chunk is at least 4 KiB")
  require(isPow2(burstBeats) && burstBeats <= 64, "bursts within 4 KiB")
  require(fifoBeats >= burstBeats && fifoBeats < 256, "the FIFO holds a burst; avail is 8 bits")
  val chunkBits  = log2Ceil(chunks) max 1
  val totalBeats = 1 << (chunkShift - 6)
  val bursts     = totalBeats / burstBeats
  val io = IO(new Bundle {
    val start = Flipped(Valid(UInt(chunkBits.W)))
    val ar    = Decoupled(new CopyAr(memAddrBits))
    val r     = Flipped(Valid(UInt(512.W))) // beats of the copy's bursts, in order; always accepted
    val data  = Decoupled(UInt(512.W))      // toward the DMA writer, in address order
    val avail = Output(UInt(8.W))           // beats in the FIFO (the writer's stream mode announces only those)
    val end   = Output(Bool())              // every beat of the chunk has entered the FIFO
    val idle  = Output(Bool())
  })

  val active   = RegInit(false.B)                         // reads still to request or to arrive
  val chunk    = RegInit(0.U(chunkBits.W))
  val issued   = RegInit(0.U(log2Ceil(bursts + 1).W))     // bursts whose AR was accepted
  val received = RegInit(0.U(log2Ceil(totalBeats + 1).W)) // beats arrived
  val fifo     = Module(new Queue(UInt(512.W), fifoBeats))
  when(io.start.valid) {
    active   := true.B
    chunk    := io.start.bits
    issued   := 0.U
    received := 0.U
  }

  val requested   = issued * burstBeats.U
  val outstanding = requested - received
  val room        = fifo.io.count +& outstanding +& burstBeats.U <= fifoBeats.U
  val base        = (chunk << chunkShift).asUInt
  io.ar.valid             := active && issued =/= bursts.U && room
  io.ar.bits.addr         := (base + (issued << (log2Ceil(burstBeats) + 6)))(memAddrBits - 1, 0)
  io.ar.bits.len          := (burstBeats - 1).U
  when(io.ar.fire)(issued := issued + 1.U)

  fifo.io.enq.valid := io.r.valid
  fifo.io.enq.bits  := io.r.bits
  // no R beat ever finds the FIFO full (the credits above); the block bench checks it (sim/tb/blocks/test_copy_engine.py)
  when(io.r.valid) {
    val n = received + 1.U
    received                        := n
    when(n === totalBeats.U)(active := false.B)
  }

  io.data <> fifo.io.deq
  io.avail := fifo.io.count
  io.end   := !active
  io.idle  := !active && !fifo.io.deq.valid
}
