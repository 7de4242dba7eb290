// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * The cxltrack tracking engine (docs/spec.md): an AXI4 pass-through from the CXL.mem side (`s_axi`) to device memory
 * (`m_axi`) with tracking on the side band, plus the BAR0 register block on AXI4-Lite (`s_axil`). Every register
 * offset, field position, opcode, status and event type comes from the generated [[Regs]].
 *
 * Blocks (each with its own bench, docs/rtl-notes.md "Structure"): [[DataPath]] (the AXI4 path and its arbiter with the
 * internal writers), the per-page tables ([[TrackTable]]s and the BAT payload RAM, here), [[SlotBuffer]] (slots and the
 * merge engine), [[CommandEngine]] (commands, RESULT window, chunk owner table), [[ScrubEngine]], [[CopyEngine]]
 * (CHUNK_COPY's reads, written to the host by the [[DmaWriter]]), [[EventQueue]] and [[RegisterPort]] (registers,
 * illegal accesses, interrupt).
 *
 * Tables: dirty, accessed, BAT-valid bitmaps and hotness counters are [[TrackTable]]s (RAM, one read-modify-write per
 * port and cycle, effect two cycles after the request). Within one cycle the port order decides: a harvest step before
 * the sets/increments of its cycle, write invalidations before a BAT command. See docs/rtl-notes.md.
 */
class CxlTrackCore(val p: CxlTrackParams) extends Module {
  override def desiredName = "CxlTrackCore"
  // the whole core keeps every table on chip; with dram_tables only the engine top is built (DramHarvestBench): the
  // core's side of the gated engine clock is not designed yet (docs/rtl-notes.md, "Why the whole core is not built")
  require(!p.dramTables, "dram_tables = 1: build DramHarvestBench (DramHarvestMain), not the whole core")

  val s_axi  = IO(Flipped(new Axi4(p.addrBits, p.dataBits, p.idBits)))
  val m_axi  = IO(new Axi4(p.memAddrBits, p.dataBits, p.idBits + 1))
  val s_axil = IO(Flipped(new AxiLite(p.liteAddrBits)))
  // DMA harvest: the AXI4 write master toward the host side of the CXL IP (docs/rtl-notes.md, "DMA harvest")
  val h_axi       = IO(new Axi4Write(CommandEngine.dmaAddrBits(p), 512, 1))
  val irq         = IO(Output(Bool()))
  val msi         = IO(Output(Bool()))
  val idle        = IO(Output(Bool()))
  val dbg_time_en = IO(Input(Bool()))
  val dbg_tick    = IO(Input(Bool()))

  val dataPath = Module(new DataPath(p))
  val slots    = Module(new SlotBuffer(p))
  val commands = Module(new CommandEngine(p))
  val scrub    = Module(new ScrubEngine(p.chunks, p.chunkShift, p.pageShift, p.pageBits, p.memAddrBits))
  val copy     = if (p.hasCopy) Some(Module(new CopyEngine(p.chunks, p.chunkShift, p.memAddrBits))) else None
  val evq      = Module(new EventQueue(p.evqDepthLog2, p.eventPorts))
  val regs     = Module(new RegisterPort(p))
  val requests = dataPath.events
  val trackEn  = regs.io.ctrl(Regs.CTRL.TRACK_EN_LSB)
  val batEvtEn = regs.io.ctrl(Regs.CTRL.BAT_INV_EVT_EN_LSB)

  // ------------------------------------------------------------------ time
  val prescaler     = RegInit(0.U(log2Ceil(p.tickCycles + 1).W))
  val prescalerWrap = prescaler === (p.tickCycles - 1).U
  when(dbg_time_en)(prescaler := Mux(prescalerWrap, 0.U, prescaler + 1.U))
  val tick = (dbg_time_en && prescalerWrap) || dbg_tick

