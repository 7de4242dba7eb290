// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

/** The merge and query sequencer of [[SlotBuffer]]. */
object SlotSeq extends ChiselEnum {
  val sIdle, sMergeRead, sMergeWait, sMergeWrite, sMergeDrain, sQueryRead, sQueryWait = Value
}

/** What the command engine sees of one slot. */
class SlotView extends Bundle {
  val state = UInt(2.W)                            // SLOT_STATE
  val count = UInt(log2Ceil(Regs.SLOT.SIZE + 1).W) // valid bytes, 0..slot size
  val tag   = UInt(64.W)
}

/** SLOT_ALLOC: open `slot` (a FREE one) with `tag`. */
class SlotAlloc(slotBits: Int) extends Bundle {
  val slot = UInt(slotBits.W)
  val tag  = UInt(64.W)
}

/** SLOT_MERGE: write `slot` (an OPEN one) into `page`. */
class MergeStart(slotBits: Int, pageBits: Int) extends Bundle {
  val slot = UInt(slotBits.W)
  val page = UInt(pageBits.W)
}

/** SLOT_QUERY: the byte-valid bits of one 64-byte line of the slot. */
class MaskLine extends Bundle {
  val line = UInt(6.W)
  val mask = UInt(64.W)
}

/** The register port's access to the slot windows: a line read in its decode stage, a word read or write next cycle. */
class SlotWindowPort(slotBits: Int) extends Bundle {
  val readLine = Input(Valid(new Bundle { val slot = UInt(slotBits.W); val line = UInt(6.W) })) // decode stage
  val slot     = Input(UInt(slotBits.W)) // the access in its execute stage (the line read the cycle before)
  val line     = Input(UInt(6.W))
  val word     = Input(UInt(4.W))
  val readData = Output(UInt(32.W))      // the word's bytes, 0 where not valid
  val write = Input(Valid(new Bundle { val data = UInt(32.W); val strb = UInt(4.W) })) // to an OPEN slot
  val writeHold = Output(Bool()) // a SLOT_QUERY is copying the mask: hold window writes in decode
}

/**
 * The write-buffer merge slots (docs/spec.md section 6): per slot the state, tag, valid-byte count, timer and a buffer
 * of SLOT_SIZE bytes with a byte-valid mask; the merge engine that writes a slot into a page; the readout of a slot's
 * mask for SLOT_QUERY; SLOT_FULL, SLOT_TIMEOUT and MERGE_DONE events.
 *
 * Storage: one memory for every slot, 64 lines of 64 x (valid bit, byte) per slot, plus per slot a register of the
 * lines written since SLOT_ALLOC (so ALLOC and RELEASE clear the mask in one cycle: a line not marked there reads as
 * empty). The memory has one read port, shared by the register port (priority) and the merge/query sequencer.
 *
 * Commands arrive from the command engine already checked (a FREE slot to allocate, an OPEN slot to release or merge,
 * at most one per cycle). A merge walks the 64 lines: an empty line is skipped; a line with data becomes one
 * single-beat write with WSTRB = its valid mask (`mergeAw`/`mergeW`); once every such write has ended (its B, and the
 * table effects two cycles later) the slot is freed, MERGE_DONE is queued and `mergeDone` pulses. A query emits one
 * `queryWord` (line, its 64 valid bits) per line, the last with `queryDone`. Window writes of the register port commit
 * in its execute stage (it checks the slot is OPEN); the first time every byte is valid queues SLOT_FULL. Timeouts are
 * evaluated at ticks, in slot order.
 */
