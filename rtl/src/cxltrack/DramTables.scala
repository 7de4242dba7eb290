// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** A page set from the data path on one of the DRAM bitmaps (0 dirty, 1 accessed). */
class BitmapSet(pageBits: Int) extends Bundle {
  val table = UInt(1.W)
  val page  = UInt(pageBits.W)
}

/**
 * The dirty and accessed fine bitmaps in a device-DRAM carve-out (docs/spec.md section 12, docs/rtl-notes.md "Tables in
 * device DRAM"), behind the same harvest interface as the on-chip [[BitmapTables]]: a harvest step answered two engine
 * cycles later with the row as it was, and the summary scan of up to `scanRows` rows from `scanRow`.
 *
 * Where a bit lives. A page set from the data path goes into the on-chip write-back **update cache** (`cacheEntries`
 * rows of 512 bits, fully associative) in the cycle after it is presented: ORed into the row's entry, or into a free
 * entry; it never waits. When no entry is free the set goes to the **overflow** flag of its group of 64 rows (64
 * summary regions, 128 MiB at 4 KiB pages): every page of the group is then reported dirty by the next harvest (a false
 * positive, never a lost write). The cache is written back, one row per DRAM read-modify-write, when it is half full.
 * In DRAM a row is one 64-byte line at `carveBase + (table * rows + row) * 64`; an on-chip **summary** bit per row (a
 * RAM of 64-bit words, both tables in one word) says whether the line may be non-zero. A clear summary bit means the
 * line is zero whatever DRAM holds, so nothing needs clearing after reset, a write-back into a clean row is a plain
 * write and a harvest of a clean row reads nothing.
 *
 * The controller does one thing at a time, in this order: the engine's pending step, the engine's scan window, a
 * write-back. A step on row r: if r's group overflowed, first materialise the group (all-ones lines, summary bits set,
 * flag cleared: the same false positive, now in DRAM); then take r's cache entry out of the cache (later sets go to a
 * new entry: they come after the step), read the line if its summary bit is set, answer `line | entry`, write back the
 * row the step leaves (ZERO clears the masked words, MARK sets them, READ keeps them) and its summary bit. The scan is
 * exact or conservative: a row is marked if its summary bit, its group's overflow flag, a cache entry, or the row the
 * controller is working on says so.
 *
 * Engine timing: DRAM answers in tens of cycles, the engine expects two. So the engine runs on a gated clock (`en`,
 * [[DramHarvestBench]]): this block holds `en` low while the engine's latest step has no answer yet, or while the
 * engine is in a command and the scan window does not cover `scanRow`. In the engine's own cycles everything is as with
 * the on-chip tables. The data path is never held: only the engine waits, and the cache only back-pressures itself
 * (overflow).
 */
class DramBitmaps(p: CxlTrackParams, nSets: Int) extends Module {
  override def desiredName = "DramBitmaps"
  val rowBits              = p.rowBits
  val wordBits             = log2Ceil(p.words) max 1
  val nSum                 = (p.rows + 63) / 64 // summary words of 64 rows (and overflow groups)
  val sumBits              = log2Ceil(nSum) max 1
  val E                    = p.cacheEntries
  val watermark            = (E / 2) max 1      // write back when idle and this full
  val highWater            = (E - E / 4) max 1  // write back before the engine's step when this full (no starvation)
  val io = IO(new Bundle {
    // the engine's side (in the engine's cycles: `step` is taken at an edge where `en` is high)
    val step     = Input(Valid(new HarvestStep(wordBits)))
    val resp     = Output(Valid(UInt(512.W)))
    val scanRow  = Input(UInt(rowBits.W))
    val scanUsed = Input(Bool())  // the engine is in a command: it may read the scan
    val scanBits = Output(Vec(2, UInt(p.scanRows.W)))
    val en       = Output(Bool())
    val busy     = Output(Bool()) // a step not yet answered or still written back
    // the data path's sets, never held
    val sets = Input(Vec(nSets, Valid(new BitmapSet(p.pageBits))))
    // for the benches: a set that found the cache full (its group is now all-dirty), and the cache's occupancy
    val overflow  = Output(UInt(nSets.W)) // bit s: set s of this cycle found the cache full
    val occupancy = Output(UInt(log2Ceil(E + 1).W))
  })
  val axi = IO(new Axi4(p.dramAddrBits, 512, 1))

