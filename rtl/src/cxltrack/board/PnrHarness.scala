// SPDX-License-Identifier: Apache-2.0
package cxltrack.board

import chisel3._
import chisel3.reflect.DataMirror
import chisel3.util.Cat
import cxltrack.{Cli, CxlTrackCore, CxlTrackParams}
import chisel3.ActualDirection

/**
 * The core with its ~2 700 port bits folded onto three pins, so that a place-and-route tool can place it in a real
 * package (`make pnr-check`): every core input is a stage of one long shift register fed from `din`; every core output
 * is registered, then folded by XOR over two more register stages into `dout`. Nothing the core computes can be
 * optimised away, and every path into or out of the core starts or ends at a flip-flop, as in the board (where the
 * core's neighbours are the clock-crossing FIFOs' registered pointers and LUT-RAM outputs). The harness adds one
 * flip-flop per port bit and the XOR trees; `make pnr-check` reports them with the core.
 */
class PnrHarness(p: CxlTrackParams) extends Module {
  override def desiredName = "PnrHarness"
  val din                  = IO(Input(Bool()))
  val dout                 = IO(Output(Bool()))

  val core = Module(new CxlTrackCore(p))
  val leaves = Seq(core.s_axi, core.m_axi, core.s_axil, core.h_axi).flatMap(b => b.getElements) ++
    Seq(core.irq, core.msi, core.idle, core.dbg_time_en, core.dbg_tick)
  val ins  = leaves.filter(l => DataMirror.directionOf(l) == ActualDirection.Input)
  val outs = leaves.filter(l => DataMirror.directionOf(l) == ActualDirection.Output)

  val inBits = ins.map(_.getWidth).sum
  val chain  = RegInit(0.U(inBits.W))
  chain := Cat(chain(inBits - 2, 0), din)
  var at = 0
  for (l <- ins) {
    val w = l.getWidth
    l := chain(at + w - 1, at).asTypeOf(l)
    at += w
  }

  val outBits = outs.map(_.getWidth).sum
  val outReg  = Reg(UInt(outBits.W))
  outReg := Cat(outs.map(_.asUInt))
  val groups = outReg.asBools.grouped(32).map(g => VecInit(g).asUInt.xorR).toSeq
  val folded = Reg(UInt(groups.length.W))
  folded := VecInit(groups).asUInt
  dout   := RegNext(folded.xorR, false.B)
}

/** Emit [[PnrHarness]]: `PnrMain --config config/small.toml --target-dir build/pnr/rtl [--tick-cycles N]`. */
object PnrMain extends App {
  val target = Cli.opt(args.toSeq, "--target-dir").getOrElse("build/pnr/rtl")
  Cli.emit(new PnrHarness(Cli.params(args.toSeq)), target)
}
