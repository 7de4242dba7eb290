// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.util._
import cxltrack.{Axi4, AxiLite}

/** The payloads of the five AXI channels, for the FIFOs of a crossing. */
class AxiAddr(val addrBits: Int, val idBits: Int) extends Bundle {
  val id    = UInt(idBits.W)
  val addr  = UInt(addrBits.W)
  val len   = UInt(8.W)
  val size  = UInt(3.W)
  val burst = UInt(2.W)
  val lock  = Bool()
  val cache = UInt(4.W)
  val prot  = UInt(3.W)
}
class AxiW(val dataBits: Int) extends Bundle {
  val data = UInt(dataBits.W)
  val strb = UInt((dataBits / 8).W)
  val last = Bool()
}
class AxiB(val idBits: Int) extends Bundle {
  val id   = UInt(idBits.W)
  val resp = UInt(2.W)
}
class AxiR(val dataBits: Int, val idBits: Int) extends Bundle {
  val id   = UInt(idBits.W)
  val data = UInt(dataBits.W)
  val resp = UInt(2.W)
  val last = Bool()
}

/**
 * AXI4 from the `s` side's clock domain to the `m` side's: one [[AsyncFifo]] per channel (AW, W, AR forward; B, R
 * back). Transactions keep their order per channel; nothing is reordered or merged.
 */
class Axi4Async(addrBits: Int, dataBits: Int, idBits: Int, depthLog2: Int = 3) extends RawModule {
  val s_clock = IO(Input(Clock()))
  val s_reset = IO(Input(Bool()))
  val m_clock = IO(Input(Clock()))
  val m_reset = IO(Input(Bool()))
  val s       = IO(Flipped(new Axi4(addrBits, dataBits, idBits)))
  val m       = IO(new Axi4(addrBits, dataBits, idBits))

  private def fwd[T <: Data](d: DecoupledIO[T])  = AsyncFifo(d, s_clock, s_reset, m_clock, m_reset, depthLog2)
  private def back[T <: Data](d: DecoupledIO[T]) = AsyncFifo(d, m_clock, m_reset, s_clock, s_reset, depthLog2)

  val aw = Wire(Decoupled(new AxiAddr(addrBits, idBits)))
  aw.valid      := s.awvalid
  s.awready     := aw.ready
  aw.bits.id    := s.awid
  aw.bits.addr  := s.awaddr
  aw.bits.len   := s.awlen
  aw.bits.size  := s.awsize
  aw.bits.burst := s.awburst
  aw.bits.lock  := s.awlock
  aw.bits.cache := s.awcache
  aw.bits.prot  := s.awprot
  val awM = fwd(aw)
  m.awvalid := awM.valid
  awM.ready := m.awready
  m.awid    := awM.bits.id
  m.awaddr  := awM.bits.addr
  m.awlen   := awM.bits.len
  m.awsize  := awM.bits.size
  m.awburst := awM.bits.burst
  m.awlock  := awM.bits.lock
  m.awcache := awM.bits.cache
  m.awprot  := awM.bits.prot

  val w = Wire(Decoupled(new AxiW(dataBits)))
  w.valid     := s.wvalid
  s.wready    := w.ready
  w.bits.data := s.wdata
  w.bits.strb := s.wstrb
  w.bits.last := s.wlast
  val wM = fwd(w)
  m.wvalid := wM.valid
  wM.ready := m.wready
  m.wdata  := wM.bits.data
  m.wstrb  := wM.bits.strb
  m.wlast  := wM.bits.last

  val b = Wire(Decoupled(new AxiB(idBits)))
  b.valid     := m.bvalid
  m.bready    := b.ready
  b.bits.id   := m.bid
  b.bits.resp := m.bresp
  val bS = back(b)
  s.bvalid := bS.valid
  bS.ready := s.bready
  s.bid    := bS.bits.id
  s.bresp  := bS.bits.resp

