// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** The tables [[DramTables]] keeps in device DRAM: the index of each is its place in the carve-out. */
object DramTable {
  val Dirty    = 0 // a 64-byte line per 512-page row, one bit per page
  val Accessed = 1 // as Dirty
  val Hotness  = 2 // a 64-byte line per 64-page word, one byte per page (the low `hot_bits` bits used)
  val Count    = 3
}

/**
 * The dirty and accessed fine bitmaps and the hotness counters in a device-DRAM carve-out (docs/spec.md section 12,
 * docs/rtl-notes.md "Tables in device DRAM"), behind the same harvest interface as the on-chip tables: a harvest step
 * answered two engine cycles later with the row as it was, and the summary scan of up to `scanRows` rows from
 * `scanRow`.
 *
 * Where a bit lives. A page set (dirty, accessed) or increment (hotness) from the data path goes into the on-chip
 * write-back **update cache** (`cacheEntries` entries of 512 bits, fully associative, shared by the three tables) in
 * the cycle after it is presented: ORed into the row's entry (a bitmap), added with saturation to the counter's byte in
 * the word's entry (hotness: the entry holds increments not yet in DRAM), or put into a free entry; it never waits.
 * When no entry is free the set goes to the **overflow** flag of its table's group of 32 768 pages (64 bitmap rows, 512
 * hotness words; 128 MiB at 4 KiB pages): a bitmap group is then reported all-dirty by the next harvest (a false
 * positive, never a lost write); a hotness group gets every counter raised to at least 1 (an increment may be lost, but
 * a page accessed since the last clearing harvest never reads 0, which is what reclaim takes for cold). The cache is
 * written back, one line per DRAM read-modify-write, when it is half full.
 *
 * In DRAM a line of table t, row or word k, is at `carveBase + (t * rows + k) * 64`. An on-chip **summary** bit per
 * line says whether the line may be non-zero (a RAM of 64-bit words: one word of both bitmaps per 64 rows, one word of
 * hotness per 64 words). A clear summary bit means the line is zero whatever DRAM holds, so nothing needs clearing
 * after reset, a write-back into a clean line is a plain write and a harvest of a clean line reads nothing.
 *
 * The controller does one thing at a time, in this order: the engine's pending step, the engine's scan window, a
 * write-back. A step on line k: if k's group overflowed, first materialise the group (bitmaps: all-ones lines; hotness:
 * every counter max(c, 1), a read-modify-write per line; summary bits set, flag cleared); then take k's cache entry out
 * of the cache (later sets go to a new entry: they come after the step), read the line if its summary bit is set,
 * answer `line | entry` (hotness: the saturating sum), write back what the step leaves (ZERO clears, HALVE halves every
 * counter, MARK sets the masked words, READ keeps) and its summary bit. The scan (bitmaps only: a hotness harvest steps
 * every word) is exact or conservative: a row is marked if its summary bit, its group's overflow flag, a cache entry,
 * or the row the controller is working on says so.
 *
 * Engine timing: DRAM answers in tens of cycles, the engine expects two. So the engine runs on a gated clock (`en`,
 * [[DramHarvestBench]]): this block holds `en` low while the engine's latest step has no answer yet, or while the
 * engine is in a command and the scan window does not cover `scanRow`. In the engine's own cycles everything is as with
 * the on-chip tables. The data path is never held: only the engine waits, and the cache only back-pressures itself
 * (overflow).
 *
 * `setTables`: the table of each set port (the data path's sources; static, so that each port's logic is only its
 * table's).
 */
