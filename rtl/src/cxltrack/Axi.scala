// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._

/**
 * The write channels of AXI4 with flat signal names (cocotbext-axi finds them by prefix, e.g. `h_axi_awaddr`).
 * Directions are the master's view; use `Flipped` for a slave port. A master that never reads (the DMA port toward the
 * host side of the CXL IP, docs/rtl-notes.md "DMA harvest") has only these.
 */
class Axi4Write(val addrBits: Int, val dataBits: Int, val idBits: Int) extends Bundle {
  val awid    = Output(UInt(idBits.W))
  val awaddr  = Output(UInt(addrBits.W))
  val awlen   = Output(UInt(8.W))
  val awsize  = Output(UInt(3.W))
  val awburst = Output(UInt(2.W))
  val awlock  = Output(Bool())
  val awcache = Output(UInt(4.W))
  val awprot  = Output(UInt(3.W))
  val awvalid = Output(Bool())
  val awready = Input(Bool())
  val wdata   = Output(UInt(dataBits.W))
  val wstrb   = Output(UInt((dataBits / 8).W))
  val wlast   = Output(Bool())
  val wvalid  = Output(Bool())
  val wready  = Input(Bool())
  val bid     = Input(UInt(idBits.W))
  val bresp   = Input(UInt(2.W))
  val bvalid  = Input(Bool())
  val bready  = Output(Bool())
}

/** AXI4: the write channels and the read channels, flat names as above. */
class Axi4(addrBits: Int, dataBits: Int, idBits: Int) extends Axi4Write(addrBits, dataBits, idBits) {
  val arid    = Output(UInt(idBits.W))
  val araddr  = Output(UInt(addrBits.W))
  val arlen   = Output(UInt(8.W))
  val arsize  = Output(UInt(3.W))
  val arburst = Output(UInt(2.W))
  val arlock  = Output(Bool())
  val arcache = Output(UInt(4.W))
  val arprot  = Output(UInt(3.W))
  val arvalid = Output(Bool())
  val arready = Input(Bool())
  val rid     = Input(UInt(idBits.W))
  val rdata   = Input(UInt(dataBits.W))
  val rresp   = Input(UInt(2.W))
  val rlast   = Input(Bool())
  val rvalid  = Input(Bool())
  val rready  = Output(Bool())
}

/** AXI4-Lite, 32-bit data, master's view. */
class AxiLite(val addrBits: Int) extends Bundle {
  val awaddr  = Output(UInt(addrBits.W))
  val awprot  = Output(UInt(3.W))
  val awvalid = Output(Bool())
  val awready = Input(Bool())
  val wdata   = Output(UInt(32.W))
  val wstrb   = Output(UInt(4.W))
  val wvalid  = Output(Bool())
  val wready  = Input(Bool())
  val bresp   = Input(UInt(2.W))
  val bvalid  = Input(Bool())
  val bready  = Output(Bool())
  val araddr  = Output(UInt(addrBits.W))
  val arprot  = Output(UInt(3.W))
  val arvalid = Output(Bool())
  val arready = Input(Bool())
  val rdata   = Input(UInt(32.W))
  val rresp   = Input(UInt(2.W))
  val rvalid  = Input(Bool())
  val rready  = Output(Bool())
}

object Axi {
  val OKAY   = 0
  val DECERR = 3
  val INCR   = 1
}