  val ar = Wire(Decoupled(new AxiAddr(addrBits, idBits)))
  ar.valid      := s.arvalid
  s.arready     := ar.ready
  ar.bits.id    := s.arid
  ar.bits.addr  := s.araddr
  ar.bits.len   := s.arlen
  ar.bits.size  := s.arsize
  ar.bits.burst := s.arburst
  ar.bits.lock  := s.arlock
  ar.bits.cache := s.arcache
  ar.bits.prot  := s.arprot
  val arM = fwd(ar)
  m.arvalid := arM.valid
  arM.ready := m.arready
  m.arid    := arM.bits.id
  m.araddr  := arM.bits.addr
  m.arlen   := arM.bits.len
  m.arsize  := arM.bits.size
  m.arburst := arM.bits.burst
  m.arlock  := arM.bits.lock
  m.arcache := arM.bits.cache
  m.arprot  := arM.bits.prot

  val r = Wire(Decoupled(new AxiR(dataBits, idBits)))
  r.valid     := m.rvalid
  m.rready    := r.ready
  r.bits.id   := m.rid
  r.bits.data := m.rdata
  r.bits.resp := m.rresp
  r.bits.last := m.rlast
  val rS = back(r)
  s.rvalid := rS.valid
  rS.ready := s.rready
  s.rid    := rS.bits.id
  s.rdata  := rS.bits.data
  s.rresp  := rS.bits.resp
  s.rlast  := rS.bits.last
}

/** AXI4-Lite (32-bit data) across two clock domains, one small [[AsyncFifo]] per channel. */
class AxiLiteAsync(addrBits: Int) extends RawModule {
  val s_clock = IO(Input(Clock()))
  val s_reset = IO(Input(Bool()))
  val m_clock = IO(Input(Clock()))
  val m_reset = IO(Input(Bool()))
  val s       = IO(Flipped(new AxiLite(addrBits)))
  val m       = IO(new AxiLite(addrBits))

  private def fwd[T <: Data](d: DecoupledIO[T])  = AsyncFifo(d, s_clock, s_reset, m_clock, m_reset, 2)
  private def back[T <: Data](d: DecoupledIO[T]) = AsyncFifo(d, m_clock, m_reset, s_clock, s_reset, 2)

  class A extends Bundle { val addr = UInt(addrBits.W); val prot = UInt(3.W) }
  class W extends Bundle { val data = UInt(32.W); val strb = UInt(4.W)       }
  class R extends Bundle { val data = UInt(32.W); val resp = UInt(2.W)       }

  val aw = Wire(Decoupled(new A))
  aw.valid     := s.awvalid
  s.awready    := aw.ready
  aw.bits.addr := s.awaddr
  aw.bits.prot := s.awprot
  val awM = fwd(aw)
  m.awvalid := awM.valid
  awM.ready := m.awready
  m.awaddr  := awM.bits.addr
  m.awprot  := awM.bits.prot

  val w = Wire(Decoupled(new W))
  w.valid     := s.wvalid
  s.wready    := w.ready
  w.bits.data := s.wdata
  w.bits.strb := s.wstrb
  val wM = fwd(w)
  m.wvalid := wM.valid
  wM.ready := m.wready
  m.wdata  := wM.bits.data
  m.wstrb  := wM.bits.strb

  val b = Wire(Decoupled(UInt(2.W)))
  b.valid  := m.bvalid
  m.bready := b.ready
  b.bits   := m.bresp
  val bS = back(b)
  s.bvalid := bS.valid
  bS.ready := s.bready
  s.bresp  := bS.bits

  val ar = Wire(Decoupled(new A))
  ar.valid     := s.arvalid
  s.arready    := ar.ready
  ar.bits.addr := s.araddr
  ar.bits.prot := s.arprot
  val arM = fwd(ar)
  m.arvalid := arM.valid
  arM.ready := m.arready
  m.araddr  := arM.bits.addr
  m.arprot  := arM.bits.prot

  val r = Wire(Decoupled(new R))
  r.valid     := m.rvalid
  m.rready    := r.ready
  r.bits.data := m.rdata
  r.bits.resp := m.rresp
  val rS = back(r)
  s.rvalid := rS.valid
  rS.ready := s.rready
  s.rdata  := rS.bits.data
  s.rresp  := rS.bits.resp
}