class DramTables(p: CxlTrackParams, setTables: Seq[Int]) extends Module {
  override def desiredName = "DramTables"
  require(setTables.forall(t => t >= 0 && t < DramTable.Count))
  require(p.hotBits <= 8, "a hotness line holds one byte per page")
  val nSets     = setTables.length
  val rowBits   = p.rowBits
  val wordBits  = log2Ceil(p.words) max 1 // a line's index: a row (bitmaps) or a word (hotness)
  val nSum      = (p.rows + 63) / 64      // bitmap summary words of 64 rows (and overflow groups)
  val nHotSum   = (p.words + 63) / 64     // hotness summary words of 64 words
  val sumBits   = log2Ceil(nSum) max 1
  val hotBits   = log2Ceil(nHotSum) max 1
  val E         = p.cacheEntries
  val HOT       = DramTable.Hotness
  val watermark = (E / 2) max 1           // write back when idle and this full
  val highWater = (E - E / 4) max 1       // write back before the engine's step when this full (no starvation)
  val io = IO(new Bundle {
    // the engine's side (in the engine's cycles: `step` is taken at an edge where `en` is high)
    val step     = Input(Valid(new HarvestStep(wordBits)))
    val resp     = Output(Valid(UInt(512.W)))
    val scanRow  = Input(UInt(rowBits.W))
    val scanUsed = Input(Bool())  // the engine is in a command: it may read the scan
    val scanBits = Output(Vec(2, UInt(p.scanRows.W)))
    val en       = Output(Bool())
    val busy     = Output(Bool()) // a step not yet answered or still written back
    // the data path's sets and increments, never held: port s is a page of table setTables(s)
    val sets = Input(Vec(nSets, Valid(UInt(p.pageBits.W))))
    // for the benches: a set that found the cache full (its group is now flagged), and the cache's occupancy
    val overflow  = Output(UInt(nSets.W)) // bit s: set s of this cycle found the cache full
    val occupancy = Output(UInt(log2Ceil(E + 1).W))
  })
  val axi = IO(new Axi4(p.dramAddrBits, 512, 1))

  // ------------------------------------------------------------------ lanes of a hotness line
  private val hotMax                    = p.hotMax.U(8.W)
  private def bytes(x: UInt): Seq[UInt] = (0 until 64).map(j => x(8 * j + 7, 8 * j))
  private def satAdd(a: UInt, b: UInt): UInt =
    Cat(bytes(a).zip(bytes(b)).reverse.map { case (x, y) => val s = x +& y; Mux(s > hotMax, hotMax, s(7, 0)) })
  // the entry's increment for counter `lane`, saturating (an entry never holds more than the counter can)
  private def incLane(x: UInt, lane: UInt): UInt =
    Cat(bytes(x).zipWithIndex.reverse.map { case (b, j) => Mux(lane === j.U && b =/= hotMax, b + 1.U, b) })

  // ------------------------------------------------------------------ state
  val summary = SyncReadMem(nSum, Vec(2, UInt(64.W)))
  val hotSum  = SyncReadMem(nHotSum, UInt(64.W))
  // overflow flags, one per group of 32 768 pages and table: one wide register per table (a bit vector, not nSum
  // registers with their own write decode: compact SystemVerilog at 8 Ki groups)
  val ovf    = RegInit(VecInit(Seq.fill(DramTable.Count)(0.U(nSum.W))))
  val cValid = RegInit(VecInit(Seq.fill(E)(false.B)))
  val cTab   = Reg(Vec(E, UInt(2.W)))
  val cRow   = Reg(Vec(E, UInt(wordBits.W)))
  val cBits  = Reg(Vec(E, UInt(512.W)))

  // the engine's step pipeline: p1 taken at the last enabled edge, answered by the controller; p2 is the answer the
  // engine reads now (two of its cycles after the step)
  val p1v    = RegInit(false.B)
  val p1     = Reg(new HarvestStep(wordBits))
  val p1done = RegInit(false.B)
  val p1ans  = Reg(UInt(512.W))
  val p2v    = RegInit(false.B)
  val p2ans  = Reg(UInt(512.W))

  // the scan window: summary words winIdx and winIdx + 1 of both bitmaps
  val winOk  = RegInit(false.B)
  val winIdx = Reg(UInt(sumBits.W))
  val win    = Reg(Vec(2, Vec(2, UInt(64.W)))) // (word 0/1)(table)

