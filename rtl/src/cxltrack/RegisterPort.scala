// SPDX-License-Identifier: Apache-2.0
package cxltrack

import chisel3._
import chisel3.util._

import scala.collection.immutable.SeqMap

/** One 32-bit value per named register (a [[Regs.Registers]] subset), e.g. the read-only registers' hardware values. */
class RegisterValues(names: Seq[String]) extends Record {
  val elements: SeqMap[String, UInt] = SeqMap(names.map(n => n -> UInt(32.W)): _*)
  def apply(name: String): UInt      = elements(name)
}

/**
 * The BAR0 register block on AXI4-Lite (docs/spec.md section 4): register file, window access, illegal-access
 * recording, interrupt status and MSI.
 *
 * The decode is table-driven from [[Regs.Registers]] (generated from the RDL's sw, onwrite, singlepulse and swmod): a
 * register whose writable fields are plain storage lives here (CTRL, SLOT_TIMEOUT, INT_ENABLE, CMD_ARG*; a write stores
 * the bits of `writeMask`); every other readable register is read from `values` (connected by name by the core) or is
 * owned here (INT_STATUS, ERR_STATUS, ERR_ADDR, ERR_COUNT); a write to a writable register that is not storage is an
 * action: write-1-to-clear bits (`w1cMask`), an event pop, a command launch.
 *
 * Illegal accesses are checked in the spec's order (section 4.2): decode (registers by `offset & ~3`, windows, existing
 * slots), direction, width and alignment, slot state; ERR_ADDR records a write's first enabled byte.
 *
 * One access at a time: an accepted access is decoded while the RESULT or slot line it may need is read (stage 1), then
 * executed and answered (stage 2). Window writes are held in stage 1 while a SLOT_QUERY copies the mask, so the copy is
 * one snapshot. No access is taken while the command engine clears RESULT after reset.
 */
class RegisterPort(p: CxlTrackParams) extends Module {
  val ownRegisters = Seq("INT_STATUS", "ERR_STATUS", "ERR_ADDR", "ERR_COUNT")
  val fromOutside  = Regs.Registers.filter(r => r.readable && !r.storage && !ownRegisters.contains(r.name))
  val io = IO(new Bundle {
    val axil   = Flipped(new AxiLite(p.liteAddrBits))
    val values = Input(new RegisterValues(fromOutside.map(_.name)))
    // storage registers, as software wrote them
    val ctrl        = Output(UInt(32.W))
    val slotTimeout = Output(UInt(32.W))
    val args        = Output(Vec(3, UInt(64.W)))
    // actions
    val launch   = Output(Valid(UInt(32.W))) // CMD_OP written while the engine is not busy
    val evqPop   = Output(Bool())
    val cmdBusy  = Input(Bool())
    val cmdReady = Input(Bool())             // RESULT cleared after reset
    val cmdDone  = Input(Bool())             // sets INT_STATUS.CMD_DONE
    // windows
    val resultRead = Output(Valid(UInt(6.W)))
    val resultLine = Input(Vec(64, UInt(8.W)))
    val slotWindow = Flipped(new SlotWindowPort(p.slotBits))
    val slotOpen   = Input(Vec(p.slots, Bool()))
    // event queue state and the ERROR event
    val evqCount    = Input(UInt(16.W))
    val evqOverflow = Input(Bool())
    val errorEvent  = Output(Valid(new EventRec))
    // interrupt
    val irq = Output(Bool())
    val msi = Output(Bool())
  })
  val axil = io.axil

  // ------------------------------------------------------------------ storage registers
  val storage: Map[String, UInt] =
    Regs.Registers.filter(_.storage).map(r => r.name -> RegInit(r.reset.U(32.W))).toMap
  io.ctrl        := storage("CTRL")
  io.slotTimeout := storage("SLOT_TIMEOUT")
  for (i <- 0 until 3) io.args(i) := Cat(storage(s"CMD_ARG${i}_HI"), storage(s"CMD_ARG${i}_LO"))

