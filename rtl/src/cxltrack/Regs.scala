// SPDX-License-Identifier: Apache-2.0
// Generated from regmap/cxltrack.rdl by regmap/regmap_gen.py. Do not edit.
package cxltrack

/** Register map of the cxltrack tracker: offsets, field positions, enums. */
object Regs {
  val PCI_VENDOR_ID: BigInt = BigInt("1b36", 16)
  val PCI_DEVICE_ID: BigInt = BigInt("c7e", 16)
  val PCI_MEM_DEVICE_ID: BigInt = BigInt("c7f", 16)
  val BAR: BigInt = BigInt("0", 16)
  val BAR_SIZE: BigInt = BigInt("20000", 16)
  val HARVEST_ALIGN_PAGES: BigInt = BigInt("40", 16)
  val MSIX_VECTORS: BigInt = BigInt("1", 16)
  val HARVEST_MAX_BITMAP_PAGES: BigInt = BigInt("8000", 16)
  val HARVEST_MAX_HOTNESS_PAGES: BigInt = BigInt("1000", 16)
  val DMA_LIST_RECORD_BYTES: BigInt = BigInt("10", 16)
  val MAX_OWNER: BigInt = BigInt("ffff", 16)
  val MAX_CHUNKS: BigInt = BigInt("8000", 16)

  /** Legal range (field, min, max) of each configuration field (docs/spec.md section 1.1). */
  val ConfigRanges: Seq[(String, BigInt, BigInt)] = Seq(
    ("capacity_bytes", BigInt("1", 16), BigInt("400000000000", 16)),
    ("page_shift", BigInt("c", 16), BigInt("15", 16)),
    ("slots", BigInt("1", 16), BigInt("10", 16)),
    ("hot_bits", BigInt("1", 16), BigInt("8", 16)),
    ("evq_depth_log2", BigInt("2", 16), BigInt("c", 16)),
    ("chunk_shift", BigInt("c", 16), BigInt("1e", 16)),
    ("bat_disk_bits", BigInt("1", 16), BigInt("10", 16)),
    ("bat_block_bits", BigInt("1", 16), BigInt("30", 16)),
    ("tick_ns", BigInt("1", 16), BigInt("ffffffff", 16))
  )