  // ------------------------------------------------------------------ data path
  dataPath.s_axi <> s_axi
  m_axi <> dataPath.m_axi
  dataPath.internal.mergeAw <> slots.io.mergeAw
  dataPath.internal.mergeW <> slots.io.mergeW
  dataPath.internal.scrubAw <> scrub.io.aw
  dataPath.internal.scrubW <> scrub.io.w
  // CHUNK_COPY's reads (not requests: no tracking effect); without a copy engine the port is idle
  copy match {
    case Some(c) =>
      dataPath.copyRead.ar <> c.io.ar
      c.io.r := dataPath.copyRead.r
    case None =>
      dataPath.copyRead.ar.valid := false.B
      dataPath.copyRead.ar.bits  := DontCare
  }
  val intEnd   = requests.intWriteEnd.valid
  val scrubEnd = intEnd && requests.intWriteEnd.bits
  scrub.io.bDone         := scrubEnd
  slots.io.mergeWriteEnd := intEnd && !requests.intWriteEnd.bits
  val intEndPage = Mux(requests.intWriteEnd.bits, scrub.io.endPage, slots.io.mergePage)

  // ------------------------------------------------------------------ tables
  // Every per-page table is a TrackTable (RAM banks + live-value table): a request enters in the cycle of its
  // handshake and takes effect two cycles later, in port order within its cycle: a harvest step before the
  // sets/increments of its cycle; write invalidations before a BAT command of the same cycle (docs/rtl-notes.md).
  // Dirty and accessed are rows of 512 pages with summary bits (one per 2 MiB region); hotness and BAT validity are
  // 64-page words.
  val bitmaps    = BitmapTables(p)
  val dirty      = bitmaps.dirty
  val accessed   = bitmaps.accessed.get
  val hotness    = Module(new TrackTable(p.words, p.hotBits, 3)) // 0 harvest, 1 read accept, 2 write accept
  val batValid   = Module(new TrackTable(p.words, 1, 3))         // 0 write accept, 1 write end, 2 BAT command
  val batPayload = SyncReadMem(p.pages.toInt, UInt((p.batDiskBits + p.batBlockBits).W))
  import TableOp._
  def drive(t: TrackTable, port: Int, v: Bool, page: UInt, op: UInt): Unit = BitmapTables.drive(p, t, port, v, page, op)

  // harvest steps of the command engine, answered two cycles later on port 0
  val step = commands.io.harvest
  bitmaps.connect(commands)
  hotness.io.req(0).valid     := step.valid && step.bits.table === 3.U
  hotness.io.req(0).bits.word := step.bits.row
  hotness.io.req(0).bits.lane := 0.U
  hotness.io.req(0).bits.op   := step.bits.op
  hotness.io.req(0).bits.mask := 1.U
  hotness.io.scanRow          := 0.U
  commands.io.harvestRow.bits.hotness :=
    VecInit(Seq.tabulate(64)(j => hotness.io.resp(0).bits((j + 1) * p.hotBits - 1, j * p.hotBits)))
  commands.io.harvestRow.valid := bitmaps.answered || hotness.io.resp(0).valid

  // requests of the data path
  val readTracked  = requests.readAccept.valid && trackEn
  val writeTracked = requests.writeAccept.valid && trackEn
  val writeEnd     = requests.extWriteEnd.valid || intEnd // one B per cycle on the memory side
  val writeEndPage = Mux(requests.extWriteEnd.valid, requests.extWriteEnd.bits, intEndPage)
  drive(dirty, 1, writeEnd && trackEn, writeEndPage, SET.U)
  drive(accessed, 1, readTracked, requests.readAccept.bits, SET.U)
  drive(accessed, 2, writeTracked, requests.writeAccept.bits, SET.U)
  drive(hotness, 1, readTracked, requests.readAccept.bits, INC.U)
  drive(hotness, 2, writeTracked, requests.writeAccept.bits, INC.U)

