// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3.util.log2Ceil

import scala.io.Source

/**
 * Generator parameters. The device part comes from one TOML file under `config/` (docs/spec.md 1.1), the same file the
 * reference model loads; the implementation part (bus widths, tick prescaler, outstanding-write depth) is given on the
 * generator's command line.
 */
case class CxlTrackParams(
    capacityBytes: BigInt,
    pageShift: Int,
    slots: Int,
    hotBits: Int,
    evqDepthLog2: Int,
    chunkShift: Int,
    batDiskBits: Int,
    batBlockBits: Int,
    tickNs: Long,
    // implementation parameters
    dataBits: Int = 512,
    idBits: Int = 4,
    addrBits: Int = 48,
    tickCycles: Int = 500,
    wrPerId: Int = 8,
    // width of the host bus addresses the DMA port drives (CAP_DMA.ADDR_BITS); 0: no DMA port (CAP_DMA.PRESENT = 0)
    dmaAddrBits: Int = 64,
    // the CHUNK_COPY engine ([[CopyEngine]], CAP_DMA.COPY, docs/spec.md 7.1); needs the DMA port (`dmaAddrBits` > 0)
    dmaCopy: Boolean = true,
    // the dirty and accessed fine bitmaps and the hotness counters in a device-DRAM carve-out behind an on-chip update
    // cache ([[DramTables]], docs/spec.md section 12) instead of on-chip RAM; from the configuration's [rtl] section
    // (`dram_tables = 1`)
    dramTables: Boolean = false,
    // entries of the update cache (one 64-byte line each); `update_cache_entries` in [rtl]
    cacheEntries: Int = 16
) {
  require(dataBits == 512, "one beat is one 64-byte line")
  require(dmaAddrBits >= 0 && dmaAddrBits <= 64, "DMA addresses are at most 64 bits")
  // CAP_DMA.COPY: a copy engine exists (it writes through the DMA port, so never without one)
  val hasCopy: Boolean   = dmaCopy && dmaAddrBits > 0
  val pages: BigInt      = capacityBytes >> pageShift
  val words: Int         = (pages / 64).toInt
  val pageBits: Int      = log2Ceil(pages) max 1
  val chunks: Int        = (capacityBytes >> chunkShift).toInt
  val chunkBits: Int     = log2Ceil(chunks) max 1
  val pagesPerChunk: Int = 1 << (chunkShift - pageShift)
  val memAddrBits: Int   = log2Ceil(capacityBytes)
  val hotMax: Int        = (1 << hotBits) - 1
  val evqDepth: Int      = 1 << evqDepthLog2
  val slotBits: Int      = log2Ceil(slots) max 1
  val liteAddrBits: Int  = log2Ceil(Regs.BAR_SIZE)
  // event queue push ports: BAT invalidation at write accept and at write end, error, slot full, one timeout per
  // slot, merge done, scrub done (CxlTrackCore, "events")
  val eventPorts: Int = 6 + slots
  // the dirty and accessed bitmaps are rows of 512 pages: a harvest reads, clears and writes into RESULT one row per
  // cycle (512 bits = one 64-byte RESULT line); hotness and BAT validity keep 64-page words (64 counters: 512 bits)
  val rowLanes: Int = 512
  val rows: Int     = ((pages + rowLanes - 1) / rowLanes).toInt
  val rowBits: Int  = log2Ceil(rows) max 1
  // summary bitmaps: one bit per 2 MiB region (docs/spec.md section 12), i.e. 2^(21 - page_shift) pages: one row at
  // page_shift 12, 2^(page_shift - 12) regions per row above
  val regionPages: Int = 1 << (CxlTrackParams.SummaryRegionShift - pageShift)
  // the rows one harvest touches: up to HARVEST_MAX_BITMAP_PAGES / 512 + 1 (its start need not be row-aligned)
  val scanRows: Int = (Regs.HARVEST_MAX_BITMAP_PAGES / rowLanes + 1).toInt min rows
  require(
    dramTables || pages <= (BigInt(1) << 26),
    "the per-page tables are on-chip RAMs (docs/rtl-notes.md, Tables); larger configurations need dram_tables = 1"
  )
  require(cacheEntries >= 1 && cacheEntries <= 256, "update cache: 1 to 256 entries")
  // the carve-out at the top of device DRAM, above the capacity the host sees: dirty bitmap, then accessed bitmap
  // (one 64-byte line per 512-page row), hotness (one line per 64-page word), BAT validity (as the bitmaps), then the
  // BAT payload (8 bytes per page: one line per 8 pages)
  val carveBase: BigInt  = capacityBytes
  val carveBytes: BigInt = (BigInt(3) * rows + words + (pages + 7) / 8) * 64
  val dramAddrBits: Int  = log2Ceil(capacityBytes + carveBytes)
}

