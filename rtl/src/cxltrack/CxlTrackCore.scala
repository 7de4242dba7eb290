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
 *
 * With `dram_tables = 1` (config/dram1t.toml) every per-page table is in device DRAM instead ([[DramTables]] behind the
 * master `d_axi`, [[CoreDramTables]]) and the command engine runs on a clock gated by the tables' `en`; the engine's
 * pulses cross through [[EngineCrossing]] (with on-chip tables `en` is constant high and the crossings are wires).
 */
class CxlTrackCore(val p: CxlTrackParams) extends Module {
  override def desiredName = "CxlTrackCore"
  val s_axi                = IO(Flipped(new Axi4(p.addrBits, p.dataBits, p.idBits)))
  val m_axi                = IO(new Axi4(p.memAddrBits, p.dataBits, p.idBits + 1))
  val s_axil               = IO(Flipped(new AxiLite(p.liteAddrBits)))
  // DMA harvest: the AXI4 write master toward the host side of the CXL IP (docs/rtl-notes.md, "DMA harvest")
  val h_axi       = IO(new Axi4Write(CommandEngine.dmaAddrBits(p), 512, 1))
  val irq         = IO(Output(Bool()))
  val msi         = IO(Output(Bool()))
  val idle        = IO(Output(Bool()))
  val dbg_time_en = IO(Input(Bool()))
  val dbg_tick    = IO(Input(Bool()))
  // the tables' carve-out in device DRAM (dram_tables = 1 only)
  val d_axi = if (p.dramTables) Some(IO(new Axi4(p.dramAddrBits, 512, 1))) else None

  val dramTables = if (p.dramTables) Some(Module(new DramTables(p, CoreDramTables.setTables))) else None
  val en         = dramTables.fold(true.B)(_.io.en) // the command engine's clock runs
  val cross      = new EngineCrossing(en)
  val dataPath   = Module(new DataPath(p))
  val slots      = Module(new SlotBuffer(p))
  val commands = withClock(dramTables.fold(clock)(t => CoreDramTables.engineClock(clock, t.io.en)))(
    Module(new CommandEngine(p))
  )
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
  val writeEnd     = requests.extWriteEnd.valid || intEnd // one B per cycle on the memory side
  val writeEndPage = Mux(requests.extWriteEnd.valid, requests.extWriteEnd.bits, intEndPage)
  val tab          = Wire(new CoreTablesOut)
  val tableIn      = new CoreTablesIn(requests, writeEnd, writeEndPage, trackEn, batEvtEn)
  dramTables match {
    case Some(t) =>
      CoreDramTables.connect(p, t, commands, tableIn, tab)
      d_axi.get <> t.axi
    case None =>
      CoreOnChipTables.connect(p, commands, tableIn, tab)
  }
  val statBatInv = RegInit(0.U(32.W))
  val batInvNext = statBatInv +& tab.batInvAdd
  statBatInv := Mux(batInvNext(32), "hffffffff".U(32.W), batInvNext(31, 0))
  // CMD_STATUS.BUSY: in DRAM a BAT_SET or BAT_CLEAR completes in the engine before it took effect
  val cmdBusy = commands.io.busy || tab.busy

  // ------------------------------------------------------------------ slots, commands, scrub
  slots.io.tick    := tick
  slots.io.timeout := regs.io.slotTimeout
  // the engine's pulses pass in its enabled cycles, the answers to it are held until one (EngineCrossing)
  slots.io.alloc             := cross.out(commands.io.slotAlloc)
  slots.io.release           := cross.out(commands.io.slotRelease)
  slots.io.mergeStart        := cross.out(commands.io.mergeStart)
  slots.io.queryStart        := cross.out(commands.io.queryStart)
  commands.io.slots          := slots.io.view
  commands.io.mergeDone      := cross.in(slots.io.mergeDone)
  commands.io.queryWord      := cross.in(slots.io.queryWord)
  commands.io.queryDone      := cross.in(slots.io.queryDone)
  scrub.io.enq.valid         := cross.out(commands.io.scrubEnq.valid)
  scrub.io.enq.bits          := commands.io.scrubEnq.bits
  commands.io.scrubEnq.ready := scrub.io.enq.ready
  val dma = Module(new DmaWriter(CommandEngine.dmaAddrBits(p), CommandEngine.dmaLenBits(p)))
  dma.io.start        := cross.out(commands.io.dmaStart)
  commands.io.dmaDone := cross.in(dma.io.done)
  h_axi <> dma.io.axi
  // the writer's stream: the command engine's beats (DMA harvests), or during CHUNK_COPY the copy engine's
  val copying = commands.io.copying && p.hasCopy.B
  dma.io.data.valid := Mux(copying, copy.map(_.io.data.valid).getOrElse(false.B), cross.out(commands.io.dmaData.valid))
  dma.io.data.bits  := Mux(copying, copy.map(_.io.data.bits).getOrElse(0.U), commands.io.dmaData.bits)
  commands.io.dmaData.ready := !copying && cross.out(dma.io.data.ready)
  dma.io.avail              := Mux(copying, copy.map(_.io.avail).getOrElse(0.U), commands.io.dmaAvail)
  dma.io.strb               := Mux(copying, Fill(64, 1.U(1.W)), commands.io.dmaStrb)
  dma.io.end                := Mux(copying, copy.map(_.io.end).getOrElse(true.B), commands.io.dmaEnd)
  copy.foreach { c =>
    c.io.start      := cross.out(commands.io.copyStart)
    c.io.data.ready := copying && dma.io.data.ready
  }
  commands.io.scrubFinish := cross.in(scrub.io.finish)

  // ------------------------------------------------------------------ events, in SEQ order within a cycle
  val sources =
    tab.invEvents ++ Seq(regs.io.errorEvent, slots.io.fullEvent) ++ slots.io.timeoutEvent ++
      Seq(slots.io.mergeEvent, cross.out(commands.io.scrubEvent))
  require(sources.length == p.eventPorts)
  for ((src, k) <- sources.zipWithIndex) evq.io.push(k) := src
  evq.io.pop  := regs.io.evqPop
  evq.io.lose := tab.lostEvents

  // ------------------------------------------------------------------ register port
  regs.io.axil <> s_axil
  regs.io.cmdBusy  := cmdBusy
  regs.io.cmdReady := commands.io.ready
  // CMD_DONE: once the command took effect (in DRAM a BAT_SET or BAT_CLEAR may still be in work: held until then)
  val doneHeld = RegInit(false.B)
  val doneNow  = cross.out(commands.io.done) || doneHeld
  doneHeld               := doneNow && tab.busy
  regs.io.cmdDone        := doneNow && !tab.busy
  commands.io.launch     := cross.in(regs.io.launch)
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
    (cmdBusy.asUInt << Regs.CMD_STATUS.BUSY_LSB)
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
  idle := commands.io.idle && scrub.io.idle && !tab.busy && !tab.pending && copy.fold(true.B)(_.io.idle)
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