  // association: invalidated at write begin and write end (internal writes included), whatever TRACK_EN says
  drive(batValid, 0, requests.writeAccept.valid, requests.writeAccept.bits, CLEAR.U)
  drive(batValid, 1, writeEnd, writeEndPage, CLEAR.U)
  val bat = commands.io.bat
  drive(batValid, 2, bat.valid, bat.bits.page, bat.bits.op)
  batValid.io.scanRow := 0.U
  val batEvtEnAt                = ShiftRegister(batEvtEn, 2) // CTRL as it was in the request's cycle
  def pageAt(r: TableReq): UInt = Cat(r.word, r.lane).pad(p.pageBits)(p.pageBits - 1, 0)
  val cleared    = (0 until 2).map(k => batValid.io.resp(k).valid && batValid.io.resp(k).bits(batValid.io.done(k).lane))
  val statBatInv = RegInit(0.U(32.W))
  val batInvNext = statBatInv +& PopCount(cleared)
  statBatInv             := Mux(batInvNext(32), "hffffffff".U(32.W), batInvNext(31, 0))
  commands.io.batPayload := batPayload.read(bat.bits.page, bat.valid && bat.bits.op =/= SET.U)
  when(bat.valid && bat.bits.op === SET.U)(batPayload.write(bat.bits.page, bat.bits.data))
  commands.io.batValid.valid := batValid.io.resp(2).valid
  commands.io.batValid.bits  := batValid.io.resp(2).bits(batValid.io.done(2).lane)
  val tablesBusy = dirty.io.busy || accessed.io.busy || hotness.io.busy || batValid.io.busy

  // ------------------------------------------------------------------ slots, commands, scrub
  slots.io.tick         := tick
  slots.io.timeout      := regs.io.slotTimeout
  slots.io.alloc        := commands.io.slotAlloc
  slots.io.release      := commands.io.slotRelease
  slots.io.mergeStart   := commands.io.mergeStart
  slots.io.queryStart   := commands.io.queryStart
  commands.io.slots     := slots.io.view
  commands.io.mergeDone := slots.io.mergeDone
  commands.io.queryWord := slots.io.queryWord
  commands.io.queryDone := slots.io.queryDone
  scrub.io.enq <> commands.io.scrubEnq
  val dma = Module(new DmaWriter(CommandEngine.dmaAddrBits(p), CommandEngine.dmaLenBits(p)))
  dma.io.start        := commands.io.dmaStart
  commands.io.dmaDone := dma.io.done
  h_axi <> dma.io.axi
  // the writer's stream: the command engine's beats (DMA harvests), or during CHUNK_COPY the copy engine's
  val copying = commands.io.copying && p.hasCopy.B
  dma.io.data.valid         := Mux(copying, copy.map(_.io.data.valid).getOrElse(false.B), commands.io.dmaData.valid)
  dma.io.data.bits          := Mux(copying, copy.map(_.io.data.bits).getOrElse(0.U), commands.io.dmaData.bits)
  commands.io.dmaData.ready := !copying && dma.io.data.ready
  dma.io.avail              := Mux(copying, copy.map(_.io.avail).getOrElse(0.U), commands.io.dmaAvail)
  dma.io.strb               := Mux(copying, Fill(64, 1.U(1.W)), commands.io.dmaStrb)
  dma.io.end                := Mux(copying, copy.map(_.io.end).getOrElse(true.B), commands.io.dmaEnd)
  copy.foreach { c =>
    c.io.start      := commands.io.copyStart
    c.io.data.ready := copying && dma.io.data.ready
  }
  commands.io.scrubFinish := scrub.io.finish

  // ------------------------------------------------------------------ events, in SEQ order within a cycle
  val invEvents = (0 until 2).map { k =>
    val e = Wire(Valid(new EventRec))
    e.valid      := cleared(k) && batEvtEnAt
    e.bits.typ   := Regs.Event.BAT_INVALIDATED.U
    e.bits.index := 0.U
    e.bits.arg   := pageAt(batValid.io.done(k))
    e
  }
  val sources =
    invEvents ++ Seq(regs.io.errorEvent, slots.io.fullEvent) ++ slots.io.timeoutEvent ++
      Seq(slots.io.mergeEvent, commands.io.scrubEvent)
  require(sources.length == p.eventPorts)
  for ((src, k) <- sources.zipWithIndex) evq.io.push(k) := src
  evq.io.pop := regs.io.evqPop

