// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.util._

/**
 * The UltraScale+ PCIe hard block's user interface (Xilinx PG213, "pcie4_uscale_plus"), 512-bit, DWORD-aligned,
 * straddling off: one AXI4-Stream per direction with flat signal names as the IP and cocotbext-pcie name them
 * (`s_axis_cq_tdata`, ...). `tkeep` has one bit per DWORD.
 */
class Axis(val dataBits: Int, val userBits: Int) extends Bundle {
  val tdata  = Output(UInt(dataBits.W))
  val tkeep  = Output(UInt((dataBits / 32).W))
  val tlast  = Output(Bool())
  val tuser  = Output(UInt(userBits.W))
  val tvalid = Output(Bool())
  val tready = Input(Bool())
}

/** Field positions of PG213's descriptors and sideband words (512-bit interface). */
object Usp {
  val DataBits = 512
  val Dwords   = DataBits / 32
  // tuser widths at 512 bits
  val CqUserBits = 183
  val CcUserBits = 81
  val RqUserBits = 137
  val RcUserBits = 161

  // completer request descriptor (first beat, bits 127:0)
  val CqAddrLo   = 2; val CqAddrHi   = 63
  val CqDwLo     = 64; val CqDwHi    = 74
  val CqTypeLo   = 75; val CqTypeHi  = 78
  val CqReqIdLo  = 80; val CqReqIdHi = 95
  val CqTagLo    = 96; val CqTagHi   = 103
  val CqFuncLo   = 104; val CqFuncHi = 111
  val CqBarLo    = 112; val CqBarHi  = 114
  val CqTcLo     = 121; val CqTcHi   = 123
  val CqAttrLo   = 124; val CqAttrHi = 126
  val CqDescDw   = 4 // the payload starts at DWORD 4 of the first beat
  val CqFirstBe  = 0 // tuser 3:0
  val CqLastBe   = 8 // tuser 11:8
  val CqDiscont  = 96
  val CcDescDw   = 3 // completion payload starts at DWORD 3 of the first beat
  val CcIsSop    = 0 // tuser bit 0 (is_sop[0]); is_sop0_ptr 3:2 stays 0
  val CcIsEop    = 6 // tuser bit 6 (is_eop[0])
  val CcEopPtrLo = 8 // tuser 11:8: last DWORD of the TLP in the beat

  // request types (descriptor bits 78:75)
  val ReqMemRead   = 0
  val ReqMemWrite  = 1
  val ReqIoRead    = 2
  val ReqIoWrite   = 3
  val ReqFetchAdd  = 4
  val ReqSwap      = 5
  val ReqCas       = 6
  val ReqLockedRd  = 7
  val NonPostedSet = Seq(ReqMemRead, ReqIoRead, ReqIoWrite, ReqFetchAdd, ReqSwap, ReqCas, ReqLockedRd)

  // completion status
  val CplSc = 0
  val CplUr = 1

  /** The 96-bit completer completion descriptor (PG213 "Completer Completion Descriptor Format"). */
  def ccDescriptor(
      lowerAddr: UInt,
      byteCount: UInt,
      dwCount: UInt,
      status: UInt,
      reqId: UInt,
      tag: UInt,
      func: UInt,
      tc: UInt,
      attr: UInt
  ): UInt = {
    def f(v: UInt, w: Int): UInt = v.pad(w)(w - 1, 0)
    val dw0                      = Cat(0.U(3.W), f(byteCount, 13), 0.U(6.W), 0.U(2.W), 0.U(1.W), f(lowerAddr, 7))
    val dw1                      = Cat(f(reqId, 16), 0.U(1.W), 0.U(1.W), f(status, 3), f(dwCount, 11))
    // completer id = {bus 0 (the core fills it in: completer id enable = 0), device 0, function}; force ECRC 0
    val dw2 = Cat(0.U(1.W), f(attr, 3), f(tc, 3), 0.U(1.W), 0.U(8.W), f(func, 8), f(tag, 8))
    Cat(dw2, dw1, dw0)
  }

  /** Count of trailing zero bits of a 4-bit byte enable (0 for 0). */
  def leadingDisabled(be: UInt): UInt = Mux(be === 0.U, 0.U, PriorityEncoder(be))

  /** Count of disabled bytes after the last enabled one of a 4-bit byte enable (0 for 0). */
  def trailingDisabled(be: UInt): UInt = Mux(be === 0.U, 0.U, 3.U - Log2(be))
}
