// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** The tables [[DramTables]] keeps in device DRAM: the index of each is its place in the carve-out. */
object DramTable {
  val Dirty    = 0 // a 64-byte line per 512-page row, one bit per page
  val Accessed = 1 // as Dirty
  val Hotness  = 2 // a 64-byte line per 64-page word, one byte per page (the low `hot_bits` bits used)
  val BatValid = 3 // as Dirty: a page's association is valid; a cache entry holds the pages invalidated since
  val Count    = 4
}

/**
 * The per-page tables in a device-DRAM carve-out (docs/spec.md section 12, docs/rtl-notes.md "Tables in device DRAM"):
 * the dirty and accessed fine bitmaps, the hotness counters and the BAT (validity bitmap and payload), behind the same
 * interfaces as the on-chip tables: a harvest step answered two engine cycles later with the row as it was, the summary
 * scan of up to `scanRows` rows from `scanRow`, and a BAT request answered as [[CommandEngine]] expects.
 *
 * Where a bit lives. A page set (dirty, accessed), increment (hotness) or invalidation (a write: BAT validity) from the
 * data path goes into the on-chip write-back **update cache** (`cacheEntries` entries of 512 bits, fully associative,
 * shared by the tables) in the cycle after it is presented: ORed into the row's entry (a bitmap; for BAT validity the
 * entry holds the pages invalidated since, cleared from the line when it is read), added with saturation to the
 * counter's byte in the word's entry (hotness: the entry holds increments not yet in DRAM), or put into a free entry;
 * it never waits. An invalidation in a group with no association (`assoc`) is dropped: nothing to clear. When no entry
 * is free the set goes to the **overflow** flag of its table's group of 32 768 pages (64 rows, 512 hotness words; 128
 * MiB at 4 KiB pages): a bitmap group is then reported all-dirty by the next harvest (a false positive, never a lost
 * write); a hotness group gets every counter raised to at least 1 (an increment may be lost, but a page accessed since
 * the last clearing harvest never reads 0, which is what reclaim takes for cold); a BAT group becomes all invalid
 * (safe: a page is then treated as written, never as clean). The cache is written back, one line per DRAM
 * read-modify-write, when it is half full.
 *
 * In DRAM the carve-out holds, in this order, the dirty rows, the accessed rows, the hotness words, the BAT validity
 * rows (one 64-byte line each) and the BAT payload (block and disk, 8 bytes per page). An on-chip **summary** bit per
 * line says whether the line may be non-zero (a RAM of 64-bit words: one word of the three bitmaps per 64 rows, one
 * word of hotness per 64 words). A clear summary bit means the line is zero whatever DRAM holds, so nothing needs
 * clearing after reset, a write-back into a clean line is a plain write and a harvest of a clean line reads nothing.
 *
 * The controller does one thing at a time, in this order: the engine's pending step or BAT request, the engine's scan
 * window, a write-back. A step on line k: if k's group overflowed, first materialise the group (bitmaps: all-ones
 * lines; hotness: every counter max(c, 1), a read-modify-write per line; BAT: summary bits cleared; flag cleared); then
 * take k's cache entry out of the cache (later sets go to a new entry: they come after the step), read the line if its
 * summary bit is set, answer `line | entry` (hotness: the saturating sum; BAT: `line & ~entry`), write back what the
 * step leaves (ZERO clears, HALVE halves every counter, MARK sets the masked words, READ keeps; BAT SET and CLEAR the
 * page's bit) and its summary bit. A BAT_SET writes its payload bytes (byte strobes, no read), a BAT_GET or BAT_DISCARD
 * of a valid entry reads them. The scan (bitmaps only: a hotness harvest steps every word) is exact or conservative: a
 * row is marked if its summary bit, its group's overflow flag, a cache entry, or the row the controller is working on
 * says so.
 *
 * Engine timing: DRAM answers in tens of cycles, the engine expects two. So the engine runs on a gated clock (`en`,
 * [[DramHarvestBench]]): this block holds `en` low while the engine's latest step or BAT request has no answer yet, or
 * while the engine is in a command and the scan window does not cover `scanRow`. In the engine's own cycles everything
 * is as with the on-chip tables. The data path is never held: only the engine waits, and the cache only back-pressures
 * itself (overflow). A BAT_SET or BAT_CLEAR completes in the engine at once; its effect is ordered where its cache
 * entry is taken, and `busy` stays high until then, so a host that waits for it (the core's CMD_STATUS.BUSY must
 * include it) sees every later write invalidate the new association.
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
    val step      = Input(Valid(new HarvestStep(wordBits)))
    val resp      = Output(Valid(UInt(512.W)))
    val scanRow   = Input(UInt(rowBits.W))
    val scanUsed  = Input(Bool())  // the engine reads the scan in this cycle (CommandEngine.scanNow)
    val inCommand = Input(Bool())  // the engine is in a command (a group is materialised once per command)
    val scanBits  = Output(Vec(2, UInt(p.scanRows.W)))
    val en        = Output(Bool())
    val busy      = Output(Bool()) // a step not yet answered or still written back
    // BAT commands (in the engine's cycles, as `step`): the valid bit two engine cycles after the request, the payload
    // (block, disk) one cycle after it; a BAT_SET or BAT_CLEAR holds `busy` until it took effect
    val bat        = Input(Valid(new BatRequest(p.pageBits, p.batDiskBits + p.batBlockBits)))
    val batValid   = Output(Valid(Bool()))
    val batPayload = Output(UInt((p.batDiskBits + p.batBlockBits).W))
    // the data path's sets, increments and invalidations, never held: port s is a page of table setTables(s)
    val sets = Input(Vec(nSets, Valid(UInt(p.pageBits.W))))
    // BAT invalidations found (docs/spec.md section 12, "BAT invalidation events in DRAM"): when a BAT line is read
    // with its cache entry, the pages valid in DRAM and written since. `invFound` counts them (STAT_BAT_INV) in the
    // cycle they are found; with `evtEn` (CTRL.BAT_INV_EVT_EN) they are then given one per cycle on `inv`, in page
    // order (a BAT op waits until the previous line's are out). `invLost`: groups made all-invalid by an overflow in
    // this cycle (their flag went up): associations lost without a per-page record
    val evtEn    = Input(Bool())
    val inv      = Output(Valid(UInt(p.pageBits.W)))
    val invFound = Output(UInt(10.W))
    val invLost  = Output(UInt(2.W))
    // BAT invalidations still in the cache or events not yet given: the core is not idle (they are written back
    // as soon as the engine waits for nothing, so that their events come without other traffic)
    val pending = Output(Bool())
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
  val summary = SyncReadMem(nSum, Vec(3, UInt(64.W))) // dirty, accessed, BAT validity (sumSlot)
  val hotSum  = SyncReadMem(nHotSum, UInt(64.W))
  // overflow flags, one per group of 32 768 pages and table: one wide register per table (a bit vector, not nSum
  // registers with their own write decode: compact SystemVerilog at 8 Ki groups)
  val ovf = RegInit(VecInit(Seq.fill(DramTable.Count)(0.U(nSum.W))))
  // BAT: a group (32 768 pages) may hold a valid association. Set when a BAT_SET is taken from the engine, before it
  // takes effect, never cleared: so an invalidation of a page whose group has no flag has nothing to clear, and costs
  // no cache entry (a write anywhere else on the device is free)
  val assoc  = RegInit(0.U(nSum.W))
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
  val p1bat  = Reg(Bool())                                   // p1 is a BAT request
  val p1req  = Reg(new BatRequest(p.pageBits, p.batDiskBits + p.batBlockBits))
  val p1vb   = Reg(Bool())                                   // a BAT request's answer: the valid bit as it was
  val p2bat  = RegInit(false.B)
  val p2vb   = Reg(Bool())
  val batPay = Reg(UInt((p.batDiskBits + p.batBlockBits).W)) // the last payload read, held for the engine

  // the scan window: summary words winIdx and winIdx + 1 of both bitmaps
  val winOk  = RegInit(false.B)
  val winIdx = Reg(UInt(sumBits.W))
  val win    = Reg(Vec(2, Vec(2, UInt(64.W)))) // (word 0/1)(table 0/1)

  object S extends ChiselEnum {
    val idle, win0, win1, opSum, rdA, rdR, compute, wrA, wrB, sumW, matA, matB, matSum, hmS, hmW, hmC, hmRA, hmRR,
        hmCmp, hmWA, hmWB, hmSW, pwA, pwB, prA, prR, bvS, bvW = Value
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
  // One line read from DRAM: the address, then `use` of the data when it comes.
  def requestLine(addr: UInt, next: S.Type): Unit = {
    axi.araddr              := addr
    axi.arvalid             := true.B
    when(axi.arready)(state := next)
  }
  def receiveLine(use: UInt => Unit): Unit = {
    axi.rready := true.B
    when(axi.rvalid)(use(axi.rdata))
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
  val opWord   = Reg(Vec(3, UInt(64.W))) // the bitmap summary word of opRow (dirty, accessed, BAT validity)
  val opWrite  = Reg(Vec(3, UInt(64.W))) // the bitmap summary word to write back
  val opBat    = Reg(Bool())             // the op is a BAT request (opOp SET, CLEAR or READ on page opPage)
  val opPage   = Reg(UInt(p.pageBits.W))
  val opData   = Reg(UInt((p.batDiskBits + p.batBlockBits).W))
  val opHot    = Reg(UInt(64.W))         // the hotness summary word of opRow
  val opHotWr  = Reg(UInt(64.W))         // the hotness summary word to write back
  val matRow   = Reg(UInt(9.W))          // materialise: the next line of the group (64 rows or 512 words)
  // A hotness materialisation (512 read-modify-writes) lets a write-back run between two of its lines when the cache
  // is nearly full (else the sets of those thousands of cycles overflow, and flag the group again): its own registers,
  // so that the write-back's op leaves them alone. hmWb: a write-back ran since the last line (one line at least
  // between two write-backs, so that neither starves).
  val hmBase   = Reg(UInt(wordBits.W)) // the group's first word
  val hmHot    = Reg(UInt(64.W))       // the summary word of the block of 64 words in work
  val hmPaused = RegInit(false.B)
  val hmWb     = RegInit(false.B)
  // The group (and table) this command materialised last: its later steps in this command do not materialise it again,
  // even if a newer overflow set the flag again (that set raced the command, and the flag stays for the next one).
  // A command steps in address order and a group's lines are contiguous, so one register covers a command. Without
  // it, sets that keep overflowing during a materialisation (the controller writes nothing back meanwhile) could make
  // every step of a group wait for another one: a hotness group is 512 read-modify-writes.
  val matValid = RegInit(false.B)
  val matTab   = Reg(UInt(2.W))
  val matGrp   = Reg(UInt(sumBits.W))
  when(!io.inCommand)(matValid := false.B) // between commands
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
  // the carve-out: dirty rows, accessed rows, hotness words, BAT validity rows, then the BAT payload (8 pages a line)
  private val lineOffset              = Seq(BigInt(0), BigInt(p.rows), BigInt(2) * p.rows, BigInt(2) * p.rows + p.words)
  private val payloadAt               = BigInt(3) * p.rows + p.words
  private def carve(line: UInt): UInt = (p.carveBase.U(p.dramAddrBits.W) + (line << 6))(p.dramAddrBits - 1, 0)
  private def lineAddr(t: UInt, k: UInt): UInt =
    carve(MuxLookup(t, 0.U)(lineOffset.zipWithIndex.map { case (o, i) => i.U -> o.U }) +& k)
  private def payloadAddr(page: UInt): UInt = carve(payloadAt.U +& (page >> 3))
  // a bitmap's place in a summary word: dirty 0, accessed 1, BAT validity 2
  private def sumSlot(t: UInt): UInt = Mux(t === DramTable.BatValid.U, 2.U, t(0))

  // ------------------------------------------------------------------ engine side
  val stepPending = p1v && !p1done
  val scanGroup   = fit(io.scanRow >> 6, sumBits)
  val winCovers   = winOk && winIdx === scanGroup
  val en          = !stepPending && !(io.scanUsed && !winCovers)
  io.en := en
  when(en) {
    p2v   := p1v
    p2ans := p1ans
    p2bat := p1v && p1bat
    p2vb  := p1vb
    // a harvest step (tables 1 dirty, 2 accessed, 3 hotness) or a BAT request
    p1v    := (io.step.valid && io.step.bits.table =/= 0.U) || io.bat.valid
    p1     := io.step.bits
    p1bat  := io.bat.valid
    p1req  := io.bat.bits
    p1done := false.B
  }
  // a BAT_SET is announced to the invalidations from the edge that takes it: see `assoc`
  val batSetGrp = grpOf(0, fit(io.bat.bits.page >> 9, wordBits))
  when(en && io.bat.valid && io.bat.bits.op === TableOp.SET.U) {
    assoc := assoc | UIntToOH(batSetGrp, nSum)
  }
  io.resp.valid     := p2v && !p2bat
  io.resp.bits      := p2ans
  io.batValid.valid := p2v && p2bat
  io.batValid.bits  := p2vb
  io.batPayload     := batPay
  io.busy           := p1v || p2v || (opActive && opStep)

  // ------------------------------------------------------------------ cache: take, then the sets of this cycle
  val take    = WireDefault(false.B) // the controller takes entry takeIdx out of the cache
  val takeIdx = WireDefault(0.U(log2Ceil(E).max(1).W))
  var vNext   = VecInit(cValid.zipWithIndex.map { case (v, e) => v && !(take && takeIdx === e.U) })
  var tNext   = cTab: Vec[UInt]
  var rNext   = cRow: Vec[UInt]
  var bNext   = cBits: Vec[UInt]
  val ovfSet  = Wire(Vec(nSets, Bool()))
  for ((in, s) <- io.sets.zipWithIndex) {
    val t   = setTables(s)
    val hot = t == HOT
    // an invalidation in a group that holds no association has nothing to clear
    val set = Wire(Valid(UInt(p.pageBits.W)))
    set.bits  := in.bits
    set.valid := in.valid && (if (t == DramTable.BatValid) assoc(grpOf(0, fit(in.bits >> 9, wordBits))) else true.B)
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
  // the BAT groups newly flagged in this cycle (two ports of one group in one cycle: one group)
  val batPorts = io.sets.indices.filter(setTables(_) == DramTable.BatValid)
  require(batPorts.length <= 2, "invLost counts up to two BAT set ports")
  val batGrp  = batPorts.map(s => grpOf(0, fit(io.sets(s).bits >> 9, wordBits)))
  val newLost = batPorts.indices.map(i => ovfSet(batPorts(i)) && !ovf(DramTable.BatValid)(batGrp(i)))
  val lostDup = if (batPorts.length == 2) newLost(0) && batGrp(0) === batGrp(1) else false.B
  io.invLost := (if (batPorts.isEmpty) 0.U
                 else PopCount(newLost) - (lostDup && newLost.last).asUInt)
  val occ = PopCount(cValid)
  io.occupancy := occ

  // ------------------------------------------------------------------ BAT invalidation events
  val evMask = RegInit(0.U(512.W)) // the pages of line evRow still to be given on `inv`
  val evRow  = Reg(UInt(wordBits.W))
  val evLow  = PriorityEncoder(evMask)
  io.inv.valid                := evMask =/= 0.U
  io.inv.bits                 := Cat(evRow, evLow(8, 0)).pad(p.pageBits)(p.pageBits - 1, 0)
  when(evMask =/= 0.U)(evMask := evMask & ~UIntToOH(evLow, 512))
  io.invFound                 := 0.U
  val batEntries = VecInit((0 until E).map(e => cValid(e) && cTab(e) === DramTable.BatValid.U)).asUInt
  io.pending := batEntries.orR || evMask =/= 0.U || (opActive && opTab === DramTable.BatValid.U)

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
  val matLine = opRow | matRow  // materialise: the line in work (bitmaps)
  val hmLine  = hmBase | matRow // the hotness word in work
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
    when(winOk && idx === winIdx)(win(0)       := VecInit(v(0), v(1)))
    when(winOk && idx === winIdx + 1.U)(win(1) := VecInit(v(0), v(1)))
  }
  // both summaries of line k of table t are read; opSum keeps the one of t
  def readSummaries(t: UInt, k: UInt): Unit = {
    sumAddr := grp(t, k)
    sumRead := true.B
    hotAddr := fit(k >> 6, hotBits)
    hotRead := true.B
  }
  val p1Tab = Mux(p1bat, DramTable.BatValid.U, p1.table - 1.U)
  val p1Row = Mux(p1bat, fit(p1req.page >> 9, wordBits), p1.row)
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
  val isBat = opTab === DramTable.BatValid.U
  val dBit  = Mux(isHot, opHot(low6(opRow)), opWord(sumSlot(opTab))(low6(opRow)))
  val lane  = opPage(2, 0) // the page's 8 bytes in its payload line
  // The end of a line op, once its answer is known: the line `nw` and its summary bit written back as needed.
  def finishLine(nw: UInt): Unit = {
    val bitMask = UIntToOH(low6(opRow), 64)
    def summaryBit(on: Bool): Unit = when(isHot) {
      opHotWr := Mux(on, opHot | bitMask, opHot & ~bitMask)
    }.otherwise {
      opWrite(sumSlot(opTab)) := Mux(on, opWord(sumSlot(opTab)) | bitMask, opWord(sumSlot(opTab)) & ~bitMask)
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

  // Write back one of the entries `cands` (default: any), round robin from wbPtr (the op ends in `idle`).
  def startWriteBack(forced: Bool, cands: UInt = cValid.asUInt): Unit = {
    val twice = Cat(cands, cands) >> wbPtr
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
    opBat      := false.B
    readSummaries(cTab(e), cRow(e))
    state := S.opSum
  }

  // A group materialised: its overflow flag cleared (a set of the same cycle wins), and this command does not
  // materialise it again (`matValid`).
  def materialised(t: UInt, g: UInt): Unit = {
    ovfClear    := true.B
    ovfClearTab := t
    ovfClearGrp := g
    matValid    := true.B
    matTab      := t
    matGrp      := g
    state       := S.idle
  }

  switch(state) {
    is(S.idle) {
      awDone := false.B
      wDone  := false.B
      // a nearly full cache is written back first, so that a long harvest cannot starve the write-backs (the cache
      // would fill and every set overflow)
      val engineWaits = stepPending || (io.scanUsed && !winCovers)
      val forced      = occ >= highWater.U && !(forcedLast && engineWaits)
      val writeBack   = forced || (!engineWaits && occ >= watermark.U)
      when(hmPaused) {
        // back to the hotness materialisation the write-back interrupted: its block's summary word again (the
        // write-back may have set a bit of it)
        hmPaused := false.B
        state    := S.hmS
      }.elsewhen(writeBack) {
        startWriteBack(forced)
      }.elsewhen(!engineWaits && batEntries.orR) {
        // a BAT invalidation is written back as soon as nothing else waits: its event (and the line's) comes then
        startWriteBack(false.B, batEntries)
      }.elsewhen(stepPending) {
        val done = matValid && matTab === p1Tab && matGrp === grp(p1Tab, p1Row)
        when(ovf(p1Tab)(grp(p1Tab, p1Row)) && !done) {
          // the group overflowed: materialise it in DRAM first (bitmaps all-ones, hotness counters at least 1, BAT
          // validity all zero)
          opTab      := p1Tab
          opRow      := Mux(p1Tab === HOT.U, Cat(grpOf(HOT, p1Row), 0.U(9.W)), Cat(grpOf(0, p1Row), 0.U(6.W)))
          opNew      := Fill(512, 1.U(1.W))
          matRow     := 0.U
          forcedLast := false.B
          hmBase     := Cat(grpOf(HOT, p1Row), 0.U(9.W))
          hmWb       := false.B
          state      := MuxLookup(p1Tab, S.matA)(Seq(HOT.U -> S.hmS, DramTable.BatValid.U -> S.bvS))
        }.otherwise {
          forcedLast := false.B
          take       := p1Hit.asUInt.orR
          takeIdx    := PriorityEncoder(p1Hit.asUInt)
          opC        := Mux(p1Hit.asUInt.orR, Mux1H(p1Hit, cBits), 0.U)
          opActive   := true.B
          opStep     := true.B
          opTab      := p1Tab
          opRow      := p1Row
          opOp       := Mux(p1bat, p1req.op, p1.op)
          opMask     := p1.mask
          opBat      := p1bat
          opPage     := p1req.page
          opData     := p1req.data
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
      win(0) := VecInit(sumRd(0), sumRd(1))
      if (nSum > 1) {
        sumAddr := Mux(winIdx === (nSum - 1).U, winIdx, winIdx + 1.U)
        sumRead := true.B
      }
      state := S.win1
    }
    is(S.win1) {
      if (nSum > 1) win(1) := VecInit(sumRd(0), sumRd(1)) else win(1) := VecInit(Seq.fill(2)(0.U(64.W)))
      winOk                := true.B
      state                := S.idle
    }
    is(S.opSum) {
      opWord  := sumRd
      opWrite := sumRd
      opHot   := hotRd
      opHotWr := hotRd
      val bit = Mux(isHot, hotRd(low6(opRow)), sumRd(sumSlot(opTab))(low6(opRow)))
      when(bit) {
        state := S.rdA
      }.otherwise {
        opD   := 0.U
        state := S.compute
      }
    }
    is(S.rdA)(requestLine(lineAddr(opTab, opRow), S.rdR))
    is(S.rdR)(receiveLine { d => opD := d; state := S.compute })
    is(S.compute) {
      // the line as the op finds it: DRAM with the cache entry (bits set, increments added, invalidations cleared)
      val old = MuxCase(opD | opC, Seq(isHot -> satAdd(opD, opC), isBat -> (opD & ~opC)))
      // BAT: the associations this line's invalidations clear (valid in DRAM, written since): counted now, given as
      // events after the previous line's (the op waits here for those)
      val found = opD & opC
      when(isBat && evMask =/= 0.U && io.evtEn) {
        // wait: the events of the previous line are still being given
      }.otherwise {
        when(isBat) {
          io.invFound := PopCount(found)
          when(io.evtEn) {
            evMask := found
            evRow  := opRow
          }
        }
        val bit    = UIntToOH(opPage(8, 0), 512)
        val batNew = MuxLookup(opOp, old)(Seq(TableOp.SET.U -> (old | bit), TableOp.CLEAR.U -> (old & ~bit)))
        val nw     = MuxCase(apply(old, opOp, opMask), Seq(isHot -> applyHot(old, opOp), isBat -> batNew))
        opNew := nw
        when(opStep && !opBat) {
          p1ans  := old
          p1done := true.B
        }
        when(opBat) {
          // BAT: the payload is written by a BAT_SET (before its line: a later op reads it only after this one),
          // read for a valid entry by the others (BAT_GET, BAT_DISCARD; BAT_CLEAR's read is not used); the engine
          // waits for the read, a BAT_SET or BAT_CLEAR only for the line
          val valid = (old >> opPage(8, 0))(0)
          p1vb := valid
          when(opOp === TableOp.SET.U) {
            p1done := true.B
            awDone := false.B
            wDone  := false.B
            state  := S.pwA
          }.elsewhen(valid) {
            state := S.prA
          }.otherwise {
            p1done := true.B
            finishLine(nw)
          }
        }.otherwise(finishLine(nw))
      }
    }
    is(S.pwA) {
      axi.awaddr := payloadAddr(opPage)
      axi.wdata  := opData.pad(64) << Cat(lane, 0.U(6.W))
      axi.wstrb  := "hff".U(64.W) << Cat(lane, 0.U(3.W))
      writeLine(S.pwB)
    }
    is(S.pwB) {
      axi.bready := true.B
      when(axi.bvalid)(finishLine(opNew))
    }
    is(S.prA)(requestLine(payloadAddr(opPage), S.prR))
    is(S.prR) {
      receiveLine { d =>
        batPay := (d >> Cat(lane, 0.U(6.W)))(p.batDiskBits + p.batBlockBits - 1, 0)
        p1done := true.B
        finishLine(opNew)
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
      val w = Wire(Vec(3, UInt(64.W)))
      w                 := sumRd
      w(sumSlot(opTab)) := Fill(64, 1.U(1.W)) // rows past the table are never scanned (the engine's ranges end there)
      sumWrite(grp(opTab, opRow), w)
      materialised(opTab, grp(opTab, opRow))
    }
    // materialise a hotness group: for each block of 64 words, its summary word, then per word a read-modify-write
    // max(c, 1) (a clean word is written all ones without a read), then the block's summary word all ones
    is(S.hmS) {
      hotAddr := fit(hmLine >> 6, hotBits)
      hotRead := true.B
      state   := S.hmW
    }
    is(S.hmW) {
      hmHot := hotRd
      state := S.hmC
    }
    is(S.hmC) {
      when(occ >= highWater.U && !hmWb) {
        hmPaused := true.B
        hmWb     := true.B
        startWriteBack(true.B)
      }.elsewhen(hmHot(low6(hmLine))) {
        state := S.hmRA
      }.otherwise {
        opD   := 0.U
        state := S.hmCmp
      }
    }
    is(S.hmRA)(requestLine(lineAddr(HOT.U, hmLine), S.hmRR))
    is(S.hmRR)(receiveLine { d => opD := d; state := S.hmCmp })
    is(S.hmCmp) {
      opNew  := Cat(bytes(opD).reverse.map(b => Mux(b === 0.U, 1.U(8.W), b)))
      awDone := false.B
      wDone  := false.B
      state  := S.hmWA
    }
    is(S.hmWA) {
      axi.awaddr := lineAddr(HOT.U, hmLine)
      writeLine(S.hmWB)
    }
    is(S.hmWB) {
      axi.bready := true.B
      when(axi.bvalid) {
        hmWb := false.B
        val blockEnd = hmLine(5, 0) === 63.U || hmLine === (p.words - 1).U
        when(blockEnd) {
          state := S.hmSW
        }.otherwise {
          matRow := matRow + 1.U
          state  := S.hmC
        }
      }
    }
    is(S.hmSW) {
      hotSum.write(fit(hmLine >> 6, hotBits), Fill(64, 1.U(1.W))) // words past the table are never stepped
      val last = matRow === 511.U || hmLine === (p.words - 1).U
      matRow := matRow + 1.U
      when(last) {
        materialised(HOT.U, grpOf(HOT, hmBase))
      }.otherwise {
        state := S.hmS
      }
    }
    // materialise a BAT validity group: every association of the group invalid (its summary bits cleared; the lines
    // are zero whatever DRAM holds). Safe: a page is then treated as written.
    is(S.bvS) {
      sumAddr := grp(opTab, opRow)
      sumRead := true.B
      state   := S.bvW
    }
    is(S.bvW) {
      val w = Wire(Vec(3, UInt(64.W)))
      w    := sumRd
      w(2) := 0.U
      sumWrite(grp(opTab, opRow), w)
      materialised(opTab, grp(opTab, opRow))
    }
  }
}