class SlotBuffer(p: CxlTrackParams) extends Module {
  val nSlots   = p.slots
  val slotBits = p.slotBits
  val io = IO(new Bundle {
    val view = Output(Vec(nSlots, new SlotView))
    // commands from the command engine
    val alloc      = Input(Valid(new SlotAlloc(slotBits)))
    val release    = Input(Valid(UInt(slotBits.W)))
    val mergeStart = Input(Valid(new MergeStart(slotBits, p.pageBits)))
    val mergeDone  = Output(Bool())
    val queryStart = Input(Valid(UInt(slotBits.W)))
    val queryWord  = Output(Valid(new MaskLine))
    val queryDone  = Output(Bool())
    // the merge's writes and their ends
    val mergeAw       = Decoupled(UInt(p.memAddrBits.W))
    val mergeW        = Decoupled(new LineWriteData)
    val mergeWriteEnd = Input(Bool())              // B of a merge write
    val mergePage     = Output(UInt(p.pageBits.W)) // the page those writes go to
    // register port
    val window = new SlotWindowPort(slotBits)
    // time
    val tick    = Input(Bool())
    val timeout = Input(UInt(32.W)) // SLOT_TIMEOUT.TICKS
    // events
    val fullEvent    = Output(Valid(new EventRec))
    val timeoutEvent = Output(Vec(nSlots, Valid(new EventRec)))
    val mergeEvent   = Output(Valid(new EventRec))
  })
  private def fit(x: UInt, w: Int): UInt = x.pad(w)(w - 1, 0)
  private def sat32(x: UInt): UInt       = Mux(x(32), "hffffffff".U(32.W), x(31, 0))
  private def event(typ: Int, v: Bool, index: UInt, arg: UInt): Valid[EventRec] = {
    val e = Wire(Valid(new EventRec))
    e.valid      := v
    e.bits.typ   := typ.U
    e.bits.index := index
    e.bits.arg   := arg
    e
  }

  val FREE      = Regs.SlotState.FREE.U(2.W)
  val OPEN      = Regs.SlotState.OPEN.U(2.W)
  val MERGING   = Regs.SlotState.MERGING.U(2.W)
  val FullCount = Regs.SLOT.SIZE

  val state        = RegInit(VecInit(Seq.fill(nSlots)(FREE)))
  val tag          = RegInit(VecInit(Seq.fill(nSlots)(0.U(64.W))))
  val count        = RegInit(VecInit(Seq.fill(nSlots)(0.U(log2Ceil(FullCount + 1).W))))
  val linesWritten = RegInit(VecInit(Seq.fill(nSlots)(0.U(64.W)))) // line holds data written since SLOT_ALLOC
  val age          = RegInit(VecInit(Seq.fill(nSlots)(0.U(32.W))))
  val fullReported = RegInit(VecInit(Seq.fill(nSlots)(false.B)))
  val timeoutDue   = RegInit(VecInit(Seq.fill(nSlots)(false.B)))   // SLOT_TIMEOUT queued for this allocation
  for (i <- 0 until nSlots) {
    io.view(i).state := state(i)
    io.view(i).count := count(i)
    io.view(i).tag   := tag(i)
  }

  // one memory for every slot: 64 lines of 64 x (valid bit, byte)
  val buffer                                 = SyncReadMem(nSlots * 64, Vec(64, UInt(9.W)))
  def lineAddr(slot: UInt, line: UInt): UInt = fit(slot * 64.U + line(5, 0), log2Ceil(nSlots * 64))
  val seqRead                                = WireDefault(false.B) // the merge/query sequencer wants a line
  val seqReadAddr                            = WireDefault(0.U(log2Ceil(nSlots * 64).W))
  val windowRead                             = io.window.readLine.valid
  val lineData = buffer.read(
    Mux(windowRead, lineAddr(io.window.readLine.bits.slot, io.window.readLine.bits.line), seqReadAddr),
    windowRead || seqRead
  )
  val seqReadGranted = seqRead && !windowRead

  // ------------------------------------------------------------------ timeouts
  for (i <- 0 until nSlots) {
    val ageNext = sat32(age(i) +& 1.U)
    val isOpen  = state(i) === OPEN
    when(io.tick && isOpen)(age(i) := ageNext)
    val fire = io.tick && isOpen && count(i) =/= FullCount.U && !timeoutDue(i) && io.timeout =/= 0.U &&
      ageNext >= io.timeout
    when(fire)(timeoutDue(i) := true.B)
    io.timeoutEvent(i)       := event(Regs.Event.SLOT_TIMEOUT, fire, i.U, tag(i))
  }