  // ------------------------------------------------------------------ error and interrupt status
  val ErrBits   = Regs.ERR_STATUS
  val IntBits   = Regs.INT_STATUS
  val intSticky = RegInit(0.U(3.W))    // CMD_DONE and ERROR bits; EVQ is a level
  val errStatus = RegInit(0.U(5.W))
  val errAddr   = RegInit(0.U(32.W))
  val errCount  = RegInit(0.U(32.W))
  val errReq    = WireDefault(false.B)
  val errBit    = WireDefault(0.U(3.W))
  val errW1c    = WireDefault(0.U(5.W))
  val intW1c    = WireDefault(0.U(3.W))
  val intWrite  = WireDefault(false.B) // INT_STATUS or INT_ENABLE written: re-arm the MSI
  val intStatus = intSticky | io.evqCount.orR.asUInt
  val own: Map[String, UInt] =
    Map("INT_STATUS" -> intStatus, "ERR_STATUS" -> errStatus, "ERR_ADDR" -> errAddr, "ERR_COUNT" -> errCount)
  def value(r: Regs.Reg): UInt =
    if (r.storage) storage(r.name) else own.getOrElse(r.name, io.values(r.name))

  // ------------------------------------------------------------------ access pipeline
  val stage   = RegInit(0.U(2.W)) // 0 idle, 1 decode + memory read, 2 execute + respond
  val isWrite = RegInit(false.B)
  val addr    = RegInit(0.U(p.liteAddrBits.W))
  val data    = RegInit(0.U(32.W))
  val strb    = RegInit(0.U(4.W))
  val bValid  = RegInit(false.B)
  val rValid  = RegInit(false.B)
  val rData   = RegInit(0.U(32.W))
  axil.bvalid                        := bValid
  axil.bresp                         := Axi.OKAY.U
  axil.rvalid                        := rValid
  axil.rresp                         := Axi.OKAY.U
  axil.rdata                         := rData
  when(bValid && axil.bready)(bValid := false.B)
  when(rValid && axil.rready)(rValid := false.B)
  val canTake = stage === 0.U && !bValid && !rValid && io.cmdReady
  val takeW   = canTake && axil.awvalid && axil.wvalid
  val takeR   = canTake && !takeW && axil.arvalid
  axil.awready := takeW
  axil.wready  := takeW
  axil.arready := takeR
  when(takeW) {
    stage   := 1.U
    isWrite := true.B
    addr    := axil.awaddr
    data    := axil.wdata
    strb    := axil.wstrb
  }
  when(takeR) {
    stage   := 1.U
    isWrite := false.B
    addr    := axil.araddr
  }
  val inSlotWindow = addr >= Regs.SLOT.OFFSET.U
  val slotIndex    = addr(15, 12)
  val slotExists   = slotIndex < p.slots.U
  val slot         = slotIndex(p.slotBits - 1, 0)
  val line         = addr(11, 6)
  val wordInLine   = addr(5, 2)
  val inResult     = addr >= Regs.RESULT.OFFSET.U && addr < (Regs.RESULT.OFFSET + Regs.RESULT.SIZE).U
  val aligned      = addr(1, 0) === 0.U
  // the offset an illegal access records (ERR_ADDR, the ERROR event): a write's first enabled byte (its word when no
  // byte is enabled), a read's address
  val accessOffset = Mux(isWrite, Cat(addr >> 2, Mux(strb.orR, PriorityEncoder(strb), 0.U(2.W))), addr)
  // registers decode by `offset & ~3`: a sub-word access inside a register is a width error, not a decode error
  def atRegister(r: Regs.Reg): Bool = (addr >> 2) === (r.offset >> 2).U
  io.resultRead.valid              := stage === 1.U
  io.resultRead.bits               := addr(11, 6)
  io.slotWindow.readLine.valid     := false.B
  io.slotWindow.readLine.bits.slot := slot
  io.slotWindow.readLine.bits.line := line
  io.slotWindow.slot               := slot
  io.slotWindow.line               := line
  io.slotWindow.word               := wordInLine
  io.slotWindow.write.valid        := false.B
  io.slotWindow.write.bits.data    := data
  io.slotWindow.write.bits.strb    := strb
  when(stage === 1.U && !(isWrite && inSlotWindow && io.slotWindow.writeHold)) {
    io.slotWindow.readLine.valid := inSlotWindow && slotExists
    stage                        := 2.U
  }

  def setErr(bit: Int): Unit = {
    errReq := true.B
    errBit := bit.U
  }
  val readable  = Regs.Registers.filter(_.readable)
  val writable  = Regs.Registers.filter(_.writable)
  val readHit   = readable.map(atRegister).reduce(_ || _)
  val readValue = Mux1H(readable.map(r => atRegister(r) -> value(r).pad(32)))
  val writeHit  = writable.map(atRegister).reduce(_ || _)
  io.launch.valid := false.B
  io.launch.bits  := data
  io.evqPop       := false.B

