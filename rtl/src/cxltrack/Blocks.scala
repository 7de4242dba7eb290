// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3.RawModule

import java.io.{File, PrintWriter}

/**
 * One block of the core that has a standalone bench (sim/tb/blocks/): how to build it from the device parameters, and
 * the integer parameters its bench needs (written to `block.json` next to the SystemVerilog).
 */
case class BlockDef(gen: () => RawModule, params: Seq[(String, BigInt)])

/**
 * Emit standalone blocks for their benches: `Blocks --config config/small.toml --target-dir build/rtl/blocks [--block
 * NAME]... [--id-bits N] [--tick-cycles N] [--wr-per-id N]` writes every registered block (or the named ones) into
 * `<target-dir>/<NAME>-<config>/`: its SystemVerilog with `filelist.f` (same firtool options as [[Main]]) and
 * `block.json` (`{"block", "config", "toplevel", "params": {...}}`). `--list` prints the registered names.
 *
 * A new block: one entry in `registry`, parameterised exactly as [[CxlTrackCore]] instantiates it, and one bench
 * `sim/tb/blocks/test_<name>.py` with `BLOCK = "<NAME>"` (docs/rtl-notes.md, "Block benches").
 */
object Blocks extends App {

  /** The parameters of the whole core, for the blocks built from all of them (the bench reads what it needs). */
  def coreParams(p: CxlTrackParams): Seq[(String, BigInt)] = Seq(
    "capacity_bytes" -> p.capacityBytes,
    "pages"          -> p.pages,
    "page_shift"     -> BigInt(p.pageShift),
    "page_bits"      -> BigInt(p.pageBits),
    "words"          -> BigInt(p.words),
    "rows"           -> BigInt(p.rows),
    "row_lanes"      -> BigInt(p.rowLanes),
    "scan_rows"      -> BigInt(p.scanRows),
    "region_pages"   -> BigInt(p.regionPages),
    "slots"          -> BigInt(p.slots),
    "slot_bits"      -> BigInt(p.slotBits),
    "hot_bits"       -> BigInt(p.hotBits),
    "chunks"         -> BigInt(p.chunks),
    "chunk_bits"     -> BigInt(p.chunkBits),
    "chunk_shift"    -> BigInt(p.chunkShift),
    "bat_disk_bits"  -> BigInt(p.batDiskBits),
    "bat_block_bits" -> BigInt(p.batBlockBits),
    "evq_depth_log2" -> BigInt(p.evqDepthLog2),
    "id_bits"        -> BigInt(p.idBits),
    "wr_per_id"      -> BigInt(p.wrPerId),
    "mem_addr_bits"  -> BigInt(p.memAddrBits),
    "lite_addr_bits" -> BigInt(p.liteAddrBits),
    "tick_ns"        -> BigInt(p.tickNs)
  )

