// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** States of the [[CommandEngine]]. */
object CmdState extends ChiselEnum {
  val sInit, sIdle, sCheck, sHarvest, sDma, sDmaMark, sCopy, sBatRead, sBatWait, sMerge, sQuery, sList = Value
}

/**
 * A harvest step: one row of one table, read and optionally cleared or halved. A bitmap row is 512 pages (`mask`: its
 * 64-page words inside the harvested range, the only ones a CLEAR clears); a hotness row is one 64-page word (`mask`
 * bit 0 set).
 */
class HarvestStep(wordBits: Int) extends Bundle {
  val row   = UInt(wordBits.W)
  val table = UInt(2.W) // the harvest opcode's low bits: 1 dirty, 2 accessed, 3 hotness
  val op    = UInt(TableOp.Bits.W)
  val mask  = UInt(8.W)
}

/** The answer to a harvest step, two cycles after it: the row as it was before the step. */
class HarvestRow(hotBits: Int) extends Bundle {
  val bitmap  = UInt(512.W)              // dirty or accessed
  val hotness = Vec(64, UInt(hotBits.W)) // hotness
}

/** A BAT command's access to the association table: the valid bit (a table port) and the block/disk payload (RAM). */
/** A list harvest's answered row (docs/spec.md 5.4): its `n` records (non-zero words) in page order from position 0. */
class ListRow extends Bundle {
  val recs = Vec(8, UInt(128.W))
  val n    = UInt(4.W)
}

class BatRequest(pageBits: Int, payloadBits: Int) extends Bundle {
  val op   = UInt(TableOp.Bits.W) // READ (BAT_GET), CLEAR (BAT_CLEAR, BAT_DISCARD), SET (BAT_SET)
  val page = UInt(pageBits.W)
  val data = UInt(payloadBits.W)  // BAT_SET: disk << block_bits | block
}

object CommandEngine {

  /**
   * Depth of the DMA beat FIFO: the two-cycle table delay plus slack for a stalled W channel, and for a list (stream
   * mode) the writer's burst of 16 beats: 16 outstanding bursts of 16 beats cover 256 cycles of host write latency.
   */
  val DmaFifo = 16

  /** Depth of the list harvest's FIFO of compacted rows (up to 8 records each) between the table and the packer. */
  val ListFifo = 4

  /** Width of the DMA port's addresses (a port exists even without DMA, 1 bit wide, tied off). */
  def dmaAddrBits(p: CxlTrackParams): Int = p.dmaAddrBits max 1

  /** Width of a DMA transfer's length in bytes: a hotness harvest of the whole device is `pages` bytes. */
  def dmaLenBits(p: CxlTrackParams): Int = log2Ceil(p.pages + 1) + 1
}

/**
 * The command engine (docs/spec.md section 5): latches a launch, checks it in the spec's order (opcode, flags,
 * alignment, ranges, state), runs it and completes with status and results. It owns the RESULT window and the chunk
 * owner table; it drives the table ports for harvest steps and BAT commands, and hands slot commands to the
 * [[SlotBuffer]] and released chunks to the [[ScrubEngine]].
 *
 * Timing: a launch enters the check state the next cycle. A dirty or accessed harvest scans the summary bits of the
 * rows it touches in the check cycle (docs/rtl-notes.md, "Tables"): the RESULT words of its range read zero from then
 * on (a zero flag per 8-byte RESULT word), and if no row is marked it completes in that cycle; otherwise it steps one
 * marked row (512 pages) per cycle from the next cycle, lowest first, and collects each answer two cycles later into
 * RESULT (`k + 3` cycles for `k` marked rows). A hotness harvest steps one 64-page word per cycle (`n + 3` cycles for
 * `n` words). BAT_GET/BAT_DISCARD read the payload RAM in the check cycle and the valid bit arrives with the table
 * port's answer two cycles later; BAT_SET and BAT_CLEAR complete in the check cycle. A merge or query runs in the slot
 * buffer until it reports done; CHUNK_LIST writes one 8-byte RESULT word per cycle. After reset the engine clears the
 * RESULT window (64 cycles) before it is idle.
 */
class CommandEngine(p: CxlTrackParams) extends Module {
  val nSlots      = p.slots
  val nChunks     = p.chunks
  val wordBits    = log2Ceil(p.words) max 1
  val payloadBits = p.batDiskBits + p.batBlockBits
  val io = IO(new Bundle {
    // register port
    val launch  = Input(Valid(UInt(32.W))) // a CMD_OP write while not busy
    val args    = Input(Vec(3, UInt(64.W)))
    val cmdOp   = Output(UInt(32.W))       // CMD_OP as last launched
    val busy    = Output(Bool())
    val code    = Output(UInt(8.W))
    val seq     = Output(UInt(16.W))
    val result0 = Output(UInt(64.W))
    val result1 = Output(UInt(64.W))
    val done    = Output(Bool())           // a command completed (INT_STATUS.CMD_DONE)
    val ready   = Output(Bool())           // RESULT cleared after reset: the register port may take accesses
    val idle    = Output(Bool())
    // RESULT window: the register port reads one line in its decode stage
    val resultRead = Input(Valid(UInt(6.W)))
    val resultLine = Output(Vec(64, UInt(8.W))) // the line read the cycle before
    // tables
    val harvest    = Output(Valid(new HarvestStep(wordBits)))
    val harvestRow = Input(Valid(new HarvestRow(p.hotBits)))
    val scanRow    = Output(UInt(p.rowBits.W))         // the first row of the harvest's range (ARG0 / 512)
    val scanBits   = Input(Vec(2, UInt(p.scanRows.W))) // dirty, accessed: rows marked from scanRow up
    val scanNow    = Output(Bool())                    // scanBits are read in this cycle (tables in DRAM load them)
    val bat        = Output(Valid(new BatRequest(p.pageBits, payloadBits)))
    val batPayload = Input(UInt(payloadBits.W))        // the payload RAM, one cycle after a read
    val batValid   = Input(Valid(Bool()))              // the valid bit, two cycles after the request
    // slots
    val slots       = Input(Vec(nSlots, new SlotView))
    val slotAlloc   = Output(Valid(new SlotAlloc(p.slotBits)))
    val slotRelease = Output(Valid(UInt(p.slotBits.W)))
    val mergeStart  = Output(Valid(new MergeStart(p.slotBits, p.pageBits)))
    val mergeDone   = Input(Bool())
    val queryStart  = Output(Valid(UInt(p.slotBits.W)))
    val queryWord   = Input(Valid(new MaskLine))
    val queryDone   = Input(Bool())
    // chunks and scrub
    val scrubEnq    = Decoupled(UInt(p.chunkBits.W))
    val scrubFinish = Input(Valid(UInt(p.chunkBits.W)))
    val scrubEvent  = Output(Valid(new EventRec))
    // DMA harvest (docs/rtl-notes.md "DMA harvest"): the transfer, its beats in address order, its completion
    val dmaStart = Output(Valid(new DmaStart(CommandEngine.dmaAddrBits(p), CommandEngine.dmaLenBits(p))))
    val dmaData  = Decoupled(UInt(512.W))
    val dmaDone  = Input(Valid(Bool())) // bits: a B response was SLVERR/DECERR
    // list harvest (stream mode of the writer, docs/spec.md 5.4): beats in the FIFO, WSTRB of the head beat, no more
    val dmaAvail = Output(UInt(8.W))
    val dmaStrb  = Output(UInt(64.W))
    val dmaEnd   = Output(Bool())
    // CHUNK_COPY (docs/spec.md 7.1): the copy engine's start (the chunk); while `copying` the DMA writer takes its beats
    // from the copy engine instead of `dmaData`, and `dmaDone` completes the command
    val copyStart = Output(Valid(UInt(p.chunkBits.W)))
    val copying   = Output(Bool())
  })
  private def fit(x: UInt, w: Int): UInt = x.pad(w)(w - 1, 0)
  import TableOp._

