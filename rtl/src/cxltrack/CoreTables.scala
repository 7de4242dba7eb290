// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * What the rest of [[CxlTrackCore]] gives its per-page tables, in either form: the data path's requests, a write's end
 * (`writeEnd`/`writeEndPage`: external or internal, one per cycle) and CTRL's bits.
 */
class CoreTablesIn(
    val requests: RequestEvents,
    val writeEnd: Bool,
    val writeEndPage: UInt,
    val trackEn: Bool,
    val batEvtEn: Bool
)

/** What the core's per-page tables give the rest of [[CxlTrackCore]], in either form (on chip, or in device DRAM). */
class CoreTablesOut extends Bundle {
  val busy       = Bool()     // a harvest step or BAT request still in work after the engine: part of CMD_STATUS.BUSY
  val pending    = Bool()     // table work the core's `idle` waits for
  val batInvAdd  = UInt(10.W) // associations cleared by writes in this cycle (STAT_BAT_INV)
  val invEvents  = Vec(2, Valid(new EventRec))
  val lostEvents = UInt(2.W)  // events lost without a record (EventQueue.lose)
}

/**
 * The core's per-page tables on chip: dirty, accessed, BAT validity and hotness are [[TrackTable]]s, the BAT payload a
 * RAM. Connected to the command engine's steps and BAT requests and to the data path's requests.
 */
object CoreOnChipTables {
  def connect(p: CxlTrackParams, commands: CommandEngine, in: CoreTablesIn, tab: CoreTablesOut): Unit = {
    import in._
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
    def drive(t: TrackTable, port: Int, v: Bool, page: UInt, op: UInt): Unit =
      BitmapTables.drive(p, t, port, v, page, op)

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
    val cleared = (0 until 2).map(k => batValid.io.resp(k).valid && batValid.io.resp(k).bits(batValid.io.done(k).lane))
    tab.batInvAdd          := PopCount(cleared)
    commands.io.batPayload := batPayload.read(bat.bits.page, bat.valid && bat.bits.op =/= SET.U)
    when(bat.valid && bat.bits.op === SET.U)(batPayload.write(bat.bits.page, bat.bits.data))
    commands.io.batValid.valid := batValid.io.resp(2).valid
    commands.io.batValid.bits  := batValid.io.resp(2).bits(batValid.io.done(2).lane)
    // the engine's busy covers its steps here (they are answered before it completes)
    tab.busy    := false.B
    tab.pending := dirty.io.busy || accessed.io.busy || hotness.io.busy || batValid.io.busy
    for (k <- 0 until 2) {
      tab.invEvents(k).valid      := cleared(k) && batEvtEnAt
      tab.invEvents(k).bits.typ   := Regs.Event.BAT_INVALIDATED.U
      tab.invEvents(k).bits.index := 0.U
      tab.invEvents(k).bits.arg   := pageAt(batValid.io.done(k))
    }
    tab.lostEvents := 0.U
  }
}
