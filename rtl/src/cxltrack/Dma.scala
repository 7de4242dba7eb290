// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** A DMA transfer: `bytes` (a multiple of 8, at least 8) to host bus address `addr` (64-byte aligned). */
class DmaStart(addrBits: Int, lenBits: Int) extends Bundle {
  val addr  = UInt(addrBits.W)
  val bytes = UInt(lenBits.W)
}

/**
 * The DMA writer (docs/spec.md 5.3, docs/rtl-notes.md "DMA harvest"): one transfer at a time, its data as a stream of
 * 64-byte beats in address order (`data`, back-pressured), written as INCR bursts of 64-byte beats that never cross a 4
 * KiB boundary (AXI4 forbids it; at a 64-byte aligned start the longest burst is 64 beats). The last beat of a length
 * that is not a multiple of 64 bytes has WSTRB for its bytes only: nothing outside [addr, addr + bytes) is written. Up
 * to `maxBursts` bursts are outstanding (issued AW, no B yet), enough to cover the host's write latency at one beat per
 * cycle. W follows AW: a burst's beats go out only after its AW (some interconnects, and the PCIe requester bridge,
 * take data for an address they have seen only).
 *
 * `done` pulses once, in the cycle the transfer's last B response arrives (every beat consumed, every burst answered),
 * with `error` set if any B was SLVERR or DECERR. All bursts are still issued after an error: the command engine's
 * harvest steps already ran and their data is consumed in any case; the host is told the buffer is partial.
 */
class DmaWriter(addrBits: Int, lenBits: Int, maxBursts: Int = 16, idBits: Int = 1) extends Module {
  val io = IO(new Bundle {
    val start = Flipped(Valid(new DmaStart(addrBits, lenBits)))
    val data  = Flipped(Decoupled(UInt(512.W)))
    val done  = Output(Valid(Bool())) // bits: error
    val idle  = Output(Bool())
    val axi   = new Axi4Write(addrBits, 512, idBits)
  })
  val beatBits = lenBits - 6 + 1

  // AW side: next burst's address and the beats still to announce
  val busy     = RegInit(false.B)
  val awAddr   = RegInit(0.U(addrBits.W))
  val awLeft   = RegInit(0.U(beatBits.W)) // beats not yet covered by an AW
  val wLeft    = RegInit(0.U(beatBits.W)) // beats not yet sent on W
  val lastStrb = RegInit(0.U(64.W))       // WSTRB of the transfer's last beat
  val inFlight = RegInit(0.U(log2Ceil(maxBursts + 1).W))
  val error    = RegInit(false.B)
  // burst lengths (beats - 1) announced on AW, in order, for the W side's WLAST
  val lens = Module(new Queue(UInt(6.W), maxBursts))

  when(io.start.valid) {
    val b     = io.start.bits.bytes
    val beats = (b +& 63.U) >> 6
    busy     := true.B
    awAddr   := io.start.bits.addr
    awLeft   := beats
    wLeft    := beats
    lastStrb := Mux(b(5, 0) === 0.U, Fill(64, 1.U(1.W)), (1.U(65.W) << b(5, 0)) - 1.U)
    error    := false.B
  }

  // a burst: up to the next 4 KiB boundary, at most the beats left
  val toBoundary = 64.U(7.W) - awAddr.pad(12)(11, 6)
  val burstBeats = Mux(awLeft < toBoundary, awLeft, toBoundary)(6, 0)
  val bFire      = io.axi.bvalid && io.axi.bready
  val awFire     = io.axi.awvalid && io.axi.awready
  io.axi.awid       := 0.U
  io.axi.awaddr     := awAddr
  io.axi.awlen      := burstBeats - 1.U
  io.axi.awsize     := 6.U       // 64 bytes per beat
  io.axi.awburst    := Axi.INCR.U
  io.axi.awlock     := false.B
  io.axi.awcache    := "b0010".U // normal non-cacheable non-bufferable: the host must see the data at B
  io.axi.awprot     := 0.U
  io.axi.awvalid    := busy && awLeft =/= 0.U && inFlight =/= maxBursts.U && lens.io.enq.ready
  lens.io.enq.valid := awFire
  lens.io.enq.bits  := burstBeats - 1.U
  when(awFire) {
    awAddr := awAddr + (burstBeats << 6)
    awLeft := awLeft - burstBeats
  }
  inFlight := inFlight + awFire.asUInt - bFire.asUInt

  // W side: the beats of the bursts announced, WLAST at each burst's end
  val beat  = RegInit(0.U(6.W))
  val wFire = io.axi.wvalid && io.axi.wready
  io.axi.wvalid     := lens.io.deq.valid && io.data.valid
  io.data.ready     := lens.io.deq.valid && io.axi.wready
  io.axi.wdata      := io.data.bits
  io.axi.wlast      := beat === lens.io.deq.bits
  io.axi.wstrb      := Mux(wLeft === 1.U, lastStrb, Fill(64, 1.U(1.W)))
  lens.io.deq.ready := wFire && io.axi.wlast
  when(wFire) {
    wLeft := wLeft - 1.U
    beat  := Mux(io.axi.wlast, 0.U, beat + 1.U)
  }

  // B: any SLVERR (2) or DECERR (3) fails the transfer
  io.axi.bready                        := true.B
  when(bFire && io.axi.bresp(1))(error := true.B)
  val finished = busy && awLeft === 0.U && wLeft === 0.U && inFlight === 1.U && bFire && !lens.io.deq.valid
  io.done.valid       := finished
  io.done.bits        := error || io.axi.bresp(1)
  when(finished)(busy := false.B)
  io.idle             := !busy
}