  // ------------------------------------------------------------------ state
  val summary = SyncReadMem(nSum, Vec(2, UInt(64.W)))
  // overflow flags, one per group of 64 rows: one wide register per table (a bit vector, not nSum registers with
  // their own write decode: compact SystemVerilog at 8 Ki groups)
  val ovf    = RegInit(VecInit(Seq.fill(2)(0.U(nSum.W))))
  val cValid = RegInit(VecInit(Seq.fill(E)(false.B)))
  val cTab   = Reg(Vec(E, UInt(1.W)))
  val cRow   = Reg(Vec(E, UInt(rowBits.W)))
  val cBits  = Reg(Vec(E, UInt(512.W)))

  // the engine's step pipeline: p1 taken at the last enabled edge, answered by the controller; p2 is the answer the
  // engine reads now (two of its cycles after the step)
  val p1v    = RegInit(false.B)
  val p1     = Reg(new HarvestStep(wordBits))
  val p1done = RegInit(false.B)
  val p1ans  = Reg(UInt(512.W))
  val p2v    = RegInit(false.B)
  val p2ans  = Reg(UInt(512.W))

  // the scan window: summary words winIdx and winIdx + 1 of both tables
  val winOk  = RegInit(false.B)
  val winIdx = Reg(UInt(sumBits.W))
  val win    = Reg(Vec(2, Vec(2, UInt(64.W)))) // (word 0/1)(table)

  object S extends ChiselEnum {
    val idle, win0, win1, opSum, rdA, rdR, compute, wrA, wrB, sumW, matA, matB, matSum = Value
  }
  val state = RegInit(S.idle)

  // One line written to DRAM: AW and W are accepted in either order or together; `next` once both were.
  def writeLine(next: S.Type): Unit = {
    axi.awvalid := !awDone
    axi.wvalid  := !wDone
    val aw = awDone || axi.awready
    val w  = wDone || axi.wready
    awDone              := aw
    wDone               := w
    when(aw && w)(state := next)
  }
  // the row operation in progress: a step (from p1) or a write-back (a cache entry)
  val opActive = RegInit(false.B)
  val opStep   = Reg(Bool())
  val opTab    = Reg(UInt(1.W))
  val opRow    = Reg(UInt(rowBits.W))
  val opOp     = Reg(UInt(TableOp.Bits.W))
  val opMask   = Reg(UInt(8.W))
  val opC      = Reg(UInt(512.W))        // the bits taken out of the cache
  val opD      = Reg(UInt(512.W))        // the line as DRAM held it (zero when the summary bit was clear)
  val opNew    = Reg(UInt(512.W))
  val opWord   = Reg(Vec(2, UInt(64.W))) // the summary word of opRow
  val opWrite  = Reg(Vec(2, UInt(64.W))) // the summary word to write back
  val matRow   = Reg(UInt(7.W))          // materialise: the next row of the group
  // the pending step's group was just materialised: do the step now, even if a newer overflow set the flag again
  // (that set comes after the materialisation, which it will find next time; without this, sets that keep
  // overflowing could hold the step off forever)
  val matDone = RegInit(false.B)
  // write-back victim: the first valid entry from wbPtr on, round robin (the lowest valid entry would be a hot row
  // written back and re-allocated in the same slot again and again while older entries stay)
  val wbPtr = RegInit(0.U(log2Ceil(E).max(1).W))
  // the last thing done was a write-back forced by a nearly full cache: the engine's turn next (alternating, so
  // neither a flood of sets nor a long harvest holds the other off)
  val forcedLast = RegInit(false.B)
  val awDone     = RegInit(false.B)
  val wDone      = RegInit(false.B)

  private def low6(x: UInt): UInt  = x.pad(6)(5, 0)
  private def grp(row: UInt): UInt = if (nSum == 1) 0.U else (row >> 6).pad(sumBits)(sumBits - 1, 0)
  private def lineAddr(t: UInt, row: UInt): UInt =
    (p.carveBase.U(p.dramAddrBits.W) + ((t.pad(rowBits + 1) * p.rows.U + row) << 6))(p.dramAddrBits - 1, 0)