  object ID {
    val OFFSET: Int = 0x0
    val RESET: BigInt = BigInt("43584c54", 16)
    val MAGIC_LSB: Int = 0
    val MAGIC_WIDTH: Int = 32
  }
  object VERSION {
    val OFFSET: Int = 0x4
    val RESET: BigInt = BigInt("10003", 16)
    val MINOR_LSB: Int = 0
    val MINOR_WIDTH: Int = 16
    val MAJOR_LSB: Int = 16
    val MAJOR_WIDTH: Int = 16
  }
  object CAP_PAGES_LO {
    val OFFSET: Int = 0x8
    val RESET: BigInt = BigInt("0", 16)
    val PAGES_LSB: Int = 0
    val PAGES_WIDTH: Int = 32
  }
  object CAP_PAGES_HI {
    val OFFSET: Int = 0xc
    val RESET: BigInt = BigInt("0", 16)
    val PAGES_LSB: Int = 0
    val PAGES_WIDTH: Int = 32
  }
  object CAP_GEOM {
    val OFFSET: Int = 0x10
    val RESET: BigInt = BigInt("0", 16)
    val PAGE_SHIFT_LSB: Int = 0
    val PAGE_SHIFT_WIDTH: Int = 6
    val NUM_SLOTS_LSB: Int = 8
    val NUM_SLOTS_WIDTH: Int = 5
    val HOT_BITS_LSB: Int = 16
    val HOT_BITS_WIDTH: Int = 4
    val EVQ_DEPTH_LOG2_LSB: Int = 24
    val EVQ_DEPTH_LOG2_WIDTH: Int = 4
  }
  object CAP_CHUNK {
    val OFFSET: Int = 0x14
    val RESET: BigInt = BigInt("0", 16)
    val CHUNK_SHIFT_LSB: Int = 0
    val CHUNK_SHIFT_WIDTH: Int = 6
    val NUM_CHUNKS_LSB: Int = 8
    val NUM_CHUNKS_WIDTH: Int = 24
  }
  object CAP_BAT {
    val OFFSET: Int = 0x18
    val RESET: BigInt = BigInt("0", 16)
    val DISK_BITS_LSB: Int = 0
    val DISK_BITS_WIDTH: Int = 8
    val BLOCK_BITS_LSB: Int = 8
    val BLOCK_BITS_WIDTH: Int = 8
  }
  object CAP_TICK {
    val OFFSET: Int = 0x1c
    val RESET: BigInt = BigInt("0", 16)
    val TICK_NS_LSB: Int = 0
    val TICK_NS_WIDTH: Int = 32
  }
  object CTRL {
    val OFFSET: Int = 0x20
    val RESET: BigInt = BigInt("1", 16)
    val TRACK_EN_LSB: Int = 0
    val TRACK_EN_WIDTH: Int = 1
    val BAT_INV_EVT_EN_LSB: Int = 1
    val BAT_INV_EVT_EN_WIDTH: Int = 1
  }
  object SLOT_TIMEOUT {
    val OFFSET: Int = 0x24
    val RESET: BigInt = BigInt("0", 16)
    val TICKS_LSB: Int = 0
    val TICKS_WIDTH: Int = 32
  }
  object CAP_DMA {
    val OFFSET: Int = 0x28
    val RESET: BigInt = BigInt("0", 16)
    val PRESENT_LSB: Int = 0
    val PRESENT_WIDTH: Int = 1
    val LIST_LSB: Int = 1
    val LIST_WIDTH: Int = 1
    val COPY_LSB: Int = 2
    val COPY_WIDTH: Int = 1
    val ADDR_BITS_LSB: Int = 8
    val ADDR_BITS_WIDTH: Int = 8
  }
  object INT_STATUS {
    val OFFSET: Int = 0x30
    val RESET: BigInt = BigInt("0", 16)
    val EVQ_LSB: Int = 0
    val EVQ_WIDTH: Int = 1
    val CMD_DONE_LSB: Int = 1
    val CMD_DONE_WIDTH: Int = 1
    val ERROR_LSB: Int = 2
    val ERROR_WIDTH: Int = 1
  }
  object INT_ENABLE {
    val OFFSET: Int = 0x34
    val RESET: BigInt = BigInt("0", 16)
    val EVQ_LSB: Int = 0
    val EVQ_WIDTH: Int = 1
    val CMD_DONE_LSB: Int = 1
    val CMD_DONE_WIDTH: Int = 1
    val ERROR_LSB: Int = 2
    val ERROR_WIDTH: Int = 1
  }
  object ERR_STATUS {
    val OFFSET: Int = 0x40
    val RESET: BigInt = BigInt("0", 16)
    val BAD_REG_LSB: Int = 0
    val BAD_REG_WIDTH: Int = 1
    val BAD_WIDTH_LSB: Int = 1
    val BAD_WIDTH_WIDTH: Int = 1
    val CMD_OVERRUN_LSB: Int = 2
    val CMD_OVERRUN_WIDTH: Int = 1
    val SLOT_WRITE_LSB: Int = 3
    val SLOT_WRITE_WIDTH: Int = 1
    val EVQ_OVERFLOW_LSB: Int = 4
    val EVQ_OVERFLOW_WIDTH: Int = 1
  }
  object ERR_ADDR {
    val OFFSET: Int = 0x44
    val RESET: BigInt = BigInt("0", 16)
    val OFFSET_LSB: Int = 0
    val OFFSET_WIDTH: Int = 32
  }
  object ERR_COUNT {
    val OFFSET: Int = 0x48
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object CMD_ARG0_LO {
    val OFFSET: Int = 0x80
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_ARG0_HI {
    val OFFSET: Int = 0x84
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_ARG1_LO {
    val OFFSET: Int = 0x88
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_ARG1_HI {
    val OFFSET: Int = 0x8c
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_ARG2_LO {
    val OFFSET: Int = 0x90
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_ARG2_HI {
    val OFFSET: Int = 0x94
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_OP {
    val OFFSET: Int = 0xa0
    val RESET: BigInt = BigInt("0", 16)
    val OP_LSB: Int = 0
    val OP_WIDTH: Int = 8
    val CLEAR_LSB: Int = 8
    val CLEAR_WIDTH: Int = 1
    val DECAY_LSB: Int = 9
    val DECAY_WIDTH: Int = 1
    val DMA_LSB: Int = 10
    val DMA_WIDTH: Int = 1
    val LIST_LSB: Int = 11
    val LIST_WIDTH: Int = 1
    val RSVD_LSB: Int = 12
    val RSVD_WIDTH: Int = 20
  }
  object CMD_STATUS {
    val OFFSET: Int = 0xa4
    val RESET: BigInt = BigInt("0", 16)
    val BUSY_LSB: Int = 0
    val BUSY_WIDTH: Int = 1
    val CODE_LSB: Int = 8
    val CODE_WIDTH: Int = 8
    val SEQ_LSB: Int = 16
    val SEQ_WIDTH: Int = 16
  }
  object CMD_RESULT0_LO {
    val OFFSET: Int = 0xa8
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_RESULT0_HI {
    val OFFSET: Int = 0xac
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_RESULT1_LO {
    val OFFSET: Int = 0xb0
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object CMD_RESULT1_HI {
    val OFFSET: Int = 0xb4
    val RESET: BigInt = BigInt("0", 16)
    val VALUE_LSB: Int = 0
    val VALUE_WIDTH: Int = 32
  }
  object EVQ_COUNT {
    val OFFSET: Int = 0x100
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 16
  }
  object EVQ_DROPPED {
    val OFFSET: Int = 0x104
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object EVQ_POP {
    val OFFSET: Int = 0x108
    val RESET: BigInt = BigInt("0", 16)
    val POP_LSB: Int = 0
    val POP_WIDTH: Int = 1
  }
  object EVT_HEAD0 {
    val OFFSET: Int = 0x110
    val RESET: BigInt = BigInt("0", 16)
    val TYPE_LSB: Int = 0
    val TYPE_WIDTH: Int = 8
    val INDEX_LSB: Int = 16
    val INDEX_WIDTH: Int = 16
  }
  object EVT_HEAD1 {
    val OFFSET: Int = 0x114
    val RESET: BigInt = BigInt("0", 16)
    val SEQ_LSB: Int = 0
    val SEQ_WIDTH: Int = 32
  }
  object EVT_ARG_LO {
    val OFFSET: Int = 0x118
    val RESET: BigInt = BigInt("0", 16)
    val ARG_LSB: Int = 0
    val ARG_WIDTH: Int = 32
  }
  object EVT_ARG_HI {
    val OFFSET: Int = 0x11c
    val RESET: BigInt = BigInt("0", 16)
    val ARG_LSB: Int = 0
    val ARG_WIDTH: Int = 32
  }
  object STAT_READS_LO {
    val OFFSET: Int = 0x200
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object STAT_READS_HI {
    val OFFSET: Int = 0x204
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object STAT_WRITES_LO {
    val OFFSET: Int = 0x208
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object STAT_WRITES_HI {
    val OFFSET: Int = 0x20c
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object STAT_DECERR {
    val OFFSET: Int = 0x210
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }
  object STAT_BAT_INV {
    val OFFSET: Int = 0x214
    val RESET: BigInt = BigInt("0", 16)
    val COUNT_LSB: Int = 0
    val COUNT_WIDTH: Int = 32
  }

  /**
   * How software may access a register (from the RDL's sw, onwrite, singlepulse and swmod): `readable`;
   * `writeMask`, the bits a write may change; `w1cMask`, the write-1-to-clear bits; `storage`, every
   * writable field is plain storage (a write stores it, nothing else happens).
   */
  case class Reg(name: String, offset: Int, reset: BigInt, readable: Boolean, writeMask: BigInt, w1cMask: BigInt, storage: Boolean) {
    def writable: Boolean = writeMask != 0
  }
  val Registers: Seq[Reg] = Seq(
    Reg("ID", 0x0, BigInt("43584c54", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("VERSION", 0x4, BigInt("10003", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CAP_PAGES_LO", 0x8, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CAP_PAGES_HI", 0xc, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CAP_GEOM", 0x10, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CAP_CHUNK", 0x14, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CAP_BAT", 0x18, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CAP_TICK", 0x1c, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CTRL", 0x20, BigInt("1", 16), true, BigInt("3", 16), BigInt("0", 16), true),
    Reg("SLOT_TIMEOUT", 0x24, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CAP_DMA", 0x28, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("INT_STATUS", 0x30, BigInt("0", 16), true, BigInt("6", 16), BigInt("6", 16), false),
    Reg("INT_ENABLE", 0x34, BigInt("0", 16), true, BigInt("7", 16), BigInt("0", 16), true),
    Reg("ERR_STATUS", 0x40, BigInt("0", 16), true, BigInt("1f", 16), BigInt("1f", 16), false),
    Reg("ERR_ADDR", 0x44, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("ERR_COUNT", 0x48, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CMD_ARG0_LO", 0x80, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CMD_ARG0_HI", 0x84, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CMD_ARG1_LO", 0x88, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CMD_ARG1_HI", 0x8c, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CMD_ARG2_LO", 0x90, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CMD_ARG2_HI", 0x94, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), true),
    Reg("CMD_OP", 0xa0, BigInt("0", 16), true, BigInt("ffffffff", 16), BigInt("0", 16), false),
    Reg("CMD_STATUS", 0xa4, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CMD_RESULT0_LO", 0xa8, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CMD_RESULT0_HI", 0xac, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CMD_RESULT1_LO", 0xb0, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("CMD_RESULT1_HI", 0xb4, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("EVQ_COUNT", 0x100, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("EVQ_DROPPED", 0x104, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("EVQ_POP", 0x108, BigInt("0", 16), false, BigInt("1", 16), BigInt("0", 16), false),
    Reg("EVT_HEAD0", 0x110, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("EVT_HEAD1", 0x114, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("EVT_ARG_LO", 0x118, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("EVT_ARG_HI", 0x11c, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("STAT_READS_LO", 0x200, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("STAT_READS_HI", 0x204, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("STAT_WRITES_LO", 0x208, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("STAT_WRITES_HI", 0x20c, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("STAT_DECERR", 0x210, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false),
    Reg("STAT_BAT_INV", 0x214, BigInt("0", 16), true, BigInt("0", 16), BigInt("0", 16), false)
  )

  object LAYOUT_BAT_RESULT1 {
    val DISK_LSB: Int = 0
    val DISK_WIDTH: Int = 16
    val VALID_LSB: Int = 32
    val VALID_WIDTH: Int = 1
  }
  object LAYOUT_SLOT_QUERY_RESULT0 {
    val STATE_LSB: Int = 0
    val STATE_WIDTH: Int = 2
    val FULL_LSB: Int = 8
    val FULL_WIDTH: Int = 1
    val VALID_BYTES_LSB: Int = 32
    val VALID_BYTES_WIDTH: Int = 13
  }
  object LAYOUT_CHUNK_QUERY_RESULT0 {
    val STATE_LSB: Int = 0
    val STATE_WIDTH: Int = 2
  }
  object RESULT {
    val OFFSET: Int = 0x1000
    val SIZE: Int = 0x1000
    val COUNT: Int = 1
    val STRIDE: Int = 0x1000
  }
  object SLOT {
    val OFFSET: Int = 0x10000
    val SIZE: Int = 0x1000
    val COUNT: Int = 16
    val STRIDE: Int = 0x1000
  }
  object ChunkState {
    val FREE: Int = 0x00
    val OWNED: Int = 0x01
    val SCRUBBING: Int = 0x02
    val All: Seq[Int] = Seq(FREE, OWNED, SCRUBBING)
  }
  object Event {
    val NONE: Int = 0x00
    val SLOT_FULL: Int = 0x01
    val SLOT_TIMEOUT: Int = 0x02
    val MERGE_DONE: Int = 0x03
    val SCRUB_DONE: Int = 0x04
    val BAT_INVALIDATED: Int = 0x05
    val ERROR: Int = 0x06
    val All: Seq[Int] = Seq(NONE, SLOT_FULL, SLOT_TIMEOUT, MERGE_DONE, SCRUB_DONE, BAT_INVALIDATED, ERROR)
  }
  object Op {
    val NOP: Int = 0x00
    val HARVEST_DIRTY: Int = 0x01
    val HARVEST_ACCESSED: Int = 0x02
    val HARVEST_HOTNESS: Int = 0x03
    val BAT_SET: Int = 0x10
    val BAT_GET: Int = 0x11
    val BAT_CLEAR: Int = 0x12
    val BAT_DISCARD: Int = 0x13
    val SLOT_ALLOC: Int = 0x20
    val SLOT_MERGE: Int = 0x21
    val SLOT_RELEASE: Int = 0x22
    val SLOT_QUERY: Int = 0x23
    val CHUNK_ASSIGN: Int = 0x30
    val CHUNK_RELEASE: Int = 0x31
    val CHUNK_QUERY: Int = 0x32
    val CHUNK_LIST: Int = 0x33
    val CHUNK_COPY: Int = 0x34
    val All: Seq[Int] = Seq(NOP, HARVEST_DIRTY, HARVEST_ACCESSED, HARVEST_HOTNESS, BAT_SET, BAT_GET, BAT_CLEAR, BAT_DISCARD, SLOT_ALLOC, SLOT_MERGE, SLOT_RELEASE, SLOT_QUERY, CHUNK_ASSIGN, CHUNK_RELEASE, CHUNK_QUERY, CHUNK_LIST, CHUNK_COPY)
  }
  object SlotState {
    val FREE: Int = 0x00
    val OPEN: Int = 0x01
    val MERGING: Int = 0x02
    val All: Seq[Int] = Seq(FREE, OPEN, MERGING)
  }
  object Status {
    val OK: Int = 0x00
    val UNKNOWN_OP: Int = 0x01
    val RANGE: Int = 0x02
    val ALIGN: Int = 0x03
    val BUSY: Int = 0x04
    val STATE: Int = 0x05
    val NO_RESOURCE: Int = 0x06
    val PERM: Int = 0x07
    val FLAGS: Int = 0x08
    val DMA_ERROR: Int = 0x09
    val All: Seq[Int] = Seq(OK, UNKNOWN_OP, RANGE, ALIGN, BUSY, STATE, NO_RESOURCE, PERM, FLAGS, DMA_ERROR)
  }
}