  val registry: Seq[(String, CxlTrackParams => BlockDef)] = Seq(
    // as CxlTrackCore: new EventQueue(p.evqDepthLog2, p.eventPorts)
    "EventQueue" -> { p =>
      BlockDef(
        () => new EventQueue(p.evqDepthLog2, p.eventPorts),
        Seq("depth_log2" -> BigInt(p.evqDepthLog2), "n_src" -> BigInt(p.eventPorts))
      )
    },
    // the widest of the core's tables: hotness (3 ports: harvest, read accept, write accept)
    "TrackTable" -> { p =>
      BlockDef(
        () => new TrackTable(p.words, p.hotBits, 3, "TrackTable"),
        Seq(
          "words"     -> BigInt(p.words),
          "lanes"     -> BigInt(64),
          "lane_bits" -> BigInt(p.hotBits),
          "n_ports"   -> BigInt(3)
        ) ++
          opCodes // the bench's op codes
      )
    },
    // the blocks CxlTrackCore instantiates with the whole parameter set
    "DataPath"   -> { p => BlockDef(() => new DataPath(p), coreParams(p)) },
    "SlotBuffer" -> { p => BlockDef(() => new SlotBuffer(p), coreParams(p)) },
    "CommandEngine" -> { p =>
      BlockDef(
        () => new CommandEngine(p),
        coreParams(p) ++ opCodes ++
          Seq("dma_addr_bits" -> BigInt(p.dmaAddrBits), "dma_copy" -> BigInt(if (p.hasCopy) 1 else 0))
      )
    },
    "RegisterPort" -> { p => BlockDef(() => new RegisterPort(p), coreParams(p)) },
    // as CxlTrackCore: new ScrubEngine(C, p.chunkShift, p.pageShift, p.pageBits, p.memAddrBits)
    "ScrubEngine" -> { p =>
      BlockDef(
        () => new ScrubEngine(p.chunks, p.chunkShift, p.pageShift, p.pageBits, p.memAddrBits),
        Seq(
          "chunks"        -> BigInt(p.chunks),
          "chunk_shift"   -> BigInt(p.chunkShift),
          "page_shift"    -> BigInt(p.pageShift),
          "page_bits"     -> BigInt(p.pageBits),
          "mem_addr_bits" -> BigInt(p.memAddrBits)
        )
      )
    },
    // as CxlTrackCore: new CopyEngine(p.chunks, p.chunkShift, p.memAddrBits) (16-beat bursts, a 64-beat FIFO)
    "CopyEngine" -> { p =>
      BlockDef(
        () => new CopyEngine(p.chunks, p.chunkShift, p.memAddrBits),
        Seq(
          "chunks"        -> BigInt(p.chunks),
          "chunk_shift"   -> BigInt(p.chunkShift),
          "mem_addr_bits" -> BigInt(p.memAddrBits),
          "burst_beats"   -> BigInt(16),
          "fifo_beats"    -> BigInt(64)
        )
      )
    },
    // as CxlTrackCore: new DmaWriter(CommandEngine.dmaAddrBits(p), CommandEngine.dmaLenBits(p)) (16 bursts), with a
    // length at least as wide as a 64 GiB device's hotness harvest needs (24 bits): the small configuration's 10-bit
    // lengths (1 KiB) could not reach 16 outstanding bursts
    "DmaWriter" -> { p =>
      val lenBits = CommandEngine.dmaLenBits(p) max 24
      BlockDef(
        () => new DmaWriter(CommandEngine.dmaAddrBits(p), lenBits),
        Seq(
          "addr_bits"  -> BigInt(CommandEngine.dmaAddrBits(p)),
          "len_bits"   -> BigInt(lenBits),
          "max_bursts" -> BigInt(16)
        )
      )
    }
  )

  /** The TrackTable operation codes (a position in [[TableOp.Names]]), for benches that answer table requests. */
  def opCodes: Seq[(String, BigInt)] = TableOp.Names.zipWithIndex.map { case (n, i) => s"op_$n" -> BigInt(i) }

  private def rmTree(f: File): Unit = {
    Option(f.listFiles).foreach(_.foreach(rmTree))
    f.delete()
  }

  private def json(s: String): String = "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""

  val argv = args.toSeq
  if (argv.contains("--list")) {
    registry.foreach(e => println(e._1))
    sys.exit(0)
  }
  val config  = Cli.opt(argv, "--config").getOrElse("config/default.toml")
  val cfgName = new File(config).getName.stripSuffix(".toml")
  val target  = Cli.opt(argv, "--target-dir").getOrElse("build/rtl/blocks")
  val chosen  = argv.sliding(2).collect { case Seq("--block", n) => n }.toSeq
  val unknown = chosen.filterNot(n => registry.exists(_._1 == n))
  if (unknown.nonEmpty) {
    System.err.println(s"error: unknown block ${unknown.mkString(", ")} (known: ${registry.map(_._1).mkString(", ")})")
    sys.exit(2)
  }
  val params = Cli.params(argv)
  if (chosen.isEmpty) { // blocks no longer registered: remove what an earlier run emitted for them
    for {
      d <- Option(new File(target).listFiles).toSeq.flatten
      if d.getName.endsWith(s"-$cfgName") && new File(d, "block.json").exists
      if !registry.exists(e => d.getName == s"${e._1}-$cfgName")
    } rmTree(d)
  }
  for ((name, mk) <- registry if chosen.isEmpty || chosen.contains(name)) {
    val dir = new File(target, s"$name-$cfgName")
    rmTree(dir) // no stale modules from an earlier parameter set
    val block = mk(params)
    Cli.emit(block.gen(), dir.getPath)
    if (!new File(dir, s"$name.sv").exists) {
      System.err.println(s"error: block $name: no $name.sv in $dir (the registry name must be the module's name)")
      sys.exit(1)
    }
    val fields = block.params.map { case (k, v) => s"${json(k)}: $v" }.mkString(", ")
    val out    = new PrintWriter(new File(dir, "block.json"))
    try
      out.println(
        s"""{"block": ${json(name)}, "config": ${json(cfgName)}, "toplevel": ${json(name)}, "params": {$fields}}"""
      )
    finally out.close()
    println(s"blocks: $name -> $dir")
  }
}