  // ------------------------------------------------------------------ commands
  when(io.alloc.valid) {
    val i = io.alloc.bits.slot
    state(i)        := OPEN
    tag(i)          := io.alloc.bits.tag
    count(i)        := 0.U
    linesWritten(i) := 0.U
    age(i)          := 0.U
    fullReported(i) := false.B
    timeoutDue(i)   := false.B
  }
  when(io.release.valid) {
    state(io.release.bits)        := FREE
    linesWritten(io.release.bits) := 0.U
    count(io.release.bits)        := 0.U
  }

  // ------------------------------------------------------------------ merge and query sequencer
  val seqState     = RegInit(SlotSeq.sIdle)
  val seqSlot      = RegInit(0.U(slotBits.W))
  val seqLine      = RegInit(0.U(6.W))
  val mergePage    = RegInit(0.U(p.pageBits.W))
  val mergeData    = RegInit(0.U(512.W))
  val mergeStrb    = RegInit(0.U(64.W))
  val mergeAwDone  = RegInit(false.B)
  val mergeWDone   = RegInit(false.B)
  val mergeWrites  = RegInit(0.U(8.W)) // merge writes accepted and not yet ended
  val lineHasData  = linesWritten(seqSlot)(seqLine)
  val lastLine     = seqLine === 63.U
  val lineValid    = VecInit(lineData.map(_(8))).asUInt
  val afterLastOne = Mux(lastLine, SlotSeq.sMergeDrain, SlotSeq.sMergeRead)

  when(io.mergeStart.valid) {
    state(io.mergeStart.bits.slot) := MERGING
    seqSlot                        := io.mergeStart.bits.slot
    mergePage                      := io.mergeStart.bits.page
    seqLine                        := 0.U
    mergeWrites                    := 0.U
    seqState                       := SlotSeq.sMergeRead
  }
  when(io.queryStart.valid) {
    seqSlot  := io.queryStart.bits
    seqLine  := 0.U
    seqState := SlotSeq.sQueryRead
  }

  // MERGE_DONE follows the events of the merge's last write end (the tables emit them two cycles after it)
  val mergeEndRecent = ShiftRegister(io.mergeWriteEnd, 1) || ShiftRegister(io.mergeWriteEnd, 2)
  val mergeDone      = seqState === SlotSeq.sMergeDrain && mergeWrites === 0.U && !mergeEndRecent
  io.mergeDone  := mergeDone
  io.mergePage  := mergePage
  io.mergeEvent := event(Regs.Event.MERGE_DONE, mergeDone, seqSlot, mergePage)

  io.mergeAw.valid       := false.B
  io.mergeAw.bits        := 0.U
  io.mergeW.valid        := false.B
  io.mergeW.bits.data    := 0.U
  io.mergeW.bits.strb    := 0.U
  io.queryWord.valid     := false.B
  io.queryWord.bits      := DontCare
  io.queryWord.bits.line := seqLine
  io.queryWord.bits.mask := 0.U
  io.queryDone           := false.B

