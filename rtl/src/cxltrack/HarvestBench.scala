// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * The harvest benchmark's top (`make bench-harvest`, sim/bench_harvest.py): the core's [[CommandEngine]] and its dirty
 * and accessed bitmaps ([[BitmapTables]], the same tables with the same wiring as in [[CxlTrackCore]]), without the
 * data path, the hotness and BAT tables, the slots and the event queue. A whole core at 64 GiB (16 Mi pages) is more
 * than Verilator builds in reasonable time: its hotness and BAT-valid tables have 256 Ki words of live-value table in
 * flip-flops and the BAT payload is 16 Mi entries; neither takes part in a dirty harvest.
 *
 * `withAccessed` = false leaves the accessed table out (the 64 GiB benchmark harvests the dirty bitmap only; a
 * HARVEST_ACCESSED then finds no row marked). `packedState` builds the tables with their per-row flip-flops as bit
 * planes ([[TrackTable]]): the 64 GiB benchmark needs it to compile in Verilator at all (one register per row for 32 Ki
 * rows gave 400 MB of C++); the regression runs the harvest bench on both forms.
 *
 * Ports: a command launch as the register port gives it (`launch` while not busy, with `args`), the engine's status,
 * one RESULT line read per cycle (answered the next cycle), and one page set per cycle on the dirty (write end) and the
 * accessed (read accept) table, as the data path drives them.
 */
/** The ports of a harvest bench top (here and [[DramHarvestBench]]; sim/tb/harvest/driver.py drives them). */
class HarvestBenchIO(p: CxlTrackParams) extends Bundle {
  val launch      = Input(Valid(UInt(32.W)))
  val args        = Input(Vec(3, UInt(64.W)))
  val busy        = Output(Bool())
  val code        = Output(UInt(8.W))
  val seq         = Output(UInt(16.W))
  val result0     = Output(UInt(64.W))
  val result1     = Output(UInt(64.W))
  val ready       = Output(Bool())
  val idle        = Output(Bool())
  val resultRead  = Input(Valid(UInt(6.W)))
  val resultLine  = Output(Vec(64, UInt(8.W)))
  val dirtySet    = Input(Valid(UInt(p.pageBits.W)))
  val accessedSet = Input(Valid(UInt(p.pageBits.W)))
}

class HarvestBench(p: CxlTrackParams, withAccessed: Boolean = true, packedState: Boolean = false) extends Module {
  override def desiredName = "HarvestBench"
  val io                   = IO(new HarvestBenchIO(p))
  // the DMA harvest's port, with the core's writer
  val h_axi    = IO(new Axi4Write(CommandEngine.dmaAddrBits(p), 512, 1))
  val commands = Module(new CommandEngine(p))
  val bitmaps  = new BitmapTables(p, withAccessed, packedState)
  val dirty    = bitmaps.dirty // instance name the benchmark's preload uses
  bitmaps.connect(commands)
  commands.io.harvestRow.valid        := bitmaps.answered
  commands.io.harvestRow.bits.hotness := VecInit(Seq.fill(64)(0.U(p.hotBits.W)))
  BitmapTables.drive(p, dirty, 1, io.dirtySet.valid, io.dirtySet.bits, TableOp.SET.U)
  for (a <- bitmaps.accessed) {
    BitmapTables.drive(p, a, 1, io.accessedSet.valid, io.accessedSet.bits, TableOp.SET.U)
    BitmapTables.drive(p, a, 2, false.B, 0.U, TableOp.SET.U)
  }

  commands.io.launch     := io.launch
  commands.io.args       := io.args
  commands.io.resultRead := io.resultRead
  io.resultLine          := commands.io.resultLine
  io.busy                := commands.io.busy
  io.code                := commands.io.code
  io.seq                 := commands.io.seq
  io.result0             := commands.io.result0
  io.result1             := commands.io.result1
  io.ready               := commands.io.ready
  io.idle                := commands.io.idle && !bitmaps.busy
  // what the benchmark does not use: no BAT answers, every slot FREE, no merge, query or scrub
  commands.io.batPayload      := 0.U
  commands.io.batValid.valid  := false.B
  commands.io.batValid.bits   := false.B
  commands.io.slots           := 0.U.asTypeOf(commands.io.slots)
  commands.io.mergeDone       := false.B
  commands.io.queryWord.valid := false.B
  commands.io.queryWord.bits  := 0.U.asTypeOf(commands.io.queryWord.bits)
  commands.io.queryDone       := false.B
  commands.io.scrubEnq.ready  := true.B
  commands.io.scrubFinish     := 0.U.asTypeOf(commands.io.scrubFinish)
  val dma = Module(new DmaWriter(CommandEngine.dmaAddrBits(p), CommandEngine.dmaLenBits(p)))
  dma.io.start := commands.io.dmaStart
  dma.io.data <> commands.io.dmaData
  commands.io.dmaDone := dma.io.done
  dma.io.avail        := commands.io.dmaAvail
  dma.io.strb         := commands.io.dmaStrb
  dma.io.end          := commands.io.dmaEnd
  h_axi <> dma.io.axi
}

/**
 * Emit the harvest benchmark's top: `HarvestBenchMain --config <toml> --target-dir <dir> [--dirty-only]
 * [--packed-state]` (also writes `harvest.json` with the parameters the benches read).
 */
object HarvestBenchMain extends App {
  val argv   = args.toSeq
  val target = Cli.opt(argv, "--target-dir").getOrElse("build/rtl/harvest64g")
  val p      = Cli.params(argv)
  val withA  = !argv.contains("--dirty-only")
  Cli.emit(new HarvestBench(p, withA, argv.contains("--packed-state")), target)
  val out = new java.io.PrintWriter(new java.io.File(target, "harvest.json"))
  try
    out.println(
      s"""{"pages": ${p.pages}, "rows": ${p.rows}, "row_lanes": ${p.rowLanes}, "region_pages": ${p.regionPages}, """ +
        s""""scan_rows": ${p.scanRows}, "accessed": ${if (withA) 1 else 0}, """ +
        s""""packed": ${if (argv.contains("--packed-state")) 1 else 0}}"""
    )
  finally out.close()
}
