// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/**
 * The whole core's per-page tables in device DRAM ([[DramTables]], `dram_tables = 1`, config/dram1t.toml): the data
 * path's seven sources into the update cache, the command engine's steps and BAT requests, and what the core reports of
 * the BAT invalidations (docs/spec.md section 12, docs/rtl-notes.md "The whole core at 1 TiB").
 *
 * The command engine runs on the clock `gated` by the tables' `en` (DramTables says why). Everything between the engine
 * and the rest of the core crosses in [[CxlTrackCore]] through [[EngineCrossing]]: a pulse from the engine passes in
 * enabled cycles only (else it would repeat in every cycle of a stopped engine clock), a pulse into the engine is held
 * until an enabled cycle (else the engine would miss it).
 */
object CoreDramTables {

  /**
   * The set ports, in this order: dirty at write end; accessed at read and at write accept; hotness likewise; the BAT
   * invalidations at write accept and at write end.
   */
  val setTables: Seq[Int] = Seq(
    DramTable.Dirty,
    DramTable.Accessed,
    DramTable.Accessed,
    DramTable.Hotness,
    DramTable.Hotness,
    DramTable.BatValid,
    DramTable.BatValid
  )

  /** A clock for the command engine: `clock` while `en` (EngineClockGate). */
  def engineClock(clock: Clock, en: Bool): Clock = {
    val gate = Module(new EngineClockGate)
    gate.io.in := clock
    gate.io.en := en
    gate.io.out
  }

  /**
   * The engine's side of `t` (also [[DramHarvestBench]]'s): its steps and BAT requests, the answers, the scan window
   * (`scanNow`), and the command scope of a materialisation.
   */
  def connectEngine(p: CxlTrackParams, t: DramTables, commands: CommandEngine): Unit = {
    t.io.step                          := commands.io.harvest
    t.io.scanRow                       := commands.io.scanRow
    t.io.scanUsed                      := commands.io.scanNow
    t.io.inCommand                     := commands.io.ready && !commands.io.idle
    commands.io.scanBits(0)            := t.io.scanBits(0)
    commands.io.scanBits(1)            := t.io.scanBits(1)
    commands.io.harvestRow.valid       := t.io.resp.valid
    commands.io.harvestRow.bits.bitmap := t.io.resp.bits
    // a hotness line: counter j in byte j
    commands.io.harvestRow.bits.hotness := VecInit(Seq.tabulate(64)(j => t.io.resp.bits(8 * j + p.hotBits - 1, 8 * j)))
    // a BAT command: the engine's request taken at an enabled edge, its answers held for the engine's cycles
    t.io.bat               := commands.io.bat
    commands.io.batPayload := t.io.batPayload
    commands.io.batValid   := t.io.batValid
  }

  /** Connect `t` to the engine and to the data path's requests. */
  def connect(p: CxlTrackParams, t: DramTables, commands: CommandEngine, in: CoreTablesIn, out: CoreTablesOut): Unit = {
    import in._
    def src(v: Bool, page: UInt): Valid[UInt] = {
      val s = Wire(Valid(UInt(p.pageBits.W)))
      s.valid := v
      s.bits  := page
      s
    }
    val read  = requests.readAccept
    val write = requests.writeAccept
    t.io.sets := VecInit(
      src(writeEnd && trackEn, writeEndPage),
      src(read.valid && trackEn, read.bits),
      src(write.valid && trackEn, write.bits),
      src(read.valid && trackEn, read.bits),
      src(write.valid && trackEn, write.bits),
      // association: invalidated at write begin and write end, whatever TRACK_EN says
      src(write.valid, write.bits),
      src(writeEnd, writeEndPage)
    )
    connectEngine(p, t, commands)

    // BAT invalidations: known when a line is read with its entry, given one per cycle (docs/spec.md section 12)
    t.io.evtEn                  := batEvtEn
    out.busy                    := t.io.busy
    out.pending                 := t.io.pending
    out.batInvAdd               := t.io.invFound
    out.invEvents(0).valid      := t.io.inv.valid
    out.invEvents(0).bits.typ   := Regs.Event.BAT_INVALIDATED.U
    out.invEvents(0).bits.index := 0.U
    out.invEvents(0).bits.arg   := t.io.inv.bits
    out.invEvents(1).valid      := false.B
    out.invEvents(1).bits       := 0.U.asTypeOf(new EventRec)
    out.lostEvents              := Mux(batEvtEn, t.io.invLost, 0.U)
  }
}

/** The crossings between the gated engine clock and the core's clock, for a given `en` (true.B: no gating). */
class EngineCrossing(en: Bool) {

  /** A pulse from the engine: passes in enabled cycles only. */
  def out(v: Bool): Bool = v && en

  /** A valid-with-payload pulse from the engine: passes in enabled cycles only. */
  def out[T <: Data](x: Valid[T]): Valid[T] = {
    val o = Wire(Valid(chiselTypeOf(x.bits)))
    o.valid := out(x.valid)
    o.bits  := x.bits
    o
  }

  /** A valid-with-payload pulse into the engine: held (with its payload) until an enabled cycle. */
  def in[T <: Data](x: Valid[T]): Valid[T] = {
    val held = RegInit(false.B)
    val bits = Reg(chiselTypeOf(x.bits))
    when(x.valid && !en) {
      held := true.B
      bits := x.bits
    }.elsewhen(en)(held := false.B)
    val o = Wire(Valid(chiselTypeOf(x.bits)))
    o.valid := x.valid || held
    o.bits  := Mux(held, bits, x.bits)
    o
  }

  /** A bare pulse into the engine, held until an enabled cycle. */
  def in(v: Bool): Bool = {
    val held = RegInit(false.B)
    when(v && !en)(held := true.B).elsewhen(en)(held := false.B)
    v || held
  }
}