class ConfigError(msg: String) extends Exception(msg)

object CxlTrackParams {

  /** log2 of a summary region in bytes (docs/spec.md section 12: 2 MiB). */
  val SummaryRegionShift = 21

  // (field, lo, hi), generated from the register map (as host-stack/python/cxltrack/config.py checks them)
  private val ranges: Seq[(String, BigInt, BigInt)] = Regs.ConfigRanges

  /**
   * Implementation keys of the `[rtl]` section: how the RTL builds the device, not what the host sees (the reference
   * model ignores the section, host-stack/python/cxltrack/config.py).
   */
  private val rtlKeys: Seq[(String, BigInt, BigInt)] = Seq(("dram_tables", 0, 1), ("update_cache_entries", 1, 256))

  /**
   * Read a flat `key = integer` TOML file, with an optional `[rtl]` section of implementation keys; every error names
   * file, line and field.
   */
  def fromToml(path: String, impl: CxlTrackParams => CxlTrackParams = identity): CxlTrackParams = {
    val src = Source.fromFile(path)
    val lines =
      try src.getLines().toVector
      finally src.close()
    val values  = scala.collection.mutable.Map[String, (BigInt, Int)]()
    val rtl     = scala.collection.mutable.Map[String, BigInt]()
    val Line    = """\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([0-9_]+)\s*(#.*)?""".r
    val Section = """\[\s*([A-Za-z_]+)\s*\]\s*(#.*)?""".r
    var inRtl   = false
    for ((raw, n) <- lines.zipWithIndex) {
      val text = raw.trim
      if (text.nonEmpty && !text.startsWith("#")) text match {
        case Section("rtl", _) => inRtl = true
        case Section(s, _)     => throw new ConfigError(s"$path:${n + 1}: unknown section '[$s]' (known: [rtl])")
        case Line(k, v, _) if inRtl =>
          val x = BigInt(v.replace("_", ""))
          rtlKeys.find(_._1 == k) match {
            case None => throw new ConfigError(s"$path:${n + 1}: field 'rtl.$k': unknown field")
            case Some((_, lo, hi)) =>
              if (x < lo || x > hi) throw new ConfigError(s"$path:${n + 1}: field 'rtl.$k': $x is outside $lo..$hi")
          }
          rtl(k) = x
        case Line(k, v, _) =>
          if (!ranges.exists(_._1 == k)) throw new ConfigError(s"$path:${n + 1}: field '$k': unknown field")
          values(k) = (BigInt(v.replace("_", "")), n + 1)
        case _ => throw new ConfigError(s"$path:${n + 1}: cannot parse '$text' (expected key = integer)")
      }
    }
    for ((k, lo, hi) <- ranges) {
      val (v, n) = values.getOrElse(k, throw new ConfigError(s"$path: field '$k': missing"))
      if (v < lo || v > hi) throw new ConfigError(s"$path:$n: field '$k': $v is outside $lo..$hi")
    }
    def i(k: String)               = values(k)._1.toInt
    def fail(k: String, m: String) = throw new ConfigError(s"$path:${values(k)._2}: field '$k': $m")
    val cap                        = values("capacity_bytes")._1
    if (i("chunk_shift") < i("page_shift")) fail("chunk_shift", "smaller than page_shift")
    if (cap % (BigInt(64) << i("page_shift")) != 0) fail("capacity_bytes", "not a multiple of 64 pages")
    if (cap % (BigInt(1) << i("chunk_shift")) != 0) fail("capacity_bytes", "not a multiple of the chunk size")
    if ((cap >> i("chunk_shift")) > Regs.MAX_CHUNKS) fail("chunk_shift", s"more than ${Regs.MAX_CHUNKS} chunks")
    impl(
      CxlTrackParams(
        capacityBytes = cap,
        pageShift = i("page_shift"),
        slots = i("slots"),
        hotBits = i("hot_bits"),
        evqDepthLog2 = i("evq_depth_log2"),
        chunkShift = i("chunk_shift"),
        batDiskBits = i("bat_disk_bits"),
        batBlockBits = i("bat_block_bits"),
        tickNs = values("tick_ns")._1.toLong,
        dramTables = rtl.getOrElse("dram_tables", BigInt(0)) == 1,
        cacheEntries = rtl.getOrElse("update_cache_entries", BigInt(16)).toInt
      )
    )
  }
}