  // ------------------------------------------------------------------ RESULT window
  // Eight column RAMs of 64 x 8 bytes: column c holds the 8-byte words c, c + 8, ... so that a bitmap row (eight
  // consecutive RESULT words, at any 8-byte alignment) is written in one cycle, one word per column. A zero flag per
  // word makes the word read as zero until it is next written (a harvest's rows that are not stepped); a write of some
  // bytes of a flagged word writes zeros into its other bytes.
  val resultMem = Seq.fill(8)(SyncReadMem(64, Vec(8, UInt(8.W))))
  val zeroFlag  = RegInit(VecInit(Seq.fill(64)(VecInit(Seq.fill(8)(false.B)))))
  val colWrite  = WireDefault(VecInit(Seq.fill(8)(false.B)))
  val colLine   = WireDefault(VecInit(Seq.fill(8)(0.U(6.W))))
  val colData   = WireDefault(VecInit(Seq.fill(8)(0.U(64.W))))
  val colMask   = WireDefault(VecInit(Seq.fill(8)(0.U(8.W))))
  val zeroRange = WireDefault(false.B) // a bitmap harvest's check: its words read zero
  val zeroWords = WireDefault(0.U(10.W))
  for (c <- 0 until 8) {
    val l    = colLine(c)
    val flag = zeroFlag(l)(c)
    val mask = Mux(flag, 0xff.U(8.W), colMask(c))
    val data = VecInit(Seq.tabulate(8)(b => Mux(colMask(c)(b), colData(c)(8 * b + 7, 8 * b), 0.U(8.W))))
    when(colWrite(c)) {
      resultMem(c).write(l, data, mask.asBools)
      zeroFlag(l)(c) := false.B
    }
  }
  when(zeroRange) {
    for (l <- 0 until 64; c <- 0 until 8) when((8 * l + c).U < zeroWords)(zeroFlag(l)(c) := true.B)
  }
  val readFlags = RegEnable(zeroFlag(io.resultRead.bits), io.resultRead.valid)
  val readCols  = resultMem.map(_.read(io.resultRead.bits, io.resultRead.valid))
  io.resultLine := VecInit(Seq.tabulate(64)(b => Mux(readFlags(b / 8), 0.U(8.W), readCols(b / 8)(b % 8))))

  /** write the 8-byte RESULT word `word` (bytes enabled by `mask`) */
  def writeWord(word: UInt, data: UInt, mask: UInt): Unit =
    for (c <- 0 until 8) when(word(2, 0) === c.U) {
      colWrite(c) := true.B
      colLine(c)  := word.pad(9)(8, 3)
      colData(c)  := data
      colMask(c)  := mask
    }

  /** write a whole RESULT line */
  def writeLine(line: UInt, data: Seq[UInt]): Unit =
    for (c <- 0 until 8) {
      colWrite(c) := true.B
      colLine(c)  := line
      colData(c)  := data(c)
      colMask(c)  := 0xff.U
    }

  // ------------------------------------------------------------------ chunk owner table
  val OWNED      = Regs.ChunkState.OWNED.U(2.W)
  val SCRUBBING  = Regs.ChunkState.SCRUBBING.U(2.W)
  val chunkState = RegInit(VecInit(Seq.fill(nChunks)(Regs.ChunkState.FREE.U(2.W))))
  val ownerBits  = log2Ceil(Regs.MAX_OWNER + 1)
  val chunkOwner = RegInit(VecInit(Seq.fill(nChunks)(0.U(ownerBits.W))))
  // released chunks are zero-filled in release order by the scrub engine; its finish frees them here
  val finished = io.scrubFinish.bits
  io.scrubEvent.valid      := io.scrubFinish.valid
  io.scrubEvent.bits.typ   := Regs.Event.SCRUB_DONE.U
  io.scrubEvent.bits.index := finished
  io.scrubEvent.bits.arg   := chunkOwner(finished)
  when(io.scrubFinish.valid) {
    chunkState(finished) := Regs.ChunkState.FREE.U
    chunkOwner(finished) := 0.U
  }
  io.scrubEnq.valid := false.B
  io.scrubEnq.bits  := 0.U

