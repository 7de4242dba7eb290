# SPDX-License-Identifier: Apache-2.0
"""Bench environment for the PCIe board wrapper (CxlTrackBoard): cocotbext-pcie's model of the
UltraScale+ PCIe block and its root complex on the PCIe side, a cocotbext-axi AXI RAM as the
DDR4 controller, three clocks (PCIe 250 MHz from the model, core 200 MHz, DDR 300 MHz).

Everything the host does goes through the root complex: configuration cycles, memory-window
accesses to function 0's BAR0, register accesses to function 1's BAR0, the MSI-X table in
function 1's BAR2, function-level reset through the PCIe capability. The bench drives only what
the board drives too: the tick (`dbg_tick`, the board ties time on instead) and the FLR handshake
that cocotbext-pcie 0.2.16 leaves out (`cfg_flr_in_process`, PG213); it reads `core_idle` (a LED
on the board) to know that the engines have settled.

BoardBench offers the register/command interface of tb.env.Bench, so tb.env.Scoreboard drives it
against the reference model unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.handle import Immediate
from cocotb.triggers import ClockCycles, Event, FallingEdge, First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiRam, AxiStreamBus
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.core.caps import PciCapId
from cocotbext.pcie.core.tlp import CplStatus, TlpType
from cocotbext.pcie.xilinx.us import UltraScalePlusPcieDevice

from cxltrack import config, regs
from cxltrack.model import Device

from ..env import OFF, CommandPort, pause_gen, val

LINE = 64
# Longest wait for a request's completions: far above any request of these benches (a read
# queued behind a window of stalled DDR writes takes a few microseconds)
CPL_TIMEOUT_NS = 200_000


def board_info() -> dict[str, int]:
    path = os.environ.get("CXLTRACK_BOARD_JSON")
    assert path, "CXLTRACK_BOARD_JSON is not set (run through sim/test_rtl.py)"
    info: dict[str, int] = json.loads(Path(path).read_text())
    return info


class CompletionChecker:
    """Checks every completion the device returns to a memory read against PCIe's rules (the
    root complex model only looks at the data): status, requester id and tag, the completer's
    function, byte count and lower address of each completion in turn, DWORD count, and that
    every completion but the last ends on a 64-byte read completion boundary."""

    def __init__(self, rc: Any, dev: Any) -> None:
        self.errors: list[str] = []
        self.checked = 0
        self.dev = dev
        self._orig = rc.perform_nonposted_operation
        rc.perform_nonposted_operation = self._perform

    async def _perform(self, req: Any, timeout: int = 0, timeout_unit: str = "ns") -> Any:
        # the root complex model waits forever for a completion by default: a lost or malformed
        # completion would hang the bench instead of failing it
        if not timeout:
            timeout, timeout_unit = CPL_TIMEOUT_NS, "ns"
        cpls = await self._orig(req, timeout, timeout_unit)
        if req.fmt_type in (TlpType.MEM_READ, TlpType.MEM_READ_64):
            self._check(req, cpls)
        assert cpls, f"no completion within {timeout} {timeout_unit} for {req}"
        return cpls

    def _check(self, req: Any, cpls: list[Any]) -> None:
        self.checked += 1
        where = f"read {req.address:#x} len {req.length} fbe {req.first_be:#x} lbe {req.last_be:#x}"
        fn = next((f.pcie_id.function for f in self.dev.functions if f.match_bar(req.address)), None)
        remaining = req.get_be_byte_count()
        addr = req.address + req.get_first_be_offset()
        if not cpls:
            self.errors.append(f"{where}: no completion")
        for k, c in enumerate(cpls):
            last = k == len(cpls) - 1
            if c.status != CplStatus.SC:
                self.errors.append(f"{where}: completion {k} status {c.status}")
                return
            if (c.requester_id, c.tag) != (req.requester_id, req.tag):
                self.errors.append(f"{where}: completion {k} for {c.requester_id}/{c.tag}")
            if c.completer_id.function != fn:
                self.errors.append(f"{where}: completion {k} from function {c.completer_id.function}, not {fn}")
            if c.byte_count != remaining:
                self.errors.append(f"{where}: completion {k} byte count {c.byte_count}, expected {remaining}")
            if c.lower_address != addr & 0x7F:
                self.errors.append(
                    f"{where}: completion {k} lower address {c.lower_address:#x}, expected {addr & 0x7F:#x}"
                )
            span = c.length * 4 - (addr & 3)  # bytes this completion carries from addr on
            if not last and (addr + span) % LINE:
                self.errors.append(f"{where}: completion {k} ends at {addr + span:#x}, not on the 64-byte RCB")
            if last and span < remaining:
                self.errors.append(f"{where}: completions end {remaining - span} bytes short")
            remaining -= span
            addr += span


class BoardBench(CommandPort):
    """One CxlTrackBoard with the PCIe model, the root complex and the DDR model."""

    def __init__(self, dut: Any, cfg_name: str = "small") -> None:
        self.dut = dut
        self.cfg = config.named(cfg_name)
        self.info = board_info()
        assert self.info["capacity_bytes"] == self.cfg.capacity_bytes, "board.json and the configuration differ"
        # BoardMain builds the core without its DMA port (CAP_DMA = 0, docs/rtl-notes.md "DMA harvest")
        self.model = Device(self.cfg, dma_addr_bits=0)
        self.msi_count = 0
        self.msi_event = Event()
        self.flr_count = 0
        self.decerr_seen = 0

        dut.core_reset.value = Immediate(1)
        dut.ddr_reset.value = Immediate(1)
        dut.dbg_time_en.value = 0
        dut.dbg_tick.value = 0
        dut.cfg_flr_in_process.value = 0
        cocotb.start_soon(Clock(dut.core_clk, 5, unit="ns").start())  # type: ignore[arg-type]
        cocotb.start_soon(Clock(dut.ddr_clk, 3332, unit="ps").start())  # type: ignore[arg-type]

        info = self.info
        self.rc = RootComplex()
        self.rc.max_payload_size = 0x1  # 256 bytes: write TLPs span several lines
        self.rc.max_read_request_size = 0x2  # 512 bytes
        self.dev = UltraScalePlusPcieDevice(
            pcie_generation=3,
            pcie_link_width=16,
            user_clk_frequency=250e6,
            alignment="dword",
            cq_straddle=False,
            cc_straddle=False,
            rq_straddle=False,
            rc_straddle=False,
            rc_4tlp_straddle=False,
            pf_count=2,
            max_payload_size=1024,
            enable_client_tag=True,
            enable_extended_tag=True,
            enable_parity=False,
            enable_rx_msg_interface=False,
            enable_sriov=False,
            enable_extended_configuration=False,
            pf0_msi_enable=False,
            pf1_msi_enable=False,
            pf0_msix_enable=False,
            pf1_msix_enable=True,
            pf1_msix_table_size=info["fn1_msix_vectors"] - 1,
            pf1_msix_table_bir=info["fn1_msix_table_bar"],
            pf1_msix_table_offset=info["fn1_msix_table_offset"],
            pf1_msix_pba_bir=info["fn1_msix_table_bar"],
            pf1_msix_pba_offset=info["fn1_msix_pba_offset"],
            user_clk=dut.user_clk,
            user_reset=dut.user_reset,
            cq_bus=AxiStreamBus.from_prefix(dut, "s_axis_cq"),
            cc_bus=AxiStreamBus.from_prefix(dut, "m_axis_cc"),
            rq_bus=AxiStreamBus.from_prefix(dut, "m_axis_rq"),
            rc_bus=AxiStreamBus.from_prefix(dut, "s_axis_rc"),
            pcie_cq_np_req=dut.pcie_cq_np_req,
            cfg_function_status=dut.cfg_function_status,
            cfg_interrupt_msix_enable=dut.cfg_interrupt_msix_enable,
            cfg_interrupt_msix_mask=dut.cfg_interrupt_msix_mask,
            cfg_interrupt_msix_address=dut.cfg_interrupt_msix_address,
            cfg_interrupt_msix_data=dut.cfg_interrupt_msix_data,
            cfg_interrupt_msix_int=dut.cfg_interrupt_msix_int,
            cfg_interrupt_msix_sent=dut.cfg_interrupt_msix_sent,
            cfg_interrupt_msix_fail=dut.cfg_interrupt_msix_fail,
            cfg_interrupt_msi_function_number=dut.cfg_interrupt_msi_function_number,
        )
        f0, f1 = self.dev.functions[0], self.dev.functions[1]
        # the identity the Vivado flow gives the IP (board.tcl), from the same board.json
        f0.vendor_id = f1.vendor_id = info["pci_vendor_id"]
        f0.device_id, f0.class_code = info["fn0_device_id"], info["fn0_class"]
        f1.device_id, f1.class_code = info["fn1_device_id"], info["fn1_class"]
        f0.configure_bar(0, 1 << info["fn0_bar0_log2"], ext=True, prefetch=True)
        f1.configure_bar(0, 1 << info["fn1_bar0_log2"], ext=True)
        f1.configure_bar(2, 1 << info["fn1_bar2_log2"], ext=True)
        f1.pcie_cap.function_level_reset_capability = True
        f1.pcie_cap.initiate_function_level_reset = self._flr
        self.rc.make_port().connect(self.dev)
        self.cpl_check = CompletionChecker(self.rc, self.dev)
        # enumeration probes absent devices and functions: the models' warnings about those are expected
        for name in ("cocotb.pcie", "cocotb.pcie.RootComplex"):
            logging.getLogger(name).setLevel(logging.ERROR)

        self.ram = AxiRam(
            AxiBus.from_prefix(dut, "m_axi_ddr"), dut.ddr_clk, dut.ddr_reset, size=self.cfg.capacity_bytes
        )
        self.fn0: Any = None
        self.fn1: Any = None

    def pcie_backpressure(self, rng: random.Random, p: float) -> None:
        """Random gaps on the PCIe side: the block pauses between request beats (CQ) and stops
        taking completion beats (CC)."""
        self.dev.cq_source.set_pause_generator(pause_gen(random.Random(rng.random()), p))
        self.dev.cc_sink.set_pause_generator(pause_gen(random.Random(rng.random()), p))

    def ddr_backpressure(self, rng: random.Random, p_write: float, p_read: float) -> None:
        """Random stalls on the DDR side (p = stall probability per cycle and channel)."""
        for ifc, p in ((self.ram.write_if, p_write), (self.ram.read_if, p_read)):
            for ch in ("aw_channel", "w_channel", "b_channel", "ar_channel", "r_channel"):
                if hasattr(ifc, ch):
                    getattr(ifc, ch).set_pause_generator(pause_gen(random.Random(rng.random()), p))

    def check_clean(self) -> None:
        assert self.cpl_check.checked or not self.fn0, "no read completion was checked"
        assert not self.cpl_check.errors, "\n".join(self.cpl_check.errors[:20])

    # ------------------------------------------------------------------ bring-up
    async def start(self) -> None:
        """Reset the board, enumerate, enable both functions and MSI-X (what the driver's probe does)."""
        await ClockCycles(self.dut.core_clk, 8)
        self.dut.core_reset.value = 0
        self.dut.ddr_reset.value = 0
        await self.rc.enumerate()
        self.fn0 = self.rc.find_device(self.dev.functions[0].pcie_id)
        self.fn1 = self.rc.find_device(self.dev.functions[1].pcie_id)
        await self.fn0.enable_device()
        await self.fn1.enable_device()
        await self.fn1.set_master()
        assert await self.fn1.alloc_irq_vectors(1, 1) == 1, "MSI-X did not come up"
        self.fn1.request_irq(0, self._on_msi)
        self.mem = self.fn0.bar_window[0]
        self.regs = self.fn1.bar_window[0]
        self.msix = self.fn1.bar_window[2]
        await self.wait_idle()

    async def _on_msi(self) -> None:
        self.msi_count += 1
        self.msi_event.set()

    async def _flr(self) -> None:
        """What the PCIe block does on a function-level reset of function 1 (PG213): the function's
        configuration returns to its reset state, cfg_flr_in_process[1] rises and stays up until
        the user logic answers on cfg_flr_done[1]."""
        f1 = self.dev.functions[1]
        f1.memory_space_enable = False
        f1.bus_master_enable = False
        f1.msix_cap.msix_enable = False
        f1.msix_cap.msix_function_mask = False
        self.dut.cfg_flr_in_process.value = 2
        for _ in range(1_000_000):
            await RisingEdge(self.dut.user_clk)
            if val(self.dut.cfg_flr_done) & 2:
                break
        else:
            raise TimeoutError("cfg_flr_done[1] never came")
        self.dut.cfg_flr_in_process.value = 0
        self.flr_count += 1

    async def flr(self) -> None:
        """Function-level reset of function 1 as the kernel does it (pci_reset_function): FLR, then
        restore the command register and MSI-X (the table itself is reset by the device)."""
        cap = self.fn1.get_capability_offset(PciCapId.EXP)
        assert cap is not None
        devctl = await self.fn1.config_read_word(cap + 8)
        await self.fn1.config_write_word(cap + 8, devctl | 1 << 15)
        await self.fn1.config_write_word(0x04, 0x6)  # memory space, bus master
        self.fn1.msix_enabled = False
        assert await self.fn1.msix_capability_init(1) == 0
        self.decerr_seen = 0
        self.model.reset()
        await self.wait_idle()

    async def reset(self) -> None:
        """The device reset of the vector Target protocol: a function-level reset of function 1
        (docs/spec.md section 11), as the QEMU model's Target does."""
        await self.flr()

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int = 0
    ) -> list[str]:
        """Launch a command (its register writes) while memory writes go out: each write leaves
        after a random delay (seeded by schedule) spread across the launch. The link orders the
        requests; writes behind the launch race the running command inside the core."""
        rng = random.Random(schedule * 7919 + len(mem_writes))
        span = 60 * len(reg_writes) + 100
        delays = [rng.randrange(span) for _ in mem_writes]

        async def one(i: int, addr: int, data: bytes) -> str:
            await ClockCycles(self.dut.user_clk, delays[i] + 1)
            await self.mem.write(addr, data)
            return "okay"

        tasks = [cocotb.start_soon(one(i, a, d)) for i, (a, d) in enumerate(mem_writes)]
        for off, v in reg_writes:
            await self.reg_write(off, v)
        out = [await t for t in tasks]
        await self.decerr_since()  # keep the decode-error baseline current
        return out

    # ------------------------------------------------------------------ host accesses
    async def fence(self) -> None:
        """A register read: its completion comes after every earlier write took effect."""
        await self.regs.read(OFF["ID"], 4)

    async def reg_read(self, offset: int, size: int = 4) -> int:
        data = await self.regs.read(offset, size)
        return int.from_bytes(data, "little")

    async def reg_write(self, offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        full = (1 << size) - 1
        strobe = full if strobe is None else strobe & full
        raw = (value & ((1 << 8 * size) - 1)).to_bytes(size, "little")
        # one write per contiguous run of strobes, as tb.env.Bench does on AXI4-Lite
        i = 0
        while i < size:
            if not strobe >> i & 1:
                i += 1
                continue
            j = i
            while j < size and strobe >> j & 1:
                j += 1
            await self.regs.write(offset + i, raw[i:j])
            i = j

    async def decerr_since(self) -> bool:
        """Whether a memory request got a decode error since the last call (STAT_DECERR moved)."""
        now = await self.reg_read(OFF["STAT_DECERR"])
        moved = now != self.decerr_seen
        self.decerr_seen = now
        return moved

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        data = await self.mem.read(addr, size)
        return ("decerr" if await self.decerr_since() else "okay"), int.from_bytes(data, "little")

    async def mem_write(self, addr: int, data: bytes) -> str:
        await self.mem.write(addr, data)
        return "decerr" if await self.decerr_since() else "okay"

    # ------------------------------------------------------------------ the core's time and idleness
    async def wait_idle(self, limit: int = 2_000_000) -> None:
        for _ in range(limit):
            await RisingEdge(self.dut.core_clk)
            if val(self.dut.core_idle):
                return
        raise TimeoutError("engines did not go idle")

    async def settle(self) -> None:
        await self.fence()
        await ClockCycles(self.dut.core_clk, 2)
        await self.wait_idle()
        await ClockCycles(self.dut.core_clk, 2)

    async def tick(self, n: int = 1) -> None:
        await self.fence()
        for _ in range(n):
            await FallingEdge(self.dut.core_clk)
            self.dut.dbg_tick.value = 1
            await FallingEdge(self.dut.core_clk)
            self.dut.dbg_tick.value = 0
        await ClockCycles(self.dut.core_clk, 2)

    # ------------------------------------------------------------------ commands: CommandPort.command
    async def result(self, nbytes: int) -> bytes:
        """The RESULT window in one read request (completions of up to 64 bytes each)."""
        return bytes(await self.regs.read(regs.RESULT, nbytes))

    async def wait_msi(self, timeout_ns: int = 200_000) -> bool:
        if not self.msi_event.is_set():
            await First(self.msi_event.wait(), Timer(timeout_ns, "ns"))
        got = self.msi_event.is_set()
        self.msi_event.clear()
        return got