  when(stage === 2.U) {
    stage := 0.U
    when(isWrite) {
      bValid := true.B
      when(inSlotWindow) {
        when(!slotExists) {
          setErr(ErrBits.BAD_REG_LSB)
        }.elsewhen(!io.slotOpen(slot)) {
          setErr(ErrBits.SLOT_WRITE_LSB)
        }.otherwise {
          io.slotWindow.write.valid := true.B
        }
      }.elsewhen(inResult || !writeHit) { // RESULT and read-only registers: direction; reserved words: decode
        setErr(ErrBits.BAD_REG_LSB)
      }.elsewhen(!aligned || strb =/= 15.U) {
        setErr(ErrBits.BAD_WIDTH_LSB)
      }.otherwise {
        for (r <- writable) {
          when(atRegister(r)) {
            if (r.storage) storage(r.name) := data & r.writeMask.U(32.W)
            else
              r.name match {
                case "INT_STATUS" =>
                  intW1c   := data & r.w1cMask.U(32.W)
                  intWrite := true.B
                case "ERR_STATUS" => errW1c    := data & r.w1cMask.U(32.W)
                case "EVQ_POP"    => io.evqPop := (data & r.writeMask.U(32.W)).orR
                case "CMD_OP" =>
                  when(io.cmdBusy) {
                    setErr(ErrBits.CMD_OVERRUN_LSB)
                  }.otherwise {
                    io.launch.valid := true.B
                  }
                case other => throw new IllegalArgumentException(s"RegisterPort: no action for register $other")
              }
            if (r.name == "INT_ENABLE") intWrite := true.B
          }
        }
      }
    }.otherwise {
      rValid := true.B
      rData  := 0.U
      when(inSlotWindow) {
        when(!slotExists) {
          setErr(ErrBits.BAD_REG_LSB)
        }.elsewhen(!aligned) {
          setErr(ErrBits.BAD_WIDTH_LSB)
        }.otherwise {
          rData := io.slotWindow.readData
        }
      }.elsewhen(inResult) {
        when(!aligned) {
          setErr(ErrBits.BAD_WIDTH_LSB)
        }.otherwise {
          rData := Cat((0 until 4).reverse.map(k => io.resultLine(Cat(wordInLine, k.U(2.W)))))
        }
      }.elsewhen(!readHit) { // reserved words (decode) and the write-only EVQ_POP (direction)
        setErr(ErrBits.BAD_REG_LSB)
      }.elsewhen(!aligned) {
        setErr(ErrBits.BAD_WIDTH_LSB)
      }.otherwise {
        rData := readValue
      }
    }
  }

  // ------------------------------------------------------------------ recording errors, interrupt
  val errOH  = UIntToOH(errBit, 5)
  val newErr = errReq && (errStatus & errOH) === 0.U
  io.errorEvent.valid      := newErr
  io.errorEvent.bits.typ   := Regs.Event.ERROR.U
  io.errorEvent.bits.index := errBit
  io.errorEvent.bits.arg   := accessOffset
  when(errReq) {
    when(errStatus(3, 0) === 0.U)(errAddr := accessOffset)
    errCount                              := Mux(errCount.andR, errCount, errCount + 1.U) // saturates
  }
  val newOvf = io.evqOverflow && !errStatus(ErrBits.EVQ_OVERFLOW_LSB)
  errStatus := (errStatus & ~errW1c) | Mux(errReq, errOH, 0.U) |
    Mux(io.evqOverflow, (1 << ErrBits.EVQ_OVERFLOW_LSB).U, 0.U)
  intSticky := (intSticky & ~intW1c) | Mux(newErr || newOvf, (1 << IntBits.ERROR_LSB).U, 0.U) |
    Mux(io.cmdDone, (1 << IntBits.CMD_DONE_LSB).U, 0.U)
  val irqLine     = (intStatus & storage("INT_ENABLE")).orR
  val irqLinePrev = RegNext(irqLine, false.B)
  val rearm       = RegNext(intWrite, false.B)
  io.irq := irqLine
  io.msi := irqLine && (!irqLinePrev || rearm)
}