  // ------------------------------------------------------------------ command registers
  val state        = RegInit(CmdState.sInit)
  val initLine     = RegInit(0.U(7.W))
  val cmdOp        = RegInit(0.U(32.W))
  val busy         = RegInit(false.B)
  val code         = RegInit(0.U(8.W))
  val seq          = RegInit(0.U(16.W))
  val result0      = RegInit(0.U(64.W))
  val result1      = RegInit(0.U(64.W))
  val op           = RegInit(0.U(8.W))
  val clear        = RegInit(false.B)
  val decay        = RegInit(false.B)
  val dma          = RegInit(false.B)
  val lst          = RegInit(false.B)                             // CMD_OP.LIST
  val rsvd         = RegInit(0.U(22.W))
  val arg0         = RegInit(0.U(64.W))
  val arg1         = RegInit(0.U(64.W))
  val arg2         = RegInit(0.U(64.W))
  val nextWord     = RegInit(0.U((wordBits + 1).W))               // harvest: the next word to step (hotness)
  val endWord      = RegInit(0.U((wordBits + 1).W))               // harvest: the word after the range
  val startWord    = RegInit(0.U((wordBits + 1).W))               // harvest: the range's first word
  val rowFirst     = RegInit(0.U(p.rowBits.W))                    // bitmap harvest: the range's first row
  val pending      = RegInit(0.U(p.scanRows.W))                   // bitmap harvest: marked rows not yet stepped
  val wordIndex    = RegInit(0.U(10.W))                           // harvest and list: answers collected / words written
  val total        = RegInit(0.U(16.W))                           // harvest and list: bits (counters) found so far
  val left         = RegInit(0.U(10.W))                           // harvest: answers still to collect
  val batPayload   = RegInit(0.U(payloadBits.W))
  val mergeValid   = RegInit(0.U(log2Ceil(Regs.SLOT.SIZE + 1).W)) // SLOT_MERGE: the slot's valid bytes at launch
  val queryResult0 = RegInit(0.U(64.W))
  val queryResult1 = RegInit(0.U(64.W))
  val unit         = RegInit(0.U((wordBits + 1).W))               // DMA: the next unit to step (or mark again)
  val unitEnd      = RegInit(0.U((wordBits + 1).W))               // DMA: the unit after the range
  val dmaTotal     = RegInit(0.U(64.W))                           // DMA: bits (counters) found so far
  val beatsLeft    = RegInit(0.U((wordBits + 1).W))               // DMA: beats not yet handed to the writer
  val held         = RegInit(0.U(512.W))                          // DMA: the previous row (unaligned bitmap start)
  val haveHeld     = RegInit(false.B)
  val listRecs     = RegInit(0.U(64.W))                           // list: records found so far (RESULT1)
  val listEnd      = RegInit(false.B)                             // list: every beat handed to the writer
  val doneNow      = WireDefault(false.B)
  io.cmdOp   := cmdOp
  io.busy    := busy
  io.code    := code
  io.seq     := seq
  io.result0 := result0
  io.result1 := result1
  io.done    := doneNow
  io.ready   := state =/= CmdState.sInit
  io.idle    := state === CmdState.sIdle

  def complete(status: Int, r0: UInt, r1: UInt): Unit = {
    busy    := false.B
    code    := status.U
    result0 := r0
    result1 := r1
    doneNow := true.B
    state   := CmdState.sIdle
  }

  val OpFields = Regs.CMD_OP
  when(io.launch.valid) {
    val v = io.launch.bits
    cmdOp   := v
    op      := v(OpFields.OP_LSB + OpFields.OP_WIDTH - 1, OpFields.OP_LSB)
    clear   := v(OpFields.CLEAR_LSB)
    decay   := v(OpFields.DECAY_LSB)
    dma     := v(OpFields.DMA_LSB)
    lst     := v(OpFields.LIST_LSB)
    rsvd    := v(OpFields.RSVD_LSB + OpFields.RSVD_WIDTH - 1, OpFields.RSVD_LSB)
    arg0    := io.args(0)
    arg1    := io.args(1)
    arg2    := io.args(2)
    busy    := true.B
    seq     := seq + 1.U
    result0 := 0.U
    result1 := 0.U
    state   := CmdState.sCheck
  }

  // ------------------------------------------------------------------ checks
  val Op        = Regs.Op
  val Status    = Regs.Status
  val known     = Op.All.map(o => op === o.U).reduce(_ || _)
  val isHarvest = op === Op.HARVEST_DIRTY.U || op === Op.HARVEST_ACCESSED.U || op === Op.HARVEST_HOTNESS.U
  // DMA: only on a harvest, only where the configuration has the DMA port (CAP_DMA.PRESENT)
  // LIST: only with DMA, only on the bitmap harvests (CAP_DMA.LIST is 1 wherever the DMA port exists)
  // CHUNK_COPY (spec 7.1): always DMA, no flag (CLEAR/DECAY/DMA/LIST/RSVD give FLAGS through the rules above); refused
  // with FLAGS where the core has no copy engine (CAP_DMA.COPY = 0).
  val isBitmap = op === Op.HARVEST_DIRTY.U || op === Op.HARVEST_ACCESSED.U
  val flagsBad = rsvd =/= 0.U || ((clear || decay) && !isHarvest) ||
    (decay && (op =/= Op.HARVEST_HOTNESS.U || clear)) || (dma && (!isHarvest || (p.dmaAddrBits == 0).B)) ||
    (lst && (!dma || !isBitmap)) || (op === Op.CHUNK_COPY.U && (!p.hasCopy).B)
  val alignBad = arg0(5, 0) =/= 0.U || arg1(5, 0) =/= 0.U || (dma && arg2(5, 0) =/= 0.U)
  val harvestLimit =
    Mux(op === Op.HARVEST_HOTNESS.U, Regs.HARVEST_MAX_HOTNESS_PAGES.U, Regs.HARVEST_MAX_BITMAP_PAGES.U)
  // DMA: no RESULT-window limit (the whole device in one command), but the bytes written must fit in the bus
  // addresses the port can drive: ARG2 + len <= 2^ADDR_BITS (which also excludes a wrap of 2^64)
  // a list's buffer must hold the worst case, one 16-byte record per 64-page word: count / 4 bytes
  require(Regs.DMA_LIST_RECORD_BYTES == 16, "the list packer puts four records in a 64-byte beat")
  val dmaBytes   = Mux(op === Op.HARVEST_HOTNESS.U, arg1, Mux(lst, arg1 >> 2, arg1 >> 3))
  val dmaEnd     = arg2 +& dmaBytes
  val dmaEndBad  = dmaEnd > (BigInt(1) << (p.dmaAddrBits max 1)).U
  val harvestBad = arg1 === 0.U || (!dma && arg1 > harvestLimit) || (arg0 +& arg1) > p.pages.U || (dma && dmaEndBad)
  val page0Bad   = arg0 >= p.pages.U
  val page1Bad   = arg1 >= p.pages.U
  val slotBad    = arg0 >= nSlots.U
  val chunkBad   = arg0 >= nChunks.U || arg1 === 0.U || arg1 > Regs.MAX_OWNER.U
  // CHUNK_COPY: the chunk's bytes at [ARG2, ARG2 + 2^chunk_shift) must fit in the port's bus addresses (or wrap 2^64)
  val copyBytes = BigInt(1) << p.chunkShift
  val copyBad   = arg2 +& copyBytes.U > (BigInt(1) << (p.dmaAddrBits max 1)).U
  val slot      = arg0(p.slotBits - 1, 0)
  val chunk     = arg0(p.chunkBits - 1, 0)
  val freeSlots = VecInit(io.slots.map(_.state === Regs.SlotState.FREE.U)).asUInt