  switch(seqState) {
    is(SlotSeq.sMergeRead) {
      when(!lineHasData) {
        seqLine                 := seqLine + 1.U
        when(lastLine)(seqState := SlotSeq.sMergeDrain)
      }.otherwise {
        seqRead                       := true.B
        seqReadAddr                   := lineAddr(seqSlot, seqLine)
        when(seqReadGranted)(seqState := SlotSeq.sMergeWait)
      }
    }
    is(SlotSeq.sMergeWait) {
      mergeData   := VecInit(lineData.map(_(7, 0))).asUInt
      mergeStrb   := lineValid
      mergeAwDone := false.B
      mergeWDone  := false.B
      when(lineValid =/= 0.U) {
        seqState := SlotSeq.sMergeWrite
      }.otherwise {
        seqLine  := seqLine + 1.U
        seqState := afterLastOne
      }
    }
    is(SlotSeq.sMergeWrite) {
      io.mergeAw.valid    := !mergeAwDone
      io.mergeW.valid     := !mergeWDone
      io.mergeAw.bits     := fit((mergePage << p.pageShift) + (seqLine << 6), p.memAddrBits)
      io.mergeW.bits.data := mergeData
      io.mergeW.bits.strb := mergeStrb
      val awDone = mergeAwDone || io.mergeAw.ready
      val wDone  = mergeWDone || io.mergeW.ready
      mergeAwDone := awDone
      mergeWDone  := wDone
      when(awDone && wDone) {
        seqLine  := seqLine + 1.U
        seqState := afterLastOne
      }
    }
    is(SlotSeq.sMergeDrain) {
      when(mergeDone) {
        state(seqSlot)        := FREE
        linesWritten(seqSlot) := 0.U
        count(seqSlot)        := 0.U
        seqState              := SlotSeq.sIdle
      }
    }
    is(SlotSeq.sQueryRead) {
      when(!lineHasData) {
        io.queryWord.valid     := true.B
        io.queryWord.bits.mask := 0.U
        seqLine                := seqLine + 1.U
        when(lastLine) {
          io.queryDone := true.B
          seqState     := SlotSeq.sIdle
        }
      }.otherwise {
        seqRead                       := true.B
        seqReadAddr                   := lineAddr(seqSlot, seqLine)
        when(seqReadGranted)(seqState := SlotSeq.sQueryWait)
      }
    }
    is(SlotSeq.sQueryWait) {
      io.queryWord.valid     := true.B
      io.queryWord.bits.mask := lineValid
      seqLine                := seqLine + 1.U
      seqState               := Mux(lastLine, SlotSeq.sIdle, SlotSeq.sQueryRead)
      io.queryDone           := lastLine
    }
  }
  when(io.mergeAw.valid && io.mergeAw.ready) {
    mergeWrites := mergeWrites + 1.U - io.mergeWriteEnd.asUInt
  }.otherwise {
    mergeWrites := mergeWrites - io.mergeWriteEnd.asUInt
  }

  // ------------------------------------------------------------------ window access (register port)
  val w               = io.window
  val windowLineValid = linesWritten(w.slot)(w.line)
  val windowBytes     = (0 until 4).map(k => lineData(Cat(w.word, k.U(2.W))))
  w.readData  := Cat(windowBytes.reverse.map(b => Mux(b(8) && windowLineValid, b(7, 0), 0.U(8.W))))
  w.writeHold := seqState === SlotSeq.sQueryRead || seqState === SlotSeq.sQueryWait
  val oldValid   = VecInit(windowBytes.map(b => b(8) && windowLineValid)).asUInt
  val newly      = w.write.bits.strb & ~oldValid
  val newCount   = count(w.slot) + PopCount(newly)
  val becameFull = w.write.valid && newCount === FullCount.U && !fullReported(w.slot)
  when(w.write.valid) {
    val data = Wire(Vec(64, UInt(9.W)))
    val mask = Wire(Vec(64, Bool()))
    for (b <- 0 until 64) {
      val strobed = w.word === (b / 4).U && w.write.bits.strb(b % 4)
      data(b) := Mux(strobed, Cat(1.U(1.W), w.write.bits.data((b % 4) * 8 + 7, (b % 4) * 8)), 0.U)
      mask(b) := strobed || !windowLineValid // a line first written since ALLOC starts empty
    }
    buffer.write(lineAddr(w.slot, w.line), data, mask)
    linesWritten(w.slot)                  := linesWritten(w.slot) | UIntToOH(w.line, 64)
    count(w.slot)                         := newCount
    when(becameFull)(fullReported(w.slot) := true.B)
  }
  io.fullEvent := event(Regs.Event.SLOT_FULL, becameFull, w.slot, tag(w.slot))
}