  // ------------------------------------------------------------------ engine side
  val stepPending = p1v && !p1done
  val scanGroup   = (io.scanRow >> 6).pad(sumBits)(sumBits - 1, 0)
  val winCovers   = winOk && winIdx === scanGroup
  val en          = !stepPending && !(io.scanUsed && !winCovers)
  io.en := en
  when(en) {
    p2v   := p1v
    p2ans := p1ans
    // a hotness step (table 3) has no table here: HarvestBench-style tops with DRAM bitmaps have no hotness
    p1v    := io.step.valid && (io.step.bits.table === 1.U || io.step.bits.table === 2.U)
    p1     := io.step.bits
    p1done := false.B
  }
  io.resp.valid := p2v
  io.resp.bits  := p2ans
  io.busy       := p1v || p2v || (opActive && opStep)

  // ------------------------------------------------------------------ cache: take, then the sets of this cycle
  val take    = WireDefault(false.B) // the controller takes entry takeIdx out of the cache
  val takeIdx = WireDefault(0.U(log2Ceil(E).max(1).W))
  var vNext   = VecInit(cValid.zipWithIndex.map { case (v, e) => v && !(take && takeIdx === e.U) })
  var tNext   = cTab: Vec[UInt]
  var rNext   = cRow: Vec[UInt]
  var bNext   = cBits: Vec[UInt]
  val ovfSet  = Wire(Vec(nSets, Bool()))
  for (s <- 0 until nSets) {
    val set   = io.sets(s)
    val t     = set.bits.table
    val row   = (set.bits.page >> 9).pad(rowBits)(rowBits - 1, 0)
    val lane  = set.bits.page(8, 0)
    val hit   = VecInit((0 until E).map(e => vNext(e) && tNext(e) === t && rNext(e) === row))
    val free  = VecInit(vNext.map(!_))
    val any   = hit.asUInt.orR
    val alloc = PriorityEncoder(free.asUInt)
    val room  = free.asUInt.orR
    val bit   = UIntToOH(lane, 512)
    val nv    = Wire(Vec(E, Bool()))
    val nt    = Wire(Vec(E, UInt(1.W)))
    val nr    = Wire(Vec(E, UInt(rowBits.W)))
    val nb    = Wire(Vec(E, UInt(512.W)))
    for (e <- 0 until E) {
      val here = set.valid && !any && room && alloc === e.U
      nv(e) := vNext(e) || here
      nt(e) := Mux(here, t, tNext(e))
      nr(e) := Mux(here, row, rNext(e))
      nb(e) := Mux(here, bit, Mux(set.valid && hit(e), bNext(e) | bit, bNext(e)))
    }
    ovfSet(s) := set.valid && !any && !room
    vNext = nv; tNext = nt; rNext = nr; bNext = nb
  }
  cValid := vNext
  cTab   := tNext
  cRow   := rNext
  cBits  := bNext
  val ovfClear    = WireDefault(false.B) // materialise done: the group's flag (a set of the same cycle wins)
  val ovfClearTab = WireDefault(0.U(1.W))
  val ovfClearGrp = WireDefault(0.U(sumBits.W))
  for (t <- 0 until 2) {
    val clr = Mux(ovfClear && ovfClearTab === t.U, UIntToOH(ovfClearGrp, nSum), 0.U(nSum.W))
    val set = (0 until nSets).map { s =>
      val row = (io.sets(s).bits.page >> 9).pad(rowBits)(rowBits - 1, 0)
      Mux(ovfSet(s) && io.sets(s).bits.table === t.U, UIntToOH(grp(row), nSum), 0.U(nSum.W))
    }
    ovf(t) := (ovf(t) & ~clr) | set.reduce(_ | _) // a set of the same cycle wins over the clear
  }
  io.overflow := ovfSet.asUInt
  val occ = PopCount(cValid)
  io.occupancy := occ

