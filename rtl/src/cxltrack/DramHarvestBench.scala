// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * The command engine with its per-page tables in device DRAM ([[DramTables]]: bitmaps, hotness, BAT) without the rest
 * of the core (config/dram1t.toml; the whole core is [[CxlTrackCore]] with [[CoreDramTables]]), so that the benches
 * drive the tables' sources directly: the ports of [[HarvestBench]] plus a hotness increment, the two BAT invalidations
 * of the core's data path (write accept, write end), the DRAM master `d_axi` and the update cache's overflow and
 * occupancy for the benches. BAT commands run through the engine as in the core; `io.idle` stays low until a BAT_SET or
 * BAT_CLEAR took effect. The command engine runs on a clock gated by the tables' `en` (DramTables says why); what
 * crosses between the two clocks is held so that no event is lost or doubled: the DMA writer's start and beats pass
 * only in enabled cycles, its completion waits in a register for the next one.
 */
class DramHarvestBench(p: CxlTrackParams) extends Module {
  override def desiredName = "DramHarvestBench"
  require(p.dramTables, "DramHarvestBench builds the DRAM tables: the configuration needs [rtl] dram_tables = 1")
  val io = IO(new HarvestBenchIO(p) {
    // a hotness increment (in the core every accepted request increments its page's counter and sets its accessed
    // bit; the bench drives them apart so that it can choose the cache pressure of each)
    val hotInc = Input(Valid(UInt(p.pageBits.W)))
    // the BAT invalidations of the core's write accept and write end (a write to the page)
    val batInv   = Input(Vec(2, Valid(UInt(p.pageBits.W))))
    val overflow = Output(UInt(5.W)) // bit s: set port s (dirty, accessed, hotness, 2 x BAT) found the cache full
    // BAT invalidation events as the core takes them (DramTables: evtEn, inv, invFound, invLost)
    val batEvtEn  = Input(Bool())
    val inv       = Output(Valid(UInt(p.pageBits.W)))
    val invFound  = Output(UInt(10.W))
    val invLost   = Output(UInt(2.W))
    val occupancy = Output(UInt(8.W))
    val engineEn  = Output(Bool())
  })
  val h_axi = IO(new Axi4Write(CommandEngine.dmaAddrBits(p), 512, 1))
  val d_axi = IO(new Axi4(p.dramAddrBits, 512, 1))
  val tables = Module(
    new DramTables(
      p,
      Seq(DramTable.Dirty, DramTable.Accessed, DramTable.Hotness, DramTable.BatValid, DramTable.BatValid)
    )
  )
  val en       = tables.io.en
  val commands = withClock(CoreDramTables.engineClock(clock, en))(Module(new CommandEngine(p)))
  d_axi <> tables.axi

  CoreDramTables.connectEngine(p, tables, commands)
  tables.io.evtEn   := io.batEvtEn
  io.inv            := tables.io.inv
  io.invFound       := tables.io.invFound
  io.invLost        := tables.io.invLost
  tables.io.sets(0) := io.dirtySet
  tables.io.sets(1) := io.accessedSet
  tables.io.sets(2) := io.hotInc
  tables.io.sets(3) := io.batInv(0)
  tables.io.sets(4) := io.batInv(1)
  io.overflow       := tables.io.overflow
  io.occupancy      := tables.io.occupancy.pad(8)
  io.engineEn       := en

  // a launch comes only while the engine is idle, and then `en` is high (an idle engine reads no scan, steps nothing)
  commands.io.launch          := io.launch
  commands.io.args            := io.args
  commands.io.resultRead      := io.resultRead
  io.resultLine               := commands.io.resultLine
  io.busy                     := commands.io.busy
  io.code                     := commands.io.code
  io.seq                      := commands.io.seq
  io.result0                  := commands.io.result0
  io.result1                  := commands.io.result1
  io.ready                    := commands.io.ready
  io.idle                     := commands.io.idle && !tables.io.busy
  commands.io.slots           := 0.U.asTypeOf(commands.io.slots)
  commands.io.mergeDone       := false.B
  commands.io.queryWord.valid := false.B
  commands.io.queryWord.bits  := 0.U.asTypeOf(commands.io.queryWord.bits)
  commands.io.queryDone       := false.B
  commands.io.scrubEnq.ready  := true.B
  commands.io.scrubFinish     := 0.U.asTypeOf(commands.io.scrubFinish)

  val dma   = Module(new DmaWriter(CommandEngine.dmaAddrBits(p), CommandEngine.dmaLenBits(p)))
  val cross = new EngineCrossing(en)
  dma.io.start              := cross.out(commands.io.dmaStart)
  dma.io.data.valid         := cross.out(commands.io.dmaData.valid)
  dma.io.data.bits          := commands.io.dmaData.bits
  commands.io.dmaData.ready := cross.out(dma.io.data.ready)
  // the list harvest's stream mode (docs/spec.md 5.4): levels of the engine's state, held while its clock is
  // (the writer announces beats already queued; they pass in the next enabled cycles)
  dma.io.avail        := commands.io.dmaAvail
  dma.io.strb         := commands.io.dmaStrb
  dma.io.end          := commands.io.dmaEnd
  commands.io.dmaDone := cross.in(dma.io.done) // the completion pulse, held until an enabled cycle
  h_axi <> dma.io.axi
}

/**
 * A latch-based clock gate (the usual integrated clock gate: the enable passes while the clock is low, so the gated
 * clock has no glitch); on an FPGA a BUFGCE. Verilator, Icarus and Yosys read it as it is.
 */
class EngineClockGate extends BlackBox with HasBlackBoxInline {
  val io = IO(new Bundle {
    val in  = Input(Clock())
    val en  = Input(Bool())
    val out = Output(Clock())
  })
  setInline(
    "EngineClockGate.sv",
    """module EngineClockGate(input in, input en, output out);
      |  reg en_latched;
      |  // verilator lint_off LATCH
      |  always @(*) if (!in) en_latched = en;
      |  // verilator lint_on LATCH
      |  assign out = in & en_latched;
      |endmodule
      |""".stripMargin
  )
}

/** Emit [[DramHarvestBench]]: `DramHarvestMain --config <toml with [rtl] dram_tables = 1> --target-dir <dir>`. */
object DramHarvestMain extends App {
  val argv   = args.toSeq
  val target = Cli.opt(argv, "--target-dir").getOrElse("build/rtl/dram-dram1t")
  val p      = Cli.params(argv)
  Cli.emit(new DramHarvestBench(p), target)
  val out = new java.io.PrintWriter(new java.io.File(target, "harvest.json"))
  try
    out.println(
      s"""{"pages": ${p.pages}, "rows": ${p.rows}, "row_lanes": ${p.rowLanes}, "region_pages": ${p.regionPages}, """ +
        s""""scan_rows": ${p.scanRows}, "accessed": 1, "packed": 0, "dram": 1, "cache_entries": ${p.cacheEntries}, """ +
        s""""carve_base": ${p.carveBase}, "carve_bytes": ${p.carveBytes}, "dram_addr_bits": ${p.dramAddrBits}, """ +
        s""""words": ${p.words}, "hot_bits": ${p.hotBits}, """ +
        s""""bat_block_bits": ${p.batBlockBits}, "bat_disk_bits": ${p.batDiskBits}, """ +
        // an overflow group: the 64 rows of one summary word (512 hotness words)
        s""""group_pages": ${64 * p.rowLanes}}"""
    )
  finally out.close()
}