  // ------------------------------------------------------------------ table, slot and scrub requests
  io.harvest.valid        := false.B
  io.harvest.bits.row     := 0.U
  io.harvest.bits.table   := 0.U
  io.harvest.bits.op      := READ.U
  io.harvest.bits.mask    := 0.U
  io.scanRow              := Mux(state === CmdState.sDma, fit(unit, p.rowBits), fit(arg0 >> 9, p.rowBits))
  io.dmaStart.valid       := false.B
  io.dmaStart.bits.addr   := fit(arg2, CommandEngine.dmaAddrBits(p))
  io.dmaStart.bits.bytes  := fit(dmaBytes, CommandEngine.dmaLenBits(p))
  io.dmaStart.bits.stream := lst
  io.bat.valid            := false.B
  io.bat.bits.op          := READ.U
  io.bat.bits.page        := 0.U
  io.bat.bits.data        := 0.U
  io.slotAlloc.valid      := false.B
  io.slotAlloc.bits.slot  := 0.U
  io.slotAlloc.bits.tag   := arg0
  io.slotRelease.valid    := false.B
  io.slotRelease.bits     := slot
  io.mergeStart.valid     := false.B
  io.mergeStart.bits.slot := slot
  io.mergeStart.bits.page := arg1(p.pageBits - 1, 0)
  io.queryStart.valid     := false.B
  io.queryStart.bits      := slot
  io.copyStart.valid      := false.B
  io.copyStart.bits       := chunk
  io.copying              := state === CmdState.sCopy