  // ------------------------------------------------------------------ scan
  for (t <- 0 until 2) {
    val hiOvf  = if (nSum == 1) false.B else ovf(t)(winIdx + 1.U)
    val nextOk = if (nSum == 1) false.B else (winIdx =/= (nSum - 1).U)
    val lo     = win(0)(t) | Fill(64, ovf(t)(winIdx))
    val hi     = Mux(nextOk, win(1)(t) | Fill(64, hiOvf), 0.U(64.W))
    val base   = (Cat(hi, lo) >> low6(io.scanRow))(p.scanRows - 1, 0)
    // cache entries and the row in work, at their offset from scanRow
    def at(v: Bool, tab: UInt, row: UInt): UInt = {
      val off = row -& io.scanRow
      val hit = v && tab === t.U && row >= io.scanRow && off < p.scanRows.U
      Mux(hit, UIntToOH(off.pad(16)(7, 0), p.scanRows), 0.U)
    }
    val extra = ((0 until E).map(e => at(cValid(e), cTab(e), cRow(e))) :+ at(opActive, opTab, opRow)).reduce(_ | _)
    io.scanBits(t) := base | extra
  }

  // ------------------------------------------------------------------ AXI defaults
  axi.awid    := 0.U
  axi.awaddr  := lineAddr(opTab, opRow)
  axi.awlen   := 0.U
  axi.awsize  := 6.U
  axi.awburst := Axi.INCR.U
  axi.awlock  := false.B
  axi.awcache := 0.U
  axi.awprot  := 0.U
  axi.awvalid := false.B
  axi.wdata   := opNew
  axi.wstrb   := Fill(64, 1.U(1.W))
  axi.wlast   := true.B
  axi.wvalid  := false.B
  axi.bready  := false.B
  axi.arid    := 0.U
  axi.araddr  := lineAddr(opTab, opRow)
  axi.arlen   := 0.U
  axi.arsize  := 6.U
  axi.arburst := Axi.INCR.U
  axi.arlock  := false.B
  axi.arcache := 0.U
  axi.arprot  := 0.U
  axi.arvalid := false.B
  axi.rready  := false.B

  // ------------------------------------------------------------------ controller
  val sumAddr = WireDefault(0.U(sumBits.W))
  val sumRead = WireDefault(false.B)
  val sumRd   = summary.read(sumAddr, sumRead)
  def sumWrite(idx: UInt, v: Vec[UInt]): Unit = {
    summary.write(idx, v)
    when(winOk && idx === winIdx)(win(0)       := v)
    when(winOk && idx === winIdx + 1.U)(win(1) := v)
  }
  val p1Tab = (p1.table - 1.U)(0)
  val p1Row = p1.row.pad(rowBits)(rowBits - 1, 0)
  def matchOf(t: UInt, row: UInt): Vec[Bool] = VecInit(
    (0 until E).map(e => cValid(e) && cTab(e) === t && cRow(e) === row)
  )
  val p1Hit = matchOf(p1Tab, p1Row)
  def apply(old: UInt, op: UInt, mask: UInt): UInt = {
    val m = Cat((0 until 8).reverse.map(k => Fill(64, mask(k))))
    MuxLookup(op, old)(Seq(TableOp.ZERO.U -> (old & ~m), TableOp.MARK.U -> (old | m)))
  }
  val dBit = opWord(opTab)(low6(opRow))

