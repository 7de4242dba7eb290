// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * A DMA transfer: `bytes` (a multiple of 8, at least 8) to host bus address `addr` (64-byte aligned). With `stream` the
 * length is not known at the start (a list harvest, docs/spec.md 5.4): `bytes` is ignored and the transfer is every
 * beat the source hands over until it raises `end`, each with its own WSTRB.
 */
class DmaStart(addrBits: Int, lenBits: Int) extends Bundle {
  val addr   = UInt(addrBits.W)
  val bytes  = UInt(lenBits.W)
  val stream = Bool()
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
 *
 * Stream mode (`start.bits.stream`): the source queue says how many beats it holds (`avail`); an AW announces only
 * beats already there (up to the 4 KiB boundary), so a burst's W beats never wait for data that may not come, and the
 * length of the whole transfer need not be known. It waits until `streamBurst` beats are there (or the 4 KiB boundary,
 * or `end`): with one-beat bursts the outstanding-burst limit, not the port, would set the rate (16 beats per B
 * latency). `strb` is the WSTRB of the beat on `data`. `end` says that no more beats will be added (some may still be
 * in the source); once it is up and every beat is sent and answered, `done` pulses; a stream of no beats writes nothing
 * and is done at `end`.
 */
class DmaWriter(addrBits: Int, lenBits: Int, maxBursts: Int = 16, idBits: Int = 1, streamBurst: Int = 16)
    extends Module {
  val io = IO(new Bundle {
    val start = Flipped(Valid(new DmaStart(addrBits, lenBits)))
    val data  = Flipped(Decoupled(UInt(512.W)))
    val done  = Output(Valid(Bool())) // bits: error
    val idle  = Output(Bool())
    val axi   = new Axi4Write(addrBits, 512, idBits)
    // stream mode: the source's fill level, the beat's WSTRB, no more beats
    val avail = Input(UInt(8.W))
    val strb  = Input(UInt(64.W))
    val end   = Input(Bool())
  })
  val beatBits = lenBits - 6 + 1

  // AW side: next burst's address and the beats still to announce
  val busy      = RegInit(false.B)
  val awAddr    = RegInit(0.U(addrBits.W))
  val awLeft    = RegInit(0.U(beatBits.W)) // beats not yet covered by an AW
  val wLeft     = RegInit(0.U(beatBits.W)) // beats not yet sent on W
  val lastStrb  = RegInit(0.U(64.W))       // WSTRB of the transfer's last beat
  val inFlight  = RegInit(0.U(log2Ceil(maxBursts + 1).W))
  val error     = RegInit(false.B)
  val stream    = RegInit(false.B)
  val announced = RegInit(0.U(8.W))        // beats covered by an AW and not yet sent on W
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
    stream   := io.start.bits.stream
    when(io.start.bits.stream) {
      awLeft := 0.U
      wLeft  := 0.U
    }
  }

  // a burst: up to the next 4 KiB boundary, at most the beats left
  val toBoundary  = 64.U(7.W) - awAddr.pad(12)(11, 6)
  val unannounced = io.avail - announced // stream: beats in the source that no AW covers yet
  val streamGo    = unannounced >= streamBurst.U || unannounced >= toBoundary || io.end
  val toAnnounce  = Mux(stream, Mux(streamGo, unannounced, 0.U), awLeft)
  // AXI: an AW's payload stays as presented until accepted. In stream mode the source may add beats while the AW waits
  // (unannounced grows), so the length first presented is held (the AW's VALID itself cannot drop meanwhile: the beats
  // to announce, the free burst slots and the length FIFO's room only grow until it is accepted)
  val awStalled  = RegInit(false.B)
  val heldBeats  = RegInit(0.U(7.W))
  val burstBeats = Mux(awStalled, heldBeats, Mux(toAnnounce < toBoundary, toAnnounce, toBoundary)(6, 0))
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
  io.axi.awvalid    := busy && toAnnounce =/= 0.U && inFlight =/= maxBursts.U && lens.io.enq.ready
  lens.io.enq.valid := awFire
  lens.io.enq.bits  := burstBeats - 1.U
  when(awFire) {
    awAddr               := awAddr + (burstBeats << 6)
    when(!stream)(awLeft := awLeft - burstBeats)
  }
  inFlight  := inFlight + awFire.asUInt - bFire.asUInt
  awStalled := io.axi.awvalid && !io.axi.awready
  heldBeats := burstBeats

  // W side: the beats of the bursts announced, WLAST at each burst's end
  val beat  = RegInit(0.U(6.W))
  val wFire = io.axi.wvalid && io.axi.wready
  io.axi.wvalid     := lens.io.deq.valid && io.data.valid
  io.data.ready     := lens.io.deq.valid && io.axi.wready
  io.axi.wdata      := io.data.bits
  io.axi.wlast      := beat === lens.io.deq.bits
  io.axi.wstrb      := Mux(stream, io.strb, Mux(wLeft === 1.U, lastStrb, Fill(64, 1.U(1.W))))
  lens.io.deq.ready := wFire && io.axi.wlast
  when(wFire) {
    when(!stream)(wLeft := wLeft - 1.U)
    beat                := Mux(io.axi.wlast, 0.U, beat + 1.U)
  }
  announced := announced + Mux(awFire, burstBeats, 0.U) - wFire.asUInt

  // B: any SLVERR (2) or DECERR (3) fails the transfer
  io.axi.bready                        := true.B
  when(bFire && io.axi.bresp(1))(error := true.B)
  val lastB = inFlight === 1.U && bFire
  val finished = Mux(
    stream,
    // every beat handed over and sent, every burst answered (none at all for an empty stream)
    busy && io.end && !io.data.valid && !lens.io.deq.valid && (inFlight === 0.U || lastB),
    busy && awLeft === 0.U && wLeft === 0.U && lastB && !lens.io.deq.valid
  )
  io.done.valid       := finished
  io.done.bits        := error || (bFire && io.axi.bresp(1))
  when(finished)(busy := false.B)
  io.idle             := !busy
}
