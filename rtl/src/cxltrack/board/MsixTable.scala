// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.util._

/**
 * The MSI-X table and pending-bit array of function 1 (the IP's "MSI-X external" mode: the table lives in a user BAR,
 * the IP sends the message the user hands it on `cfg_interrupt_msix_*`). Table at offset 0 (16 bytes per vector), PBA
 * at `pbaOffset`. Per the PCIe base specification: a vector's event while the vector, the function or MSI-X is
 * masked/disabled (or bus mastering is off) sets its pending bit; the message goes out once nothing masks it, and the
 * pending bit clears when the IP reports it sent (or failed). Reset: every vector masked, addresses and data 0.
 */
class MsixTable(vectors: Int, addrBits: Int, pbaOffset: Int) extends Module {
  require(vectors >= 1 && vectors <= 64)
  val port    = IO(Flipped(new MsixPort(addrBits)))
  val trigger = IO(Input(UInt(vectors.W))) // one-cycle events, one bit per vector
  val enable  = IO(Input(Bool()))          // MSI-X enable of the function (config space)
  val fmask   = IO(Input(Bool()))          // function mask (config space)
  val busMstr = IO(Input(Bool()))          // bus master enable
  val clear   = IO(Input(Bool()))          // function-level reset
  // the IP's MSI-X interface
  val msixInt     = IO(Output(Bool()))
  val msixAddress = IO(Output(UInt(64.W)))
  val msixData    = IO(Output(UInt(32.W)))
  val msixSent    = IO(Input(Bool()))
  val msixFail    = IO(Input(Bool()))

  val addrLo  = RegInit(VecInit(Seq.fill(vectors)(0.U(32.W))))
  val addrHi  = RegInit(VecInit(Seq.fill(vectors)(0.U(32.W))))
  val data    = RegInit(VecInit(Seq.fill(vectors)(0.U(32.W))))
  val masked  = RegInit(VecInit(Seq.fill(vectors)(true.B)))
  val pending = RegInit(0.U(vectors.W))

  def merge(old: UInt, v: UInt, be: UInt): UInt =
    Cat((0 until 4).reverse.map(b => Mux(be(b), v(8 * b + 7, 8 * b), old(8 * b + 7, 8 * b))))

  val tableBytes = 16 * vectors
  val wVec       = port.wr.addr >> 4
  val wDw        = port.wr.addr(3, 2)
  when(port.wr.valid && port.wr.addr < tableBytes.U) {
    for (v <- 0 until vectors) {
      when(wVec === v.U) {
        switch(wDw) {
          is(0.U)(addrLo(v) := merge(addrLo(v), port.wr.data, port.wr.be) & "hfffffffc".U) // DWORD-aligned
          is(1.U)(addrHi(v) := merge(addrHi(v), port.wr.data, port.wr.be))
          is(2.U)(data(v)   := merge(data(v), port.wr.data, port.wr.be))
          is(3.U)(when(port.wr.be(0))(masked(v) := port.wr.data(0)))
        }
      }
    }
  }

  val rVec = (port.rdAddr >> 4)((log2Ceil(vectors) max 1) - 1, 0)
  val rDw  = port.rdAddr(3, 2)
  val rEntry = Mux(
    rDw === 0.U,
    addrLo(rVec),
    Mux(rDw === 1.U, addrHi(rVec), Mux(rDw === 2.U, data(rVec), masked(rVec).asUInt))
  )
  val pbaDw = (port.rdAddr - pbaOffset.U) >> 2
  port.rdData := Mux(
    port.rdAddr < tableBytes.U,
    rEntry,
    Mux(
      port.rdAddr >= pbaOffset.U && pbaDw < 2.U,
      (pending.pad(64) >> Cat(pbaDw(0), 0.U(5.W)))(31, 0),
      0.U
    )
  )

  // send the lowest pending vector that nothing masks; one message in flight at a time
  val inFlight = RegInit(false.B)
  val sendable = pending & ~masked.asUInt & Fill(vectors, enable && !fmask && busMstr)
  val sel      = PriorityEncoder(sendable)
  val cur      = RegInit(0.U(log2Ceil(vectors).max(1).W))
  val fire     = !inFlight && sendable =/= 0.U
  msixInt     := RegNext(fire, false.B)
  msixAddress := RegNext(Cat(addrHi(sel), addrLo(sel)))
  msixData    := RegNext(data(sel))
  when(fire) {
    inFlight := true.B
    cur      := sel
  }
  val done = inFlight && (msixSent || msixFail)
  when(done)(inFlight := false.B)
  pending             := (pending & ~Mux(done, UIntToOH(cur, vectors), 0.U)) | trigger

  when(clear) {
    addrLo.foreach(_ := 0.U)
    addrHi.foreach(_ := 0.U)
    data.foreach(_ := 0.U)
    masked.foreach(_ := true.B)
    pending  := 0.U
    inFlight := false.B
  }
}