  switch(state) {
    is(S.idle) {
      awDone := false.B
      wDone  := false.B
      // a nearly full cache is written back first, so that a long harvest cannot starve the write-backs (the cache
      // would fill and every set overflow)
      val engineWaits = stepPending || (io.scanUsed && !winCovers)
      val forced      = occ >= highWater.U && !(forcedLast && engineWaits)
      val writeBack   = forced || (!engineWaits && occ >= watermark.U)
      when(writeBack) {
        val twice = Cat(cValid.asUInt, cValid.asUInt) >> wbPtr
        val k     = PriorityEncoder(twice(E - 1, 0))
        val sum   = k +& wbPtr
        val e     = Mux(sum >= E.U, sum - E.U, sum)(log2Ceil(E).max(1) - 1, 0)
        wbPtr      := Mux(e === (E - 1).U, 0.U, e + 1.U)
        forcedLast := forced
        take       := true.B
        takeIdx    := e
        opC        := cBits(e)
        opActive   := true.B
        opStep     := false.B
        opTab      := cTab(e)
        opRow      := cRow(e)
        opOp       := TableOp.READ.U
        opMask     := 0.U
        sumAddr    := grp(cRow(e))
        sumRead    := true.B
        state      := S.opSum
      }.elsewhen(stepPending) {
        when(ovf(p1Tab)(grp(p1Row)) && !matDone) {
          // the group overflowed: write it all-dirty into DRAM first
          opTab      := p1Tab
          opRow      := Cat(grp(p1Row), 0.U(6.W)).pad(rowBits)(rowBits - 1, 0)
          opNew      := Fill(512, 1.U(1.W))
          matRow     := 0.U
          forcedLast := false.B
          state      := S.matA
        }.otherwise {
          forcedLast := false.B
          matDone    := false.B
          take       := p1Hit.asUInt.orR
          takeIdx    := PriorityEncoder(p1Hit.asUInt)
          opC        := Mux(p1Hit.asUInt.orR, Mux1H(p1Hit, cBits), 0.U)
          opActive   := true.B
          opStep     := true.B
          opTab      := p1Tab
          opRow      := p1Row
          opOp       := p1.op
          opMask     := p1.mask
          sumAddr    := grp(p1Row)
          sumRead    := true.B
          state      := S.opSum
        }
      }.elsewhen(io.scanUsed && !winCovers) {
        forcedLast := false.B
        winIdx     := scanGroup
        winOk      := false.B
        sumAddr    := scanGroup
        sumRead    := true.B
        state      := S.win0
      }
    }
    is(S.win0) {
      win(0) := sumRd
      if (nSum > 1) {
        sumAddr := Mux(winIdx === (nSum - 1).U, winIdx, winIdx + 1.U)
        sumRead := true.B
      }
      state := S.win1
    }
    is(S.win1) {
      if (nSum > 1) win(1) := sumRd else win(1) := VecInit(Seq.fill(2)(0.U(64.W)))
      winOk                := true.B
      state                := S.idle
    }
    is(S.opSum) {
      opWord  := sumRd
      opWrite := sumRd
      when(sumRd(opTab)(low6(opRow))) {
        state := S.rdA
      }.otherwise {
        opD   := 0.U
        state := S.compute
      }
    }
    is(S.rdA) {
      axi.arvalid             := true.B
      when(axi.arready)(state := S.rdR)
    }
    is(S.rdR) {
      axi.rready := true.B
      when(axi.rvalid) {
        opD   := axi.rdata
        state := S.compute
      }
    }
    is(S.compute) {
      val old = opD | opC
      val nw  = apply(old, opOp, opMask)
      opNew := nw
      when(opStep) {
        p1ans  := old
        p1done := true.B
      }
      val bitMask = UIntToOH(low6(opRow), 64)
      when(nw === 0.U) {
        // an all-zero row needs no line: its summary bit says so
        opWrite(opTab)       := opWord(opTab) & ~bitMask
        state                := Mux(dBit, S.sumW, S.idle)
        when(!dBit)(opActive := false.B)
      }.elsewhen(!dBit || nw =/= opD) {
        opWrite(opTab) := opWord(opTab) | bitMask
        awDone         := false.B
        wDone          := false.B
        state          := S.wrA
      }.otherwise {
        opActive := false.B
        state    := S.idle
      }
    }
    is(S.wrA)(writeLine(S.wrB))
    is(S.wrB) {
      axi.bready := true.B
      // the line is written before its summary bit is set (until then opActive marks the row)
      when(axi.bvalid)(state            := Mux(dBit, S.idle, S.sumW))
      when(axi.bvalid && dBit)(opActive := false.B)
    }
    is(S.sumW) {
      sumWrite(grp(opRow), opWrite)
      opActive := false.B
      state    := S.idle
    }
    is(S.matA) {
      axi.awaddr := lineAddr(opTab, opRow | matRow(5, 0))
      writeLine(S.matB)
    }
    is(S.matB) {
      axi.bready := true.B
      when(axi.bvalid) {
        awDone := false.B
        wDone  := false.B
        val last = matRow === 63.U || (opRow | matRow(5, 0)) === (p.rows - 1).U
        matRow := matRow + 1.U
        when(last) {
          sumAddr := grp(opRow)
          sumRead := true.B
          state   := S.matSum
        }.otherwise {
          state := S.matA
        }
      }
    }
    is(S.matSum) {
      val w = Wire(Vec(2, UInt(64.W)))
      w        := sumRd
      w(opTab) := Fill(64, 1.U(1.W)) // rows past the table are never scanned (the engine's ranges end there)
      sumWrite(grp(opRow), w)
      ovfClear    := true.B
      ovfClearTab := opTab
      ovfClearGrp := grp(opRow)
      matDone     := true.B
      state       := S.idle
    }
  }
}

