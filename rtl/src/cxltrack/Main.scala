// SPDX-License-Identifier: Apache-2.0
package cxltrack

import circt.stage.ChiselStage

/**
 * Emit SystemVerilog: `Main --config config/small.toml --target-dir build/rtl/small [--id-bits N] [--tick-cycles N]
 * [--wr-per-id N]`.
 */
object Main extends App {
  private def opt(name: String): Option[String] = {
    val i = args.indexOf(name)
    if (i >= 0 && i + 1 < args.length) Some(args(i + 1)) else None
  }
  val config = opt("--config").getOrElse("config/default.toml")
  val target = opt("--target-dir").getOrElse("build/rtl/default")
  val params =
    try {
      CxlTrackParams.fromToml(
        config,
        p =>
          p.copy(
            idBits = opt("--id-bits").map(_.toInt).getOrElse(p.idBits),
            tickCycles = opt("--tick-cycles").map(_.toInt).getOrElse(p.tickCycles),
            wrPerId = opt("--wr-per-id").map(_.toInt).getOrElse(p.wrPerId)
          )
      )
    } catch {
      case e: ConfigError =>
        System.err.println(s"error: ${e.getMessage}")
        sys.exit(2)
    }
  ChiselStage.emitSystemVerilogFile(
    new CxlTrackCore(params),
    Array("--target-dir", target),
    Array(
      "-disable-all-randomization",
      "-strip-debug-info",
      "--lowering-options=disallowLocalVariables,disallowPackedArrays,locationInfoStyle=none"
    )
  )
}