  // ------------------------------------------------------------------ register port
  regs.io.axil <> s_axil
  regs.io.cmdBusy        := commands.io.busy
  regs.io.cmdReady       := commands.io.ready
  regs.io.cmdDone        := commands.io.done
  commands.io.launch     := regs.io.launch
  commands.io.args       := regs.io.args
  commands.io.resultRead := regs.io.resultRead
  regs.io.resultLine     := commands.io.resultLine
  regs.io.slotWindow <> slots.io.window
  regs.io.slotOpen    := VecInit(slots.io.view.map(_.state === Regs.SlotState.OPEN.U))
  regs.io.evqCount    := evq.io.count
  regs.io.evqOverflow := evq.io.overflow
  val values = regs.io.values
  val head   = evq.io.head
  val stats  = dataPath.stats
  values("ID")           := Regs.ID.RESET.U
  values("VERSION")      := Regs.VERSION.RESET.U
  values("CAP_PAGES_LO") := (p.pages & 0xffffffffL).U
  values("CAP_PAGES_HI") := (p.pages >> 32).U
  values("CAP_GEOM") := ((BigInt(p.pageShift) << Regs.CAP_GEOM.PAGE_SHIFT_LSB) | (BigInt(
    p.slots
  ) << Regs.CAP_GEOM.NUM_SLOTS_LSB) |
    (BigInt(p.hotBits) << Regs.CAP_GEOM.HOT_BITS_LSB) | (BigInt(p.evqDepthLog2) << Regs.CAP_GEOM.EVQ_DEPTH_LOG2_LSB)).U
  values("CAP_CHUNK") := ((BigInt(p.chunkShift) << Regs.CAP_CHUNK.CHUNK_SHIFT_LSB) |
    (BigInt(p.chunks) << Regs.CAP_CHUNK.NUM_CHUNKS_LSB)).U
  values("CAP_BAT") := ((BigInt(p.batDiskBits) << Regs.CAP_BAT.DISK_BITS_LSB) |
    (BigInt(p.batBlockBits) << Regs.CAP_BAT.BLOCK_BITS_LSB)).U
  values("CAP_TICK") := p.tickNs.U
  values("CAP_DMA") := (if (p.dmaAddrBits == 0) 0.U
                        else
                          ((BigInt(1) << Regs.CAP_DMA.PRESENT_LSB) | (BigInt(1) << Regs.CAP_DMA.LIST_LSB) |
                            (BigInt(if (p.hasCopy) 1 else 0) << Regs.CAP_DMA.COPY_LSB) |
                            (BigInt(p.dmaAddrBits) << Regs.CAP_DMA.ADDR_BITS_LSB)).U)
  values("CMD_OP") := commands.io.cmdOp
  values(
    "CMD_STATUS"
  ) := (commands.io.seq << Regs.CMD_STATUS.SEQ_LSB) | (commands.io.code << Regs.CMD_STATUS.CODE_LSB) |
    (commands.io.busy.asUInt << Regs.CMD_STATUS.BUSY_LSB)
  values("CMD_RESULT0_LO") := commands.io.result0(31, 0)
  values("CMD_RESULT0_HI") := commands.io.result0(63, 32)
  values("CMD_RESULT1_LO") := commands.io.result1(31, 0)
  values("CMD_RESULT1_HI") := commands.io.result1(63, 32)
  values("EVQ_COUNT")      := evq.io.count
  values("EVQ_DROPPED")    := evq.io.dropped
  values("EVT_HEAD0")      := (head.index << Regs.EVT_HEAD0.INDEX_LSB) | (head.typ << Regs.EVT_HEAD0.TYPE_LSB)
  values("EVT_HEAD1")      := evq.io.headSeq
  values("EVT_ARG_LO")     := head.arg(31, 0)
  values("EVT_ARG_HI")     := head.arg(63, 32)
  values("STAT_READS_LO")  := stats.reads(31, 0)
  values("STAT_READS_HI")  := stats.reads(63, 32)
  values("STAT_WRITES_LO") := stats.writes(31, 0)
  values("STAT_WRITES_HI") := stats.writes(63, 32)
  values("STAT_DECERR")    := stats.decerr
  values("STAT_BAT_INV")   := statBatInv