  object S extends ChiselEnum {
    val idle, win0, win1, opSum, rdA, rdR, compute, wrA, wrB, sumW, matA, matB, matSum, hmS, hmW, hmC, hmRA, hmRR,
        hmCmp, hmWA, hmWB, hmSW = Value
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
  // the line operation in progress: a step (from p1) or a write-back (a cache entry)
  val opActive = RegInit(false.B)
  val opStep   = Reg(Bool())
  val opTab    = Reg(UInt(2.W))
  val opRow    = Reg(UInt(wordBits.W))   // the row (bitmaps) or word (hotness)
  val opOp     = Reg(UInt(TableOp.Bits.W))
  val opMask   = Reg(UInt(8.W))
  val opC      = Reg(UInt(512.W))        // the bits taken out of the cache
  val opD      = Reg(UInt(512.W))        // the line as DRAM held it (zero when the summary bit was clear)
  val opNew    = Reg(UInt(512.W))
  val opWord   = Reg(Vec(2, UInt(64.W))) // the bitmap summary word of opRow
  val opWrite  = Reg(Vec(2, UInt(64.W))) // the bitmap summary word to write back
  val opHot    = Reg(UInt(64.W))         // the hotness summary word of opRow
  val opHotWr  = Reg(UInt(64.W))         // the hotness summary word to write back
  val matRow   = Reg(UInt(9.W))          // materialise: the next line of the group (64 rows or 512 words)
  // The group (and table) this command materialised last: its later steps in this command do not materialise it again,
  // even if a newer overflow set the flag again (that set raced the command, and the flag stays for the next one).
  // A command steps in address order and a group's lines are contiguous, so one register covers a command. Without
  // it, sets that keep overflowing during a materialisation (the controller writes nothing back meanwhile) could make
  // every step of a group wait for another one: a hotness group is 512 read-modify-writes.
  val matValid = RegInit(false.B)
  val matTab   = Reg(UInt(2.W))
  val matGrp   = Reg(UInt(sumBits.W))
  when(!io.scanUsed)(matValid := false.B) // between commands
  // write-back victim: the first valid entry from wbPtr on, round robin (the lowest valid entry would be a hot row
  // written back and re-allocated in the same slot again and again while older entries stay)
  val wbPtr = RegInit(0.U(log2Ceil(E).max(1).W))
  // the last thing done was a write-back forced by a nearly full cache: the engine's turn next (alternating, so
  // neither a flood of sets nor a long harvest holds the other off)
  val forcedLast = RegInit(false.B)
  val awDone     = RegInit(false.B)
  val wDone      = RegInit(false.B)

  private def low6(x: UInt): UInt        = x.pad(6)(5, 0)
  private def fit(x: UInt, w: Int): UInt = x.pad(w)(w - 1, 0)
  // the overflow group of line k of table t: 64 bitmap rows or 512 hotness words
  private def grpOf(t: Int, k: UInt): UInt = if (nSum == 1) 0.U else fit(k >> (if (t == HOT) 9 else 6), sumBits)
  private def grp(t: UInt, k: UInt): UInt  = Mux(t === HOT.U, grpOf(HOT, k), grpOf(0, k))
  private def lineAddr(t: UInt, k: UInt): UInt =
    (p.carveBase.U(p.dramAddrBits.W) + ((t.pad(wordBits + 2) * p.rows.U + k) << 6))(p.dramAddrBits - 1, 0)

