// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3.RawModule
import circt.stage.ChiselStage

/** Command-line handling and SystemVerilog emission shared by [[Main]] and [[Blocks]]. */
object Cli {
  def opt(args: Seq[String], name: String): Option[String] = {
    val i = args.indexOf(name)
    if (i >= 0 && i + 1 < args.length) Some(args(i + 1)) else None
  }

  /** The device parameters of `--config` with the implementation options of the command line; exits on a bad file. */
  def params(args: Seq[String]): CxlTrackParams =
    try {
      CxlTrackParams.fromToml(
        opt(args, "--config").getOrElse("config/default.toml"),
        p =>
          p.copy(
            idBits = opt(args, "--id-bits").map(_.toInt).getOrElse(p.idBits),
            tickCycles = opt(args, "--tick-cycles").map(_.toInt).getOrElse(p.tickCycles),
            wrPerId = opt(args, "--wr-per-id").map(_.toInt).getOrElse(p.wrPerId),
            dmaAddrBits = opt(args, "--dma-addr-bits").map(_.toInt).getOrElse(p.dmaAddrBits),
            dmaCopy = opt(args, "--dma-copy").map(_ != "0").getOrElse(p.dmaCopy)
          )
      )
    } catch {
      case e: ConfigError =>
        System.err.println(s"error: ${e.getMessage}")
        sys.exit(2)
    }

  /** Plain SystemVerilog that Verilator, Icarus and Yosys all read (docs/rtl-notes.md, toolchain facts). */
  val firtoolOptions: Array[String] = Array(
    "-disable-all-randomization",
    "-strip-debug-info",
    "--lowering-options=disallowLocalVariables,disallowPackedArrays,locationInfoStyle=none"
  )

  def emit(gen: => RawModule, target: String): Unit =
    ChiselStage.emitSystemVerilogFile(gen, Array("--target-dir", target), firtoolOptions)
}

/**
 * Emit SystemVerilog: `Main --config config/small.toml --target-dir build/rtl/small [--id-bits N] [--tick-cycles N]
 * [--wr-per-id N] [--dma-addr-bits N] [--dma-copy 0|1]` (`--dma-addr-bits 0`: no DMA port; `--dma-copy 0`: no
 * CHUNK_COPY engine, CAP_DMA.COPY = 0).
 */
object Main extends App {
  val target = Cli.opt(args.toSeq, "--target-dir").getOrElse("build/rtl/default")
  val params = Cli.params(args.toSeq)
  Cli.emit(new CxlTrackCore(params), target)
}