  irq  := regs.io.irq
  msi  := regs.io.msi
  idle := commands.io.idle && scrub.io.idle && !tablesBusy && copy.fold(true.B)(_.io.idle)
}

/**
 * The dirty and accessed bitmaps (rows of `p.rowLanes` pages with one summary bit per `p.regionPages` pages) and their
 * connection to the command engine's harvest steps and summary scan: shared by [[CxlTrackCore]] and the harvest
 * benchmark's top [[HarvestBench]], so that both run the same tables with the same wiring.
 */
class BitmapTables(p: CxlTrackParams, withAccessed: Boolean = true, packedState: Boolean = false) {
  // dirty: 0 harvest, 1 write end; accessed: 0 harvest, 1 read accept, 2 write accept
  private def table(ports: Int) = Module(
    new TrackTable(
      p.rows,
      1,
      ports,
      lanes = p.rowLanes,
      regionLanes = p.regionPages,
      scanWidth = p.scanRows,
      packedState = packedState
    )
  )
  val dirty    = table(2)
  val accessed = if (withAccessed) Some(table(3)) else None
  val tables   = Seq(dirty -> 1) ++ accessed.map(_ -> 2)

  /** Port 0 of the tables: the engine's steps; the answers and the summary scan back to the engine. */
  def connect(commands: CommandEngine): Unit = {
    val step = commands.io.harvest
    for ((t, table) <- tables) {
      t.io.req(0).valid     := step.valid && step.bits.table === table.U
      t.io.req(0).bits.word := step.bits.row.pad(p.rowBits)(p.rowBits - 1, 0)
      t.io.req(0).bits.lane := 0.U
      t.io.req(0).bits.op   := step.bits.op
      t.io.req(0).bits.mask := step.bits.mask
      t.io.scanRow          := commands.io.scanRow
    }
    commands.io.harvestRow.bits.bitmap :=
      accessed.fold(dirty.io.resp(0).bits)(a => Mux(dirty.io.resp(0).valid, dirty.io.resp(0).bits, a.io.resp(0).bits))
    commands.io.scanBits(0) := dirty.io.scanBits
    commands.io.scanBits(1) := accessed.fold(0.U)(_.io.scanBits)
  }

  /** An answer of a harvest step on either table. */
  def answered: Bool = tables.map(_._1.io.resp(0).valid).reduce(_ || _)
  def busy: Bool     = tables.map(_._1.io.busy).reduce(_ || _)
}

object BitmapTables {
  def apply(p: CxlTrackParams): BitmapTables = new BitmapTables(p)

  /** A per-page request to a table: row and lane of `page` for the table's row width. */
  def drive(p: CxlTrackParams, t: TrackTable, port: Int, v: Bool, page: UInt, op: UInt): Unit = {
    val laneBits = log2Ceil(t.lanes)
    t.io.req(port).valid     := v
    t.io.req(port).bits.word := (if (t.words == 1) 0.U else (page >> laneBits).pad(t.wordBits)(t.wordBits - 1, 0))
    t.io.req(port).bits.lane := page.pad(laneBits)(laneBits - 1, 0)
    t.io.req(port).bits.op   := op
    t.io.req(port).bits.mask := 0.U
  }
}