  switch(state) {
    is(CmdState.sInit) {
      // RESULT reads as zero after reset
      writeLine(initLine(5, 0), Seq.fill(8)(0.U(64.W)))
      initLine                      := initLine + 1.U
      when(initLine === 63.U)(state := CmdState.sIdle)
    }
    is(CmdState.sCheck) {
      when(!known) {
        complete(Status.UNKNOWN_OP, 0.U, 0.U)
      }.elsewhen(flagsBad) {
        complete(Status.FLAGS, 0.U, 0.U)
      }.elsewhen(op === Op.NOP.U) {
        complete(Status.OK, 0.U, 0.U)
      }.elsewhen(isHarvest) {
        when(alignBad) {
          complete(Status.ALIGN, 0.U, 0.U)
        }.elsewhen(harvestBad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.otherwise {
          nextWord  := fit(arg0 >> 6, wordBits + 1)
          startWord := fit(arg0 >> 6, wordBits + 1)
          endWord   := fit((arg0 + arg1) >> 6, wordBits + 1)
          rowFirst  := fit(arg0 >> 9, p.rowBits)
          wordIndex := 0.U
          total     := 0.U
          // DMA: units (512-page rows of a bitmap, 64-page words of hotness) in address order, one per cycle
          val hot = op === Op.HARVEST_HOTNESS.U
          unit := Mux(hot, fit(arg0 >> 6, wordBits + 1), fit(arg0 >> 9, wordBits + 1))
          unitEnd := Mux(
            hot,
            fit((arg0 + arg1) >> 6, wordBits + 1),
            fit(((arg0 + arg1 - 1.U) >> 9) + 1.U, wordBits + 1)
          )
          dmaTotal  := 0.U
          listRecs  := 0.U
          listEnd   := false.B
          beatsLeft := fit((dmaBytes + 63.U) >> 6, wordBits + 1)
          haveHeld  := false.B
          when(dma) {
            io.dmaStart.valid := true.B
            state             := CmdState.sDma
          }.elsewhen(op === Op.HARVEST_HOTNESS.U) {
            left  := fit(arg1 >> 6, 10)
            state := CmdState.sHarvest
          }.otherwise {
            // the summary scan: the rows of the range whose summary bit is set (bit i: row rowFirst + i)
            val rowsIn = fit(((arg0 + arg1 - 1.U) >> 9) - (arg0 >> 9) + 1.U, log2Ceil(p.scanRows + 1))
            val inMask = ((1.U << rowsIn) - 1.U)(p.scanRows - 1, 0)
            val marked = Mux(op === Op.HARVEST_DIRTY.U, io.scanBits(0), io.scanBits(1)) & inMask
            pending   := marked
            left      := PopCount(marked)
            zeroRange := true.B
            zeroWords := fit(arg1 >> 6, 10)
            when(marked === 0.U) {
              complete(Status.OK, 0.U, 0.U)
            }.otherwise {
              state := CmdState.sHarvest
            }
          }
        }
      }.elsewhen(op === Op.BAT_SET.U) {
        when(page0Bad || (arg1 >> p.batBlockBits) =/= 0.U || (arg2 >> p.batDiskBits) =/= 0.U) {
          complete(Status.RANGE, 0.U, 0.U)
        }.otherwise {
          io.bat.valid     := true.B
          io.bat.bits.op   := SET.U
          io.bat.bits.page := arg0(p.pageBits - 1, 0)
          io.bat.bits.data := Cat(arg2(p.batDiskBits - 1, 0), arg1(p.batBlockBits - 1, 0))
          complete(Status.OK, 0.U, 0.U)
        }
      }.elsewhen(op === Op.BAT_GET.U || op === Op.BAT_DISCARD.U || op === Op.BAT_CLEAR.U) {
        when(page0Bad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.elsewhen(op === Op.BAT_CLEAR.U) {
          io.bat.valid     := true.B
          io.bat.bits.op   := CLEAR.U
          io.bat.bits.page := arg0(p.pageBits - 1, 0)
          complete(Status.OK, 0.U, 0.U)
        }.otherwise {
          io.bat.valid     := true.B
          io.bat.bits.op   := Mux(op === Op.BAT_GET.U, READ.U, CLEAR.U)
          io.bat.bits.page := arg0(p.pageBits - 1, 0)
          state            := CmdState.sBatRead
        }
      }.elsewhen(op === Op.SLOT_ALLOC.U) {
        when(freeSlots === 0.U) {
          complete(Status.NO_RESOURCE, 0.U, 0.U)
        }.otherwise {
          val i = PriorityEncoder(freeSlots)
          io.slotAlloc.valid     := true.B
          io.slotAlloc.bits.slot := i
          complete(Status.OK, i, 0.U)
        }
      }.elsewhen(op === Op.SLOT_MERGE.U) {
        when(slotBad || page1Bad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.elsewhen(io.slots(slot).state =/= Regs.SlotState.OPEN.U) {
          complete(Status.STATE, 0.U, 0.U)
        }.otherwise {
          io.mergeStart.valid := true.B
          mergeValid          := io.slots(slot).count
          state               := CmdState.sMerge
        }
      }.elsewhen(op === Op.SLOT_RELEASE.U) {
        when(slotBad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.elsewhen(io.slots(slot).state =/= Regs.SlotState.OPEN.U) {
          complete(Status.STATE, 0.U, 0.U)
        }.otherwise {
          io.slotRelease.valid := true.B
          complete(Status.OK, 0.U, 0.U)
        }
      }.elsewhen(op === Op.SLOT_QUERY.U) {
        when(slotBad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.otherwise {
          val Query0 = Regs.LAYOUT_SLOT_QUERY_RESULT0
          val s      = io.slots(slot)
          queryResult0 := (s.state << Query0.STATE_LSB) | ((s.count === Regs.SLOT.SIZE.U).asUInt << Query0.FULL_LSB) |
            (s.count << Query0.VALID_BYTES_LSB)
          queryResult1        := s.tag
          io.queryStart.valid := true.B
          state               := CmdState.sQuery
        }
      }.elsewhen(op === Op.CHUNK_ASSIGN.U || op === Op.CHUNK_RELEASE.U) {
        when(chunkBad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.elsewhen(op === Op.CHUNK_ASSIGN.U) {
          when(chunkState(chunk) =/= Regs.ChunkState.FREE.U) {
            complete(Status.BUSY, 0.U, 0.U)
          }.otherwise {
            chunkState(chunk) := OWNED
            chunkOwner(chunk) := arg1(ownerBits - 1, 0)
            complete(Status.OK, 0.U, 0.U)
          }
        }.otherwise {
          when(chunkState(chunk) =/= OWNED) {
            complete(Status.STATE, 0.U, 0.U)
          }.elsewhen(chunkOwner(chunk) =/= arg1) {
            complete(Status.PERM, 0.U, 0.U)
          }.otherwise {
            chunkState(chunk) := SCRUBBING
            io.scrubEnq.valid := true.B
            io.scrubEnq.bits  := chunk
            complete(Status.OK, 0.U, 0.U)
          }
        }
      }.elsewhen(op === Op.CHUNK_COPY.U) {
        // spec 7.1 (checks in the order of section 5): ALIGN, RANGE, STATE (not OWNED), PERM (other owner)
        when(arg2(5, 0) =/= 0.U) {
          complete(Status.ALIGN, 0.U, 0.U)
        }.elsewhen(chunkBad || copyBad) {
          complete(Status.RANGE, 0.U, 0.U)
        }.elsewhen(chunkState(chunk) =/= OWNED) {
          complete(Status.STATE, 0.U, 0.U)
        }.elsewhen(chunkOwner(chunk) =/= arg1) {
          complete(Status.PERM, 0.U, 0.U)
        }.otherwise {
          // the writer in stream mode (it announces only beats the copy engine holds), the copy engine's reads
          io.dmaStart.valid       := true.B
          io.dmaStart.bits.stream := true.B
          io.copyStart.valid      := true.B
          state                   := CmdState.sCopy
        }
      }.elsewhen(op === Op.CHUNK_QUERY.U) {
        when(arg0 >= nChunks.U) {
          complete(Status.RANGE, 0.U, 0.U)
        }.otherwise {
          complete(Status.OK, chunkState(chunk), chunkOwner(chunk))
        }
      }.otherwise { // CHUNK_LIST
        when(arg1 > Regs.MAX_OWNER.U) {
          complete(Status.RANGE, 0.U, 0.U)
        }.otherwise {
          wordIndex := 0.U
          total     := 0.U
          state     := CmdState.sList
        }
      }
    }
    is(CmdState.sHarvest) { // one step per cycle; each answer arrives two cycles after its step
      io.harvest.bits.table := op(1, 0)
      io.harvest.bits.op    := Mux(clear, ZERO.U, Mux(decay, HALVE.U, READ.U))
      when(op === Op.HARVEST_HOTNESS.U) {
        io.harvest.valid                    := nextWord =/= endWord
        io.harvest.bits.row                 := nextWord(wordBits - 1, 0)
        io.harvest.bits.mask                := 1.U
        when(nextWord =/= endWord)(nextWord := nextWord + 1.U)
      }.otherwise {
        // the lowest marked row; its words inside [startWord, endWord)
        val i   = PriorityEncoder(pending)
        val row = rowFirst +& i
        io.harvest.valid    := pending =/= 0.U
        io.harvest.bits.row := fit(row, wordBits)
        io.harvest.bits.mask := VecInit(Seq.tabulate(8) { j =>
          val w = Cat(row, j.U(3.W))
          w >= startWord && w < endWord
        }).asUInt
        pending := pending & ~UIntToOH(i, p.scanRows)
      }
    }
  }
  // the step each answer belongs to (the tables answer two cycles after the step)
  val answeredRow  = ShiftRegister(io.harvest.bits.row, 2)
  val answeredMask = ShiftRegister(io.harvest.bits.mask, 2)
  when(state === CmdState.sHarvest && io.harvestRow.valid) {
    val found = Wire(UInt(16.W))
    val hot   = io.harvestRow.bits.hotness
    when(op === Op.HARVEST_HOTNESS.U) {
      writeLine(wordIndex(5, 0), Seq.tabulate(8)(c => Cat((0 until 8).reverse.map(b => hot(8 * c + b).pad(8)))))
      found := PopCount(hot.map(_ =/= 0.U))
    }.otherwise {
      // row r's word j is RESULT word 8 * r + j - startWord: with o = startWord % 8, column c takes word (c + o) % 8,
      // on line r - rowFirst, or the line before when c + o wraps
      val bitmap = io.harvestRow.bits.bitmap
      val rel    = fit(answeredRow - rowFirst, 7)
      val o      = startWord(2, 0)
      for (c <- 0 until 8) {
        val j    = (c.U(3.W) +& o)(2, 0)
        val wrap = (c.U(4.W) +& o) >= 8.U
        colWrite(c) := answeredMask(j)
        colLine(c)  := Mux(wrap, rel - 1.U, rel)(5, 0)
        colData(c)  := VecInit(Seq.tabulate(8)(k => bitmap(64 * k + 63, 64 * k)))(j)
        colMask(c)  := 0xff.U
      }
      val inRange = Cat((0 until 8).reverse.map(k => Fill(64, answeredMask(k))))
      found := PopCount(bitmap & inRange)
    }
    val t = total + found
    total     := t
    wordIndex := wordIndex + 1.U
    left      := left - 1.U
    when(left === 1.U)(complete(Status.OK, t, 0.U))
  }

  // ------------------------------------------------------------------ DMA harvest
  // One unit per cycle in address order: a marked row (summary bit read in this cycle, as the non-DMA scan reads it
  // in the check cycle) or a hotness word is stepped through the table port (read and cleared/halved, answered two
  // cycles later); an unmarked row is not stepped and travels as a zero token through the same two-cycle delay, so
  // the answers come back in address order. Each 64-page word keeps one atomic step (its row step, or the summary
  // read for an unmarked row: exact for the table as of three cycles before, later sets land after it), so property
  // (a) holds as in the RESULT path. A unit is issued only when the beat FIFO has room for it and every unit still in
  // the delay: the engine waits for the DMA port, the data path's table requests never do.
  val isHot    = op === Op.HARVEST_HOTNESS.U
  val o        = Mux(isHot, 0.U, startWord(2, 0)) // the range's first word within its row
  val beats    = Module(new Queue(UInt(512.W), CommandEngine.DmaFifo))
  val tokValid = RegInit(VecInit(Seq.fill(2)(false.B)))
  val tokZero  = Reg(Vec(2, Bool()))
  val tokMask  = Reg(Vec(2, UInt(8.W)))
  val tokRow   = Reg(Vec(2, UInt((wordBits + 1).W)))
  val inDelay  = PopCount(tokValid)
  val room     = beats.io.count +& inDelay < (CommandEngine.DmaFifo - 1).U
  val rowMask  = VecInit(Seq.tabulate(8)(j => Cat(unit, j.U(3.W)) >= startWord && Cat(unit, j.U(3.W)) < endWord)).asUInt
  val marked   = Mux(op === Op.HARVEST_DIRTY.U, io.scanBits(0)(0), io.scanBits(1)(0))
  // the states that read scanBits: a bitmap harvest's check (the RESULT path's summary scan) and its DMA stepping
  io.scanNow := (state === CmdState.sCheck && (op === Op.HARVEST_DIRTY.U || op === Op.HARVEST_ACCESSED.U)) ||
    (state === CmdState.sDma && !isHot)
  val issue     = WireDefault(false.B)
  val issueZero = WireDefault(false.B)
  val issueMask = Mux(isHot, 1.U(8.W), rowMask)
  val issueRow  = WireDefault(unit)
  // list (docs/spec.md 5.4): only marked rows are stepped. The summary window of scanRows rows from `unit` is read each
  // cycle: the lowest marked row in the range is stepped and the scan goes on after it; rows found unmarked have had
  // their atomic step (the summary read, as in the RESULT path) and cost nothing more; a window with no marked row is
  // skipped whole in one cycle.
  val rows     = Module(new Queue(new ListRow, CommandEngine.ListFifo))
  val listRoom = rows.io.count +& inDelay < CommandEngine.ListFifo.U
  val rowsLeft = unitEnd - unit
  val inWindow = Mux(
    rowsLeft >= p.scanRows.U,
    Fill(p.scanRows, 1.U(1.W)),
    ((1.U << rowsLeft(log2Ceil(p.scanRows + 1) - 1, 0)) - 1.U)(p.scanRows - 1, 0)
  )
  val window = Mux(op === Op.HARVEST_DIRTY.U, io.scanBits(0), io.scanBits(1)) & inWindow
  val hit    = PriorityEncoder(window)
  val hitRow = unit + hit
  val hitMask = VecInit(
    Seq.tabulate(8)(j => Cat(hitRow, j.U(3.W)) >= startWord && Cat(hitRow, j.U(3.W)) < endWord)
  ).asUInt
  when(state === CmdState.sDma && lst && unit =/= unitEnd && listRoom) {
    when(window =/= 0.U) {
      issue                 := true.B
      issueRow              := hitRow
      io.harvest.valid      := true.B
      io.harvest.bits.row   := fit(hitRow, wordBits)
      io.harvest.bits.table := op(1, 0)
      io.harvest.bits.op    := Mux(clear, ZERO.U, READ.U)
      io.harvest.bits.mask  := hitMask
      unit                  := hitRow + 1.U
    }.otherwise {
      unit := Mux(rowsLeft >= p.scanRows.U, unit + p.scanRows.U, unitEnd)
    }
  }
  when(state === CmdState.sDma && !lst && unit =/= unitEnd && room) {
    issue                 := true.B
    issueZero             := !isHot && !marked
    io.harvest.valid      := isHot || marked
    io.harvest.bits.row   := fit(unit, wordBits)
    io.harvest.bits.table := op(1, 0)
    io.harvest.bits.op    := Mux(clear, ZERO.U, Mux(decay, HALVE.U, READ.U))
    io.harvest.bits.mask  := issueMask
    unit                  := unit + 1.U
  }
  tokValid(0) := issue
  tokZero(0)  := issueZero
  tokMask(0)  := Mux(lst, hitMask, issueMask)
  tokRow(0)   := issueRow
  tokValid(1) := tokValid(0)
  tokZero(1)  := tokZero(0)
  tokMask(1)  := tokMask(0)
  tokRow(1)   := tokRow(0)
  // an answer (or a zero token) in address order: its 64-byte beat, its count of set bits / non-zero counters
  val arrived  = tokValid(1)
  val inRange  = Cat((0 until 8).reverse.map(k => Fill(64, tokMask(1)(k))))
  val rowData  = Mux(tokZero(1), 0.U(512.W), io.harvestRow.bits.bitmap & inRange)
  val hotVals  = io.harvestRow.bits.hotness
  val hotBeat  = Cat((0 until 64).reverse.map(j => hotVals(j).pad(8)))
  val unitData = Mux(isHot, hotBeat, rowData)
  val found    = Mux(isHot, PopCount(hotVals.map(_ =/= 0.U)), PopCount(rowData))
  // realign rows to beats when the range starts inside a row: beat k is the range's words 8k .. 8k + 7, i.e. the
  // upper 8 - o words of row k and the lower o words of row k + 1
  def joined(prev: UInt, next: UInt): UInt = VecInit(Seq.tabulate(8) { k =>
    ((prev >> (64 * k)).pad(1024) | (next.pad(512) << (64 * (8 - k))))(511, 0)
  })(o)
  val flush = state === CmdState.sDma && unit === unitEnd && !tokValid.asUInt.orR && haveHeld && beatsLeft =/= 0.U &&
    beats.io.enq.ready
  beats.io.enq.valid := false.B
  beats.io.enq.bits  := unitData
  when(state === CmdState.sDma && arrived && !lst) {
    dmaTotal := dmaTotal + found
    when(o === 0.U) {
      beats.io.enq.valid := true.B
    }.otherwise {
      held     := unitData
      haveHeld := true.B
      when(haveHeld) {
        beats.io.enq.valid := true.B
        beats.io.enq.bits  := joined(held, unitData)
      }
    }
  }.elsewhen(flush) {
    beats.io.enq.valid := true.B
    beats.io.enq.bits  := joined(held, 0.U)
    haveHeld           := false.B
  }
  when(beats.io.enq.fire)(beatsLeft := beatsLeft - 1.U)

  // list: an answered row's non-zero words in range become records (u64 first page, u64 bits: Cat(bits, page)),
  // compacted to the low positions in page order, and queued as one entry; the packer below fills 64-byte beats with
  // four records each, carrying up to three over to the next entry, so beats hold records without gaps.
  val words   = VecInit(Seq.tabulate(8)(j => rowData(64 * j + 63, 64 * j)))
  val nonzero = VecInit(words.map(_ =/= 0.U)).asUInt
  val recOf   = VecInit(Seq.tabulate(8)(j => Cat(words(j), Cat(tokRow(1), j.U(3.W), 0.U(6.W)).pad(64))))
  val before  = Seq.tabulate(8)(j => if (j == 0) 0.U(4.W) else PopCount(nonzero(j - 1, 0)))
  rows.io.enq.valid  := state === CmdState.sDma && lst && arrived && nonzero =/= 0.U
  rows.io.enq.bits.n := PopCount(nonzero)
  rows.io.enq.bits.recs := VecInit(Seq.tabulate(8) { k =>
    Mux1H(Seq.tabulate(8)(j => (nonzero(j) && before(j) === k.U) -> recOf(j)))
  })
  when(state === CmdState.sDma && lst && arrived) {
    dmaTotal := dmaTotal + PopCount(rowData)
    listRecs := listRecs + PopCount(nonzero)
  }
  // the packer: acc holds up to three records left over; `taken` records of the head entry are already packed
  val acc      = Reg(Vec(3, UInt(128.W)))
  val accN     = RegInit(0.U(2.W))
  val taken    = RegInit(0.U(4.W))
  val head     = rows.io.deq.bits
  val headLeft = Mux(rows.io.deq.valid, head.n - taken, 0.U)
  val have     = accN +& headLeft
  val combined = VecInit(Seq.tabulate(4) { i =>
    val fromHead = head.recs((taken +& i.U - accN)(2, 0))
    Mux(i.U < accN, acc(math.min(i, 2)), Mux(i.U < have, fromHead, 0.U))
  })
  val packBeat = Cat(combined.reverse)
  val lastBeat = state === CmdState.sDma && lst && unit === unitEnd && !tokValid.asUInt.orR && !rows.io.deq.valid
  val strbs    = Reg(Vec(CommandEngine.DmaFifo, UInt(64.W))) // WSTRB of each beat in the FIFO, in order
  val strbIn   = RegInit(0.U(log2Ceil(CommandEngine.DmaFifo).W))
  val strbOut  = RegInit(0.U(log2Ceil(CommandEngine.DmaFifo).W))
  rows.io.deq.ready := false.B
  val listEnq  = WireDefault(false.B)
  val listStrb = WireDefault(Fill(64, 1.U(1.W)))
  when(state === CmdState.sDma && lst) {
    when(have >= 4.U) {
      when(beats.io.enq.ready) {
        listEnq := true.B
        val take = 4.U - accN
        accN := 0.U
        when(taken +& take === head.n) {
          rows.io.deq.ready := true.B
          taken             := 0.U
        }.otherwise(taken := taken + take)
      }
    }.elsewhen(rows.io.deq.valid) { // fewer than four records in all: keep them for the next entry
      for (i <- 0 until 3) acc(i) := combined(i)
      accN              := have(1, 0)
      rows.io.deq.ready := true.B
      taken             := 0.U
    }.elsewhen(lastBeat && accN =/= 0.U && beats.io.enq.ready) { // the list's last, partial beat
      listEnq  := true.B
      listStrb := (1.U(65.W) << Cat(accN, 0.U(4.W))) - 1.U
      accN     := 0.U
    }
    when(lastBeat && accN === 0.U && !listEnq)(listEnd := true.B)
  }
  when(lst) {
    beats.io.enq.valid := listEnq
    beats.io.enq.bits  := packBeat
  }
  when(beats.io.enq.fire) { // every beat, so that the ring follows the FIFO (full strobes outside a list)
    strbs(strbIn) := listStrb
    strbIn        := strbIn + 1.U
  }
  when(beats.io.deq.fire)(strbOut := strbOut + 1.U)
  io.dmaAvail                     := beats.io.count
  io.dmaStrb                      := strbs(strbOut)
  io.dmaEnd                       := listEnd
  io.dmaData <> beats.io.deq
  when(state === CmdState.sDma && io.dmaDone.valid) {
    when(!io.dmaDone.bits) {
      complete(Status.OK, dmaTotal, Mux(lst, listRecs, 0.U))
    }.elsewhen(clear || decay) {
      // never lose a dirty bit: the range's steps cleared (halved) what the host did not receive, so every page of
      // the range is marked again (summary bits follow the rows), every counter becomes max(c, 1)
      unit  := Mux(isHot, fit(arg0 >> 6, wordBits + 1), fit(arg0 >> 9, wordBits + 1))
      state := CmdState.sDmaMark
    }.otherwise {
      complete(Status.DMA_ERROR, 0.U, 0.U)
    }
  }
  // the marking sweep: one unit per cycle through the harvest port; complete once the last step's answer is back (its
  // effect, and the summary bit, are written by then)
  when(state === CmdState.sDmaMark) {
    when(unit =/= unitEnd) {
      io.harvest.valid      := true.B
      io.harvest.bits.row   := fit(unit, wordBits)
      io.harvest.bits.table := op(1, 0)
      io.harvest.bits.op    := MARK.U
      io.harvest.bits.mask  := issueMask
      unit                  := unit + 1.U
    }
    tokValid(0) := unit =/= unitEnd
    when(unit === unitEnd && !tokValid.asUInt.orR)(complete(Status.DMA_ERROR, 0.U, 0.U))
  }

  // CHUNK_COPY: done at the writer's last B (every beat read and written); a failed write gives DMA_ERROR and changes
  // nothing (the copy changed nothing to give back)
  when(state === CmdState.sCopy && io.dmaDone.valid) {
    when(io.dmaDone.bits)(complete(Status.DMA_ERROR, 0.U, 0.U)).otherwise(complete(Status.OK, copyBytes.U, 0.U))
  }

  switch(state) {
    is(CmdState.sBatRead) { // payload from the RAM; the valid bit comes from the table a cycle later
      batPayload := io.batPayload
      state      := CmdState.sBatWait
    }
    is(CmdState.sBatWait) {
      val block = batPayload(p.batBlockBits - 1, 0)
      val disk  = batPayload >> p.batBlockBits
      val Bat1  = Regs.LAYOUT_BAT_RESULT1
      val valid = io.batValid.bits
      when(io.batValid.valid) {
        complete(Status.OK, Mux(valid, block, 0.U), Mux(valid, (disk << Bat1.DISK_LSB) | (1.U << Bat1.VALID_LSB), 0.U))
      }
    }
    is(CmdState.sMerge) {
      when(io.mergeDone)(complete(Status.OK, mergeValid, 0.U))
    }
    is(CmdState.sQuery) {
      when(io.queryWord.valid)(writeWord(io.queryWord.bits.line, io.queryWord.bits.mask, 0xff.U))
      when(io.queryDone)(complete(Status.OK, queryResult0, queryResult1))
    }
    is(CmdState.sList) {
      val groups = (nChunks + 63) / 64
      val nbytes = (nChunks + 7) / 8
      val bitsPerGroup = VecInit(Seq.tabulate(groups) { g =>
        VecInit(Seq.tabulate(64) { j =>
          val c = g * 64 + j
          if (c < nChunks)
            Mux(
              arg1 === 0.U,
              chunkState(c) === Regs.ChunkState.FREE.U,
              chunkState(c) === OWNED && chunkOwner(c) === arg1
            )
          else false.B
        }).asUInt
      })
      val bits = if (groups == 1) bitsPerGroup(0) else bitsPerGroup(wordIndex(log2Ceil(groups) - 1, 0))
      writeWord(wordIndex, bits, VecInit(Seq.tabulate(8)(b => (wordIndex * 8.U + b.U) < nbytes.U)).asUInt)
      val t = total + PopCount(bits)
      total     := t
      wordIndex := wordIndex + 1.U
      when(wordIndex === (groups - 1).U)(complete(Status.OK, t, 0.U))
    }
  }
}