/**
 * The harvest engine with its dirty and accessed bitmaps in device DRAM ([[DramBitmaps]]): the top the 1 TiB
 * configuration builds (config/dram1t.toml), with the ports of [[HarvestBench]] plus the DRAM master `d_axi` and the
 * update cache's overflow and occupancy for the benches. The command engine runs on a clock gated by the bitmaps' `en`
 * (DramBitmaps says why); what crosses between the two clocks is held so that no event is lost or doubled: the DMA
 * writer's start and beats pass only in enabled cycles, its completion waits in a register for the next one.
 */
class DramHarvestBench(p: CxlTrackParams) extends Module {
  override def desiredName = "DramHarvestBench"
  require(p.dramTables, "DramHarvestBench builds the DRAM bitmaps: the configuration needs [rtl] dram_tables = 1")
  val io = IO(new HarvestBenchIO(p) {
    val overflow  = Output(UInt(2.W)) // bit 0: the dirty set of this cycle found the cache full; bit 1: accessed
    val occupancy = Output(UInt(8.W))
    val engineEn  = Output(Bool())
  })
  val h_axi   = IO(new Axi4Write(CommandEngine.dmaAddrBits(p), 512, 1))
  val d_axi   = IO(new Axi4(p.dramAddrBits, 512, 1))
  val bitmaps = Module(new DramBitmaps(p, 2))
  val en      = bitmaps.io.en
  val gate    = Module(new EngineClockGate)
  gate.io.in := clock
  gate.io.en := en
  val gated    = gate.io.out
  val commands = withClock(gated)(Module(new CommandEngine(p)))
  d_axi <> bitmaps.axi

  bitmaps.io.step                     := commands.io.harvest
  bitmaps.io.scanRow                  := commands.io.scanRow
  bitmaps.io.scanUsed                 := commands.io.ready && !commands.io.idle
  commands.io.scanBits(0)             := bitmaps.io.scanBits(0)
  commands.io.scanBits(1)             := bitmaps.io.scanBits(1)
  commands.io.harvestRow.valid        := bitmaps.io.resp.valid
  commands.io.harvestRow.bits.bitmap  := bitmaps.io.resp.bits
  commands.io.harvestRow.bits.hotness := VecInit(Seq.fill(64)(0.U(p.hotBits.W)))
  bitmaps.io.sets(0).valid            := io.dirtySet.valid
  bitmaps.io.sets(0).bits.table       := 0.U
  bitmaps.io.sets(0).bits.page        := io.dirtySet.bits
  bitmaps.io.sets(1).valid            := io.accessedSet.valid
  bitmaps.io.sets(1).bits.table       := 1.U
  bitmaps.io.sets(1).bits.page        := io.accessedSet.bits
  io.overflow                         := bitmaps.io.overflow
  io.occupancy                        := bitmaps.io.occupancy.pad(8)
  io.engineEn                         := en

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
  io.idle                     := commands.io.idle && !bitmaps.io.busy
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
  dma.io.start.valid        := commands.io.dmaStart.valid && en
  dma.io.start.bits         := commands.io.dmaStart.bits
  dma.io.data.valid         := commands.io.dmaData.valid && en
  dma.io.data.bits          := commands.io.dmaData.bits
  commands.io.dmaData.ready := dma.io.data.ready && en
  // the list harvest's stream mode (docs/spec.md 5.4): levels of the engine's state, held while its clock is
  // (the writer announces beats already queued; they pass in the next enabled cycles)
  dma.io.avail := commands.io.dmaAvail
  dma.io.strb  := commands.io.dmaStrb
  dma.io.end   := commands.io.dmaEnd
  // the completion pulse, held until an enabled cycle
  val doneHeld = RegInit(false.B)
  val doneErr  = Reg(Bool())
  when(dma.io.done.valid && !en) {
    doneHeld := true.B
    doneErr  := dma.io.done.bits
  }.elsewhen(en)(doneHeld   := false.B)
  commands.io.dmaDone.valid := dma.io.done.valid || doneHeld
  commands.io.dmaDone.bits  := Mux(doneHeld, doneErr, dma.io.done.bits)
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
        s""""carve_base": ${p.carveBase}, "dram_addr_bits": ${p.dramAddrBits}}"""
    )
  finally out.close()
}