  // ------------------------------------------------------------------ engine side
  val stepPending = p1v && !p1done
  val scanGroup   = fit(io.scanRow >> 6, sumBits)
  val winCovers   = winOk && winIdx === scanGroup
  val en          = !stepPending && !(io.scanUsed && !winCovers)
  io.en := en
  when(en) {
    p2v    := p1v
    p2ans  := p1ans
    p1v    := io.step.valid && io.step.bits.table =/= 0.U // tables 1 dirty, 2 accessed, 3 hotness
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
  for ((set, s) <- io.sets.zipWithIndex) {
    val t     = setTables(s)
    val hot   = t == HOT
    val key   = fit(set.bits >> (if (hot) 6 else 9), wordBits)
    val hit   = VecInit((0 until E).map(e => vNext(e) && tNext(e) === t.U && rNext(e) === key))
    val free  = VecInit(vNext.map(!_))
    val any   = hit.asUInt.orR
    val alloc = PriorityEncoder(free.asUInt)
    val room  = free.asUInt.orR
    val first = if (hot) (1.U(512.W) << Cat(set.bits(5, 0), 0.U(3.W)))(511, 0) else UIntToOH(set.bits(8, 0), 512)
    val nv    = Wire(Vec(E, Bool()))
    val nt    = Wire(Vec(E, UInt(2.W)))
    val nr    = Wire(Vec(E, UInt(wordBits.W)))
    val nb    = Wire(Vec(E, UInt(512.W)))
    for (e <- 0 until E) {
      val here  = set.valid && !any && room && alloc === e.U
      val added = if (hot) incLane(bNext(e), set.bits(5, 0)) else bNext(e) | first
      nv(e) := vNext(e) || here
      nt(e) := Mux(here, t.U, tNext(e))
      nr(e) := Mux(here, key, rNext(e))
      nb(e) := Mux(here, first, Mux(set.valid && hit(e), added, bNext(e)))
    }
    ovfSet(s) := set.valid && !any && !room
    vNext = nv; tNext = nt; rNext = nr; bNext = nb
  }
  cValid := vNext
  cTab   := tNext
  cRow   := rNext
  cBits  := bNext
  val ovfClear    = WireDefault(false.B) // materialise done: the group's flag (a set of the same cycle wins)
  val ovfClearTab = WireDefault(0.U(2.W))
  val ovfClearGrp = WireDefault(0.U(sumBits.W))
  for (t <- 0 until DramTable.Count) {
    val clr = Mux(ovfClear && ovfClearTab === t.U, UIntToOH(ovfClearGrp, nSum), 0.U(nSum.W))
    val set = io.sets.zipWithIndex.filter { case (_, s) => setTables(s) == t }.map { case (in, s) =>
      Mux(ovfSet(s), UIntToOH(grpOf(t, fit(in.bits >> (if (t == HOT) 6 else 9), wordBits)), nSum), 0.U(nSum.W))
    }
    ovf(t) := (ovf(t) & ~clr) | set.foldLeft(0.U(nSum.W))(_ | _) // a set of the same cycle wins over the clear
  }
  io.overflow := ovfSet.asUInt
  val occ = PopCount(cValid)
  io.occupancy := occ

  // ------------------------------------------------------------------ scan (the bitmaps)
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
  val matLine = opRow | matRow // materialise: the line in work
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
  val hotAddr = WireDefault(0.U(hotBits.W))
  val hotRead = WireDefault(false.B)
  val hotRd   = hotSum.read(hotAddr, hotRead)
  def sumWrite(idx: UInt, v: Vec[UInt]): Unit = {
    summary.write(idx, v)
    when(winOk && idx === winIdx)(win(0)       := v)
    when(winOk && idx === winIdx + 1.U)(win(1) := v)
  }
  // both summaries of line k of table t are read; opSum keeps the one of t
  def readSummaries(t: UInt, k: UInt): Unit = {
    sumAddr := grp(t, k)
    sumRead := true.B
    hotAddr := fit(k >> 6, hotBits)
    hotRead := true.B
  }
  val p1Tab = p1.table - 1.U
  val p1Row = p1.row
  val p1Hit = VecInit((0 until E).map(e => cValid(e) && cTab(e) === p1Tab && cRow(e) === p1Row))
  def apply(old: UInt, op: UInt, mask: UInt): UInt = {
    val m = Cat((0 until 8).reverse.map(k => Fill(64, mask(k))))
    MuxLookup(op, old)(Seq(TableOp.ZERO.U -> (old & ~m), TableOp.MARK.U -> (old | m)))
  }
  def applyHot(old: UInt, op: UInt): UInt =
    MuxLookup(op, old)(
      Seq(TableOp.ZERO.U -> 0.U(512.W), TableOp.HALVE.U -> Cat(bytes(old).reverse.map(b => (b >> 1).pad(8))))
    )
  val isHot = opTab === HOT.U
  val dBit  = Mux(isHot, opHot(low6(opRow)), opWord(opTab(0))(low6(opRow)))

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
        readSummaries(cTab(e), cRow(e))
        state := S.opSum
      }.elsewhen(stepPending) {
        val done = matValid && matTab === p1Tab && matGrp === grp(p1Tab, p1Row)
        when(ovf(p1Tab)(grp(p1Tab, p1Row)) && !done) {
          // the group overflowed: materialise it in DRAM first (bitmaps all-ones, hotness counters at least 1)
          opTab      := p1Tab
          opRow      := Mux(p1Tab === HOT.U, Cat(grpOf(HOT, p1Row), 0.U(9.W)), Cat(grpOf(0, p1Row), 0.U(6.W)))
          opNew      := Fill(512, 1.U(1.W))
          matRow     := 0.U
          forcedLast := false.B
          state      := Mux(p1Tab === HOT.U, S.hmS, S.matA)
        }.otherwise {
          forcedLast := false.B
          take       := p1Hit.asUInt.orR
          takeIdx    := PriorityEncoder(p1Hit.asUInt)
          opC        := Mux(p1Hit.asUInt.orR, Mux1H(p1Hit, cBits), 0.U)
          opActive   := true.B
          opStep     := true.B
          opTab      := p1Tab
          opRow      := p1Row
          opOp       := p1.op
          opMask     := p1.mask
          readSummaries(p1Tab, p1Row)
          state := S.opSum
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
      opHot   := hotRd
      opHotWr := hotRd
      val bit = Mux(isHot, hotRd(low6(opRow)), sumRd(opTab(0))(low6(opRow)))
      when(bit) {
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
      val old = Mux(isHot, satAdd(opD, opC), opD | opC)
      val nw  = Mux(isHot, applyHot(old, opOp), apply(old, opOp, opMask))
      opNew := nw
      when(opStep) {
        p1ans  := old
        p1done := true.B
      }
      val bitMask = UIntToOH(low6(opRow), 64)
      def summaryBit(on: Bool): Unit = when(isHot) {
        opHotWr := Mux(on, opHot | bitMask, opHot & ~bitMask)
      }.otherwise {
        opWrite(opTab(0)) := Mux(on, opWord(opTab(0)) | bitMask, opWord(opTab(0)) & ~bitMask)
      }
      when(nw === 0.U) {
        // an all-zero line needs no DRAM line: its summary bit says so
        summaryBit(false.B)
        state                := Mux(dBit, S.sumW, S.idle)
        when(!dBit)(opActive := false.B)
      }.elsewhen(!dBit || nw =/= opD) {
        summaryBit(true.B)
        awDone := false.B
        wDone  := false.B
        state  := S.wrA
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
      when(isHot)(hotSum.write(fit(opRow >> 6, hotBits), opHotWr)).otherwise(sumWrite(grp(opTab, opRow), opWrite))
      opActive := false.B
      state    := S.idle
    }
    // materialise a bitmap group: 64 all-ones lines, then their summary bits
    is(S.matA) {
      axi.awaddr := lineAddr(opTab, matLine)
      writeLine(S.matB)
    }
    is(S.matB) {
      axi.bready := true.B
      when(axi.bvalid) {
        awDone := false.B
        wDone  := false.B
        val last = matRow === 63.U || matLine === (p.rows - 1).U
        matRow := matRow + 1.U
        when(last) {
          sumAddr := grp(opTab, opRow)
          sumRead := true.B
          state   := S.matSum
        }.otherwise {
          state := S.matA
        }
      }
    }
    is(S.matSum) {
      val w = Wire(Vec(2, UInt(64.W)))
      w           := sumRd
      w(opTab(0)) := Fill(64, 1.U(1.W)) // rows past the table are never scanned (the engine's ranges end there)
      sumWrite(grp(opTab, opRow), w)
      ovfClear    := true.B
      ovfClearTab := opTab
      ovfClearGrp := grp(opTab, opRow)
      matValid    := true.B
      matTab      := opTab
      matGrp      := grp(opTab, opRow)
      state       := S.idle
    }
    // materialise a hotness group: for each block of 64 words, its summary word, then per word a read-modify-write
    // max(c, 1) (a clean word is written all ones without a read), then the block's summary word all ones
    is(S.hmS) {
      hotAddr := fit(matLine >> 6, hotBits)
      hotRead := true.B
      state   := S.hmW
    }
    is(S.hmW) {
      opHot := hotRd
      state := S.hmC
    }
    is(S.hmC) {
      when(opHot(low6(matLine))) {
        state := S.hmRA
      }.otherwise {
        opD   := 0.U
        state := S.hmCmp
      }
    }
    is(S.hmRA) {
      axi.araddr              := lineAddr(opTab, matLine)
      axi.arvalid             := true.B
      when(axi.arready)(state := S.hmRR)
    }
    is(S.hmRR) {
      axi.rready := true.B
      when(axi.rvalid) {
        opD   := axi.rdata
        state := S.hmCmp
      }
    }
    is(S.hmCmp) {
      opNew  := Cat(bytes(opD).reverse.map(b => Mux(b === 0.U, 1.U(8.W), b)))
      awDone := false.B
      wDone  := false.B
      state  := S.hmWA
    }
    is(S.hmWA) {
      axi.awaddr := lineAddr(opTab, matLine)
      writeLine(S.hmWB)
    }
    is(S.hmWB) {
      axi.bready := true.B
      when(axi.bvalid) {
        val blockEnd = matLine(5, 0) === 63.U || matLine === (p.words - 1).U
        when(blockEnd) {
          state := S.hmSW
        }.otherwise {
          matRow := matRow + 1.U
          state  := S.hmC
        }
      }
    }
    is(S.hmSW) {
      hotSum.write(fit(matLine >> 6, hotBits), Fill(64, 1.U(1.W))) // words past the table are never stepped
      val last = matRow === 511.U || matLine === (p.words - 1).U
      matRow := matRow + 1.U
      when(last) {
        ovfClear    := true.B
        ovfClearTab := opTab
        ovfClearGrp := grp(opTab, opRow)
        matValid    := true.B
        matTab      := opTab
        matGrp      := grp(opTab, opRow)
        state       := S.idle
      }.otherwise {
        state := S.hmS
      }
    }
  }
}

/**
 * The harvest engine with its dirty and accessed bitmaps and hotness counters in device DRAM ([[DramTables]]): the top
 * the 1 TiB configuration builds (config/dram1t.toml), with the ports of [[HarvestBench]] plus a hotness increment, the
 * DRAM master `d_axi` and the update cache's overflow and occupancy for the benches. The command engine runs on a clock
 * gated by the tables' `en` (DramTables says why); what crosses between the two clocks is held so that no event is lost
 * or doubled: the DMA writer's start and beats pass only in enabled cycles, its completion waits in a register for the
 * next one.
 */
class DramHarvestBench(p: CxlTrackParams) extends Module {
  override def desiredName = "DramHarvestBench"
  require(p.dramTables, "DramHarvestBench builds the DRAM tables: the configuration needs [rtl] dram_tables = 1")
  val io = IO(new HarvestBenchIO(p) {
    // a hotness increment (in the core every accepted request increments its page's counter and sets its accessed
    // bit; the bench drives them apart so that it can choose the cache pressure of each)
    val hotInc    = Input(Valid(UInt(p.pageBits.W)))
    val overflow  = Output(UInt(3.W)) // bit t: the set of this cycle on table t (DramTable) found the cache full
    val occupancy = Output(UInt(8.W))
    val engineEn  = Output(Bool())
  })
  val h_axi  = IO(new Axi4Write(CommandEngine.dmaAddrBits(p), 512, 1))
  val d_axi  = IO(new Axi4(p.dramAddrBits, 512, 1))
  val tables = Module(new DramTables(p, Seq(DramTable.Dirty, DramTable.Accessed, DramTable.Hotness)))
  val en     = tables.io.en
  val gate   = Module(new EngineClockGate)
  gate.io.in := clock
  gate.io.en := en
  val gated    = gate.io.out
  val commands = withClock(gated)(Module(new CommandEngine(p)))
  d_axi <> tables.axi

  tables.io.step                     := commands.io.harvest
  tables.io.scanRow                  := commands.io.scanRow
  tables.io.scanUsed                 := commands.io.ready && !commands.io.idle
  commands.io.scanBits(0)            := tables.io.scanBits(0)
  commands.io.scanBits(1)            := tables.io.scanBits(1)
  commands.io.harvestRow.valid       := tables.io.resp.valid
  commands.io.harvestRow.bits.bitmap := tables.io.resp.bits
  // a hotness line: counter j in byte j
  commands.io.harvestRow.bits.hotness := VecInit(
    Seq.tabulate(64)(j => tables.io.resp.bits(8 * j + p.hotBits - 1, 8 * j))
  )
  tables.io.sets(0) := io.dirtySet
  tables.io.sets(1) := io.accessedSet
  tables.io.sets(2) := io.hotInc
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
        s""""carve_base": ${p.carveBase}, "carve_bytes": ${p.carveBytes}, "dram_addr_bits": ${p.dramAddrBits}, """ +
        s""""words": ${p.words}, "hot_bits": ${p.hotBits}}"""
    )
  finally out.close()
}
