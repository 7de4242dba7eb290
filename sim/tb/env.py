# SPDX-License-Identifier: Apache-2.0
"""Bench environment for CxlTrackCore: clock/reset, cocotbext-axi masters and the DDR model,
a Target (the interface cxltrack.vectors.replay drives), a model mirror fed by monitors on the
DUT's ports, AXI protocol checks and functional coverage.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.handle import Immediate
from cocotb.triggers import ClockCycles, FallingEdge, Lock, RisingEdge
from cocotbext.axi import AxiBus, AxiMaster, AxiRam, AxiResp

from cxltrack import config, regs
from cxltrack.model import Device, MemResp
from cxltrack.model.memory import HostMemory

from .seeds import seed_env_name

R = regs.REGISTERS
OFF = {name: r.offset for name, r in R.items()}
OP = regs.Op
LINE = 64

COVERAGE: Counter[str] = Counter()


def cover(point: str, n: int = 1) -> None:
    COVERAGE[point] += n


def dump_coverage(test: str) -> None:
    out = os.environ.get("CXLTRACK_COVERAGE_DIR")
    if not out:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"{test}.json").write_text(json.dumps(dict(COVERAGE), indent=1, sort_keys=True))


def seed_from_env(name: str) -> int:
    """The test's seed: its own variable (a failed run's rerun, sim/rtlsim.py), CXLTRACK_SEED, or a fresh one."""
    raw = os.environ.get(seed_env_name(name)) or os.environ.get("CXLTRACK_SEED")
    seed = int(raw) if raw else random.SystemRandom().randrange(1 << 31)
    cocotb.log.info("%s: seed %d (rerun with CXLTRACK_SEED=%d)", name, seed, seed)
    print(f"SEED {name} {seed}", flush=True)
    return seed


def pause_gen(rng: random.Random, p: float) -> Iterator[bool]:
    while True:
        yield rng.random() < p


def val(sig: Any) -> int:
    """Integer value of a signal; X/Z (Icarus before the synchronous reset) reads as 0."""
    try:
        return int(sig.value)
    except ValueError:
        return 0


class ProtocolChecker:
    """AXI rules on every channel of both AXI4 ports: once VALID is high, it and the payload stay
    stable until READY; per-ID ordering of responses on the CXL side."""

    def __init__(self, dut: Any, prefix: str, channels: Mapping[str, Sequence[str]]) -> None:
        self.errors: list[str] = []
        self.dut = dut
        self.chans = {
            ch: (
                getattr(dut, f"{prefix}_{ch}valid"),
                getattr(dut, f"{prefix}_{ch}ready"),
                [getattr(dut, f"{prefix}_{ch}{s}") for s in sigs],
            )
            for ch, sigs in channels.items()
        }
        self.prefix = prefix
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        held: dict[str, tuple[int, ...] | None] = {ch: None for ch in self.chans}
        while True:
            await RisingEdge(self.dut.clock)
            if val(self.dut.reset):
                held = {ch: None for ch in self.chans}
                continue
            for ch, (v, r, sigs) in self.chans.items():
                valid, ready = val(v), val(r)
                payload = tuple(val(s) for s in sigs)
                prev = held[ch]
                if prev is not None:
                    if not valid:
                        self.errors.append(f"{self.prefix}_{ch}valid dropped before ready")
                    elif payload != prev:
                        self.errors.append(f"{self.prefix}_{ch} payload changed while stalled")
                held[ch] = payload if valid and not ready else None


AXI_CHANNELS = {
    "aw": ("id", "addr", "len", "size", "burst"),
    "w": ("data", "strb", "last"),
    "b": ("id", "resp"),
    "ar": ("id", "addr", "len", "size", "burst"),
    "r": ("id", "data", "resp", "last"),
}


class ModelMirror:
    """Feeds the reference model every memory request the DUT accepts, in the order the DUT
    sees them (per clock: AR accept, AW accept, then the B forwarded), and checks every read
    response against the model's memory and every response code against the model's.

    A read that races a write to its line may return the line before or after that write: the
    read's data must be the model's line at its accept, with any write in flight then applied, or
    the line after a write that ended while the read was out (a CXL host orders neither)."""

    def __init__(self, dut: Any, model: Device) -> None:
        self.dut = dut
        self.model = model
        self.errors: list[str] = []
        # per ID: address, model response, and the values the read may return
        self.reads: dict[int, deque[tuple[int, MemResp, list[int]]]] = {}
        self.aw: deque[tuple[int, int, Any]] = deque()  # (id, addr, token or None) waiting for W
        self.w_beats: deque[tuple[int, int]] = deque()
        self.w_done: deque[tuple[int, int]] = deque()
        self.writes: dict[int, deque[tuple[int, Any, bytes, bytes]]] = {}
        self.active = True
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        d = self.dut
        while True:
            await RisingEdge(d.clock)
            if val(d.reset) or not self.active:
                continue
            if val(d.s_axi_arvalid) and val(d.s_axi_arready):
                addr = val(d.s_axi_araddr)
                resp, _ = self.model.mem_read(addr, 1)
                self.reads.setdefault(val(d.s_axi_arid), deque()).append((addr, resp, self._line_values(addr)))
                cover("mem:read" if resp == MemResp.OKAY else "mem:read_decerr")
            if val(d.s_axi_awvalid) and val(d.s_axi_awready):
                addr = val(d.s_axi_awaddr)
                token = self.model.write_begin(addr & ~(LINE - 1), 1)
                self.aw.append((val(d.s_axi_awid), addr, token))
                cover("mem:write" if token else "mem:write_decerr")
            if val(d.s_axi_wvalid) and val(d.s_axi_wready):
                self.w_beats.append((val(d.s_axi_wdata), val(d.s_axi_wstrb)))
                if val(d.s_axi_wlast):
                    self.w_done.append(self.w_beats[0])
                    self.w_beats.clear()
            while self.aw and self.w_done:  # W may complete before its AW is accepted
                wid, addr, token = self.aw.popleft()
                data, strb = self.w_done.popleft()
                base = addr & ~(LINE - 1)
                raw = data.to_bytes(LINE, "little")
                en = bytes((strb >> i) & 1 for i in range(LINE))
                self.writes.setdefault(wid, deque()).append((base, token, raw, en))
            if val(d.s_axi_bvalid) and val(d.s_axi_bready):
                self._on_b(val(d.s_axi_bid), val(d.s_axi_bresp))
            if val(d.s_axi_rvalid) and val(d.s_axi_rready):
                self._on_r(val(d.s_axi_rid), val(d.s_axi_rdata), val(d.s_axi_rresp), val(d.s_axi_rlast))

    def _line(self, base: int) -> bytes:
        return bytes(self.model.mem.read(base, LINE))

    def _line_values(self, addr: int) -> list[int]:
        """The model's line now, then with each write to it in flight (W seen, B not yet) applied in turn."""
        base = addr & ~(LINE - 1)
        line = bytearray(self._line(base))
        values = [int.from_bytes(line, "little")]
        for wq in self.writes.values():
            for wbase, token, raw, en in wq:
                if wbase == base and token is not None:
                    for i in range(LINE):
                        if en[i]:
                            line[i] = raw[i]
                    values.append(int.from_bytes(line, "little"))
        return values

    def _on_b(self, bid: int, bresp: int) -> None:
        wq = self.writes.get(bid)
        if not wq:
            self.errors.append(f"B id {bid} without a write")
            return
        base, token, raw, en = wq.popleft()
        want = 0 if token else 3
        if bresp != want:
            self.errors.append(f"B resp {bresp} at {base:#x}, model says {want}")
        if token is not None:
            self.model.write_end(token, raw, en)
            after = None
            for rq in self.reads.values():
                for addr, _, values in rq:
                    if addr & ~(LINE - 1) == base:
                        after = int.from_bytes(self._line(base), "little") if after is None else after
                        values.append(after)

    def _on_r(self, rid: int, rdata: int, rresp: int, rlast: int) -> None:
        rq = self.reads.get(rid)
        if not rq:
            self.errors.append(f"R id {rid} without a read")
            return
        addr, resp, values = rq[0]
        if rlast:
            rq.popleft()
        if resp == MemResp.OKAY:
            if rdata not in values or rresp != 0:
                want = " or ".join(f"{v:#x}" for v in dict.fromkeys(values))
                self.errors.append(f"read {addr:#x}: resp {rresp} data {rdata:#x} differ from the model {want}")
            elif rdata != values[-1] or len(set(values)) > 1:
                cover("mem:read_raced")
        elif rresp != 3 or rdata != 0:
            self.errors.append(f"read {addr:#x}: expected DECERR with zero data")


class LiteMaster:
    """AXI4-Lite master of the register port, one access at a time. A write is one transaction to
    its aligned 32-bit word with the strobes given (as a PCIe-to-AXI4-Lite bridge delivers a
    sub-word or strobed write: WSTRB, not a shorter access); a read is one transaction at the
    address as issued (AXI4-Lite reads carry no size)."""

    def __init__(self, dut: Any) -> None:
        self.dut = dut
        self.lock = Lock()
        for name in ("awvalid", "wvalid", "bready", "arvalid", "rready", "awprot", "arprot"):
            getattr(dut, f"s_axil_{name}").value = 0

    def _set(self, name: str, value: int) -> None:
        getattr(self.dut, f"s_axil_{name}").value = value

    def _get(self, name: str) -> int:
        return val(getattr(self.dut, f"s_axil_{name}"))

    async def write(self, addr: int, data: int, strb: int) -> None:
        clk = self.dut.clock
        async with self.lock:
            await FallingEdge(clk)
            self._set("awaddr", addr)
            self._set("wdata", data)
            self._set("wstrb", strb)
            self._set("awvalid", 1)
            self._set("wvalid", 1)
            self._set("bready", 1)
            aw_done = w_done = False
            while not (aw_done and w_done):
                await RisingEdge(clk)
                aw_done = aw_done or bool(self._get("awready"))
                w_done = w_done or bool(self._get("wready"))
                await FallingEdge(clk)
                if aw_done:
                    self._set("awvalid", 0)
                if w_done:
                    self._set("wvalid", 0)
            while True:
                await RisingEdge(clk)
                if self._get("bvalid"):
                    break
            await FallingEdge(clk)
            self._set("bready", 0)

    async def read(self, addr: int) -> int:
        clk = self.dut.clock
        async with self.lock:
            await FallingEdge(clk)
            self._set("araddr", addr)
            self._set("arvalid", 1)
            self._set("rready", 1)
            while True:
                await RisingEdge(clk)
                if self._get("arready"):
                    break
            await FallingEdge(clk)
            self._set("arvalid", 0)
            while True:
                await RisingEdge(clk)
                if self._get("rvalid"):
                    data = self._get("rdata")
                    break
            await FallingEdge(clk)
            self._set("rready", 0)
            return data


def command_writes(
    op: int, args: Sequence[int], clear: bool, decay: bool, rsvd: int, dma: bool = False, lst: bool = False
) -> list[tuple[int, int]]:
    """The register writes (offset, value) that launch a command: its arguments in 32-bit
    halves, then CMD_OP (spec section 5)."""
    writes = []
    for i, a in enumerate(args):
        writes += [(OFF[f"CMD_ARG{i}_LO"], a & 0xFFFFFFFF), (OFF[f"CMD_ARG{i}_HI"], a >> 32 & 0xFFFFFFFF)]
    f = R["CMD_OP"]
    op_value = f.field("OP").put(op) | f.field("CLEAR").put(int(clear)) | f.field("DECAY").put(int(decay))
    op_value |= f.field("DMA").put(int(dma)) | f.field("LIST").put(int(lst)) | f.field("RSVD").put(rsvd)
    writes.append((OFF["CMD_OP"], op_value))
    return writes


class HostPort:
    """The host side of the core's DMA port (h_axi, AXI4 write): host memory by bus address
    (cxltrack.model.memory.HostMemory, with its fill pattern and fault ranges), random READY on AW
    and W and random delays of B. A burst that touches a fault range stores nothing and is
    answered SLVERR (DECERR when `decerr`). Checks the port's rules: W only for an accepted AW,
    WLAST on a burst's last beat only, INCR bursts of 64-byte beats within one 4 KiB page."""

    def __init__(self, dut: Any, host: HostMemory, rng: random.Random | None = None) -> None:
        self.dut, self.host = dut, host
        self.rng = rng or random.Random(0)
        self.p_stall = 0.0
        self.b_delay = (0, 0)
        self.decerr = False
        self.errors: list[str] = []
        self.writes = 0  # W beats stored
        self.outstanding = 0  # bursts accepted on AW and not yet answered on B
        self.log: list[tuple[int, int]] = []  # (addr, beats) of every AW, in order
        cocotb.start_soon(self._run())

    def _get(self, n: str) -> int:
        return val(getattr(self.dut, f"h_axi_{n}"))

    def _set(self, n: str, v: int) -> None:
        getattr(self.dut, f"h_axi_{n}").value = v

    async def _run(self) -> None:
        bursts: deque[list[int]] = deque()  # [addr, beats, beat, faulted]
        bq: deque[tuple[int, int]] = deque()  # (cycle, resp)
        cycle = 0
        self._set("awready", 0)
        self._set("wready", 0)
        self._set("bvalid", 0)
        self._set("bresp", 0)
        self._set("bid", 0)
        while True:
            await RisingEdge(self.dut.clock)
            cycle += 1
            if val(self.dut.reset):
                bursts.clear()
                bq.clear()
                self.outstanding = 0
                self._set("bvalid", 0)
                continue
            if self._get("awvalid") and self._get("awready"):
                a, n = self._get("awaddr"), self._get("awlen") + 1
                if self._get("awsize") != 6 or self._get("awburst") != 1 or (a & 0xFFF) + 64 * n > 4096:
                    self.errors.append(f"h_axi: bad AW {a:#x} x{n}")
                bursts.append([a, n, 0, int(self.host.faulted(a, 64 * n))])
                self.outstanding += 1
                self.log.append((a, n))
            if self._get("wvalid") and self._get("wready"):
                if not bursts:
                    self.errors.append("h_axi: W beat before its AW")
                else:
                    b = bursts[0]
                    last = b[2] == b[1] - 1
                    if self._get("wlast") != int(last):
                        self.errors.append(f"h_axi: WLAST {self._get('wlast')} on beat {b[2]} of {b[1]}")
                    if not b[3]:
                        data, strb = self._get("wdata"), self._get("wstrb")
                        at = b[0] + 64 * b[2]
                        for i in range(64):
                            if strb >> i & 1:
                                self.host.store(at + i, bytes([data >> 8 * i & 0xFF]))
                        self.writes += 1
                    b[2] += 1
                    if last:
                        bursts.popleft()
                        resp = (3 if self.decerr else 2) if b[3] else 0
                        bq.append((cycle + self.rng.randint(*self.b_delay), resp))
            if self._get("bvalid") and self._get("bready"):
                bq.popleft()
                self.outstanding -= 1
            stall = self.p_stall
            self._set("awready", int(self.rng.random() >= stall))
            self._set("wready", int(bool(bursts) or self.rng.random() < 0.5) and int(self.rng.random() >= stall))
            if bq and bq[0][0] <= cycle and self.rng.random() >= stall:
                self._set("bvalid", 1)
                self._set("bresp", bq[0][1])
            else:
                self._set("bvalid", 0)


class CommandPort:
    """Runs a command through a register port: the launch writes, CMD_STATUS polled until not
    busy, then the code and both results. The core's and the board's benches both inherit it
    and supply the port (reg_read / reg_write)."""

    async def reg_read(self, offset: int, size: int = 4) -> int:
        raise NotImplementedError

    async def reg_write(self, offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        raise NotImplementedError

    async def command(
        self,
        op: int,
        *args: int,
        clear: bool = False,
        decay: bool = False,
        rsvd: int = 0,
        wait: bool = True,
        dma: bool = False,
        lst: bool = False,
    ) -> tuple[int, int, int]:
        for off, v in command_writes(op, args, clear, decay, rsvd, dma, lst):
            await self.reg_write(off, v)
        if not wait:
            return -1, 0, 0
        while True:
            st = await self.reg_read(OFF["CMD_STATUS"])
            if not st & 1:
                break
        code = R["CMD_STATUS"].field("CODE").get(st)
        r0 = await self.reg_read(OFF["CMD_RESULT0_LO"], 8)
        r1 = await self.reg_read(OFF["CMD_RESULT1_LO"], 8)
        return code, r0, r1


class Bench(CommandPort):
    """One DUT with its bus functional models. Implements the vector Target protocol."""

    def __init__(self, dut: Any, cfg_name: str | None = None, mirror: bool = True, cxl_master: bool = True) -> None:
        self.dut = dut
        self.cfg = config.named(cfg_name or os.environ.get("CXLTRACK_CONFIG", "small"))
        # The core has the DMA port and the copy engine (CAP_DMA.PRESENT, LIST and COPY = 1,
        # docs/rtl-notes.md): the model is that device (dma_copy defaults to the DMA port's presence).
        self.model = Device(self.cfg, dma_copy=True)
        # immediate writes: the bus models look at reset while they are constructed
        # (Icarus: an immediate write to an input that feeds a continuous assignment is never
        # re-propagated by later writes, so only reset, which is read by processes, gets one)
        dut.reset.value = Immediate(1)
        dut.dbg_time_en.value = 0
        dut.dbg_tick.value = 0
        cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())  # type: ignore[arg-type]
        if cxl_master:
            self.axi = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clock, dut.reset)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clock, dut.reset, size=self.cfg.capacity_bytes)
        self.lite = LiteMaster(dut)
        self.checkers = [
            ProtocolChecker(dut, "s_axi", AXI_CHANNELS),
            ProtocolChecker(dut, "m_axi", AXI_CHANNELS),
        ]
        # a core with its tables in device DRAM (dram_tables = 1): the carve-out above the capacity, on its own master
        # (cocotbext-axi's memory is sparse: a 1 TiB device costs only the lines written)
        self.dram: AxiRam | None = None
        if hasattr(dut, "d_axi_awvalid"):
            self.dram = AxiRam(AxiBus.from_prefix(dut, "d_axi"), dut.clock, dut.reset, size=4 * self.cfg.capacity_bytes)
            self.checkers.append(ProtocolChecker(dut, "d_axi", AXI_CHANNELS))
        self.mirror = ModelMirror(dut, self.model) if mirror else None
        # host memory behind the DMA port (the model has its own, written by its DMA harvests)
        self.host = HostMemory()
        self.host_port = HostPort(dut, self.host)
        self.checkers.append(ProtocolChecker(dut, "h_axi", {k: AXI_CHANNELS[k] for k in ("aw", "w")}))
        self.msi = 0
        cocotb.start_soon(self._count_msi())

    async def _count_msi(self) -> None:
        while True:
            await RisingEdge(self.dut.clock)
            if val(self.dut.msi):
                self.msi += 1

    def check_clean(self) -> None:
        errs = [e for c in self.checkers for e in c.errors] + self.host_port.errors
        if self.mirror:
            errs += self.mirror.errors
        assert not errs, "\n".join(errs[:20])

    def backpressure(self, rng: random.Random, p: float) -> None:
        """Random stalls on every channel of both AXI4 ports (p = stall probability)."""
        for ifc in (self.axi.write_if, self.axi.read_if, self.ram.write_if, self.ram.read_if):
            for ch in ("aw_channel", "w_channel", "b_channel", "ar_channel", "r_channel"):
                if hasattr(ifc, ch):
                    getattr(ifc, ch).set_pause_generator(pause_gen(random.Random(rng.random()), p))

    # ------------------------------------------------------------- Target protocol
    async def reset(self) -> None:
        self.dut.reset.value = 1
        await ClockCycles(self.dut.clock, 4)
        self.dut.reset.value = 0
        self.model.reset()
        await self.wait_idle()

    async def reg_read(self, offset: int, size: int = 4) -> int:
        """Reads of the words the access touches, the first at its address as issued (AXI4-Lite
        carries no read size: a 64-bit read is two 32-bit reads, as a bridge would make them)."""
        value, got = 0, 0
        addr = offset
        while got < size:
            word = await self.lite.read(addr)
            lane = addr & 3
            n = min(4 - lane, size - got)
            value |= (word >> 8 * lane & ((1 << 8 * n) - 1)) << 8 * got
            got += n
            addr = (addr & ~3) + 4
        return value

    async def reg_write(self, offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        """One AXI4-Lite write per 32-bit word the access touches, to the aligned word, with WSTRB =
        the access's bytes in it (and `strobe`, a byte mask within the access): as a PCIe-to-AXI4-Lite
        bridge delivers it. An empty or non-contiguous strobe pattern is one write."""
        full = (1 << size) - 1
        strobe = full if strobe is None else strobe & full
        first, last = offset & ~3, (offset + size - 1) & ~3
        for word in range(first, last + 4, 4):
            data = lanes = 0
            for i in range(size):
                if (offset + i) & ~3 == word:
                    lane = (offset + i) & 3
                    data |= (value >> 8 * i & 0xFF) << 8 * lane
                    lanes |= (strobe >> i & 1) << lane
            await self.lite.write(word, data, lanes)

    async def host_fill(self, addr: int, length: int, byte: int) -> None:
        self.host.fill(addr, length, byte)

    async def host_read(self, addr: int, length: int) -> bytes:
        return self.host.read(addr, length)

    async def host_fault(self, addr: int, length: int) -> None:
        self.host.fault(addr, length)

    async def mem_read(self, addr: int, size: int) -> tuple[str, int]:
        r = await self.axi.read(addr, size)
        resp = "okay" if r.resp == AxiResp.OKAY else "decerr"
        return resp, int.from_bytes(r.data, "little")

    async def mem_write(self, addr: int, data: bytes) -> str:
        r = await self.axi.write(addr, data)
        return "okay" if r.resp == AxiResp.OKAY else "decerr"

    async def wait_idle(self, limit: int = 2_000_000) -> None:
        for _ in range(limit):
            await RisingEdge(self.dut.clock)
            if val(self.dut.idle):
                return
        raise TimeoutError("engines did not go idle")

    async def settle(self) -> None:
        await ClockCycles(self.dut.clock, 2)
        await self.wait_idle()
        await ClockCycles(self.dut.clock, 2)

    async def tick(self, n: int = 1) -> None:
        # driven at falling edges: exactly one rising edge sees each pulse on every simulator
        for _ in range(n):
            await FallingEdge(self.dut.clock)
            self.dut.dbg_tick.value = 1
            await FallingEdge(self.dut.clock)
            self.dut.dbg_tick.value = 0
        await ClockCycles(self.dut.clock, 2)

    async def race(
        self, reg_writes: Sequence[tuple[int, int]], mem_writes: Sequence[tuple[int, bytes]], schedule: int = 0
    ) -> list[str]:
        """Launch a command (its register writes) while memory writes are in flight. Each write
        starts after a random delay (seeded by schedule) spread across the launch, so some are
        accepted before the command starts, some during its steps and some after it."""
        rng = random.Random(schedule * 7919 + len(mem_writes))
        span = 12 * len(reg_writes) + 40
        delays = [rng.randrange(span) for _ in mem_writes]

        async def one(i: int, addr: int, data: bytes) -> str:
            await ClockCycles(self.dut.clock, delays[i] + 1)
            return await self.mem_write(addr, data)

        tasks = [cocotb.start_soon(one(i, a, d)) for i, (a, d) in enumerate(mem_writes)]
        for off, v in reg_writes:
            await self.reg_write(off, v)
        return [await t for t in tasks]

    # ------------------------------------------------------------- helpers
    async def result(self, nbytes: int) -> bytes:
        out = bytearray()
        for off in range(0, (nbytes + 3) // 4 * 4, 4):
            out += (await self.reg_read(regs.RESULT + off)).to_bytes(4, "little")
        return bytes(out[:nbytes])


class Scoreboard:
    """Drives the register port of the bench and the model in lock step and compares."""

    def __init__(self, bench: Bench) -> None:
        self.b = bench
        self.m = bench.model

    async def reg_read(self, offset: int, size: int = 4) -> int:
        got = await self.b.reg_read(offset, size)
        want = self.m.reg_read(offset, size)
        assert got == want, f"reg_read {offset:#x}/{size}: rtl {got:#x} model {want:#x}"
        return got

    async def reg_write(self, offset: int, value: int, size: int = 4, strobe: int | None = None) -> None:
        await self.b.reg_write(offset, value, size, strobe)
        self.m.reg_write(offset, value, size, strobe)

    async def command(
        self,
        op: int,
        *args: int,
        clear: bool = False,
        decay: bool = False,
        rsvd: int = 0,
        result_bytes: int = 0,
        quiesce: bool = True,
        dma: bool = False,
        lst: bool = False,
    ) -> tuple[int, int, int]:
        """Run one command on both. With quiesce, the scrub engines of both first run dry, so
        the result does not depend on how far a background scrub got; the model then runs
        only the command's steps."""
        if quiesce:
            await self.b.wait_idle()
            self.m.settle()
        code, r0, r1 = await self.b.command(op, *args, clear=clear, decay=decay, rsvd=rsvd, dma=dma, lst=lst)
        for off, v in command_writes(op, args, clear, decay, rsvd, dma, lst):
            self.m.reg_write(off, v)
        self.run_model_command()
        st = self.m.reg_read(OFF["CMD_STATUS"])
        mcode = R["CMD_STATUS"].field("CODE").get(st)
        m0 = self.m.reg_read(OFF["CMD_RESULT0_LO"]) | self.m.reg_read(OFF["CMD_RESULT0_HI"]) << 32
        m1 = self.m.reg_read(OFF["CMD_RESULT1_LO"]) | self.m.reg_read(OFF["CMD_RESULT1_HI"]) << 32
        name = regs.Op(op).name if op in regs.Op._value2member_map_ else f"op{op:#x}"
        assert (code, r0, r1) == (mcode, m0, m1), (
            f"{name}{args}: rtl code {code} r0 {r0:#x} r1 {r1:#x}; model code {mcode} r0 {m0:#x} r1 {m1:#x}"
        )
        cover(f"cmd:{name}:{regs.Status(code).name}")
        if result_bytes:
            got = await self.b.result(result_bytes)
            want = bytes(self.m.result[:result_bytes])
            assert got == want, f"{name}{args}: RESULT differs: rtl {got.hex()} model {want.hex()}"
        return code, r0, r1

    def run_model_command(self) -> None:
        """Step the model's command engine only (its scrub engine keeps its progress)."""
        m: Any = self.m
        while m._cmd is not None:
            try:
                next(m._cmd)
            except StopIteration as stop:
                m._complete(stop.value)

    async def settle(self) -> None:
        await self.b.settle()
        self.m.settle()

    async def tick(self, n: int = 1) -> None:
        await self.b.tick(n)
        self.m.tick(n)

    async def compare_registers(self) -> None:
        for name, r in R.items():
            if name in ("EVQ_POP",):
                continue
            await self.reg_read(r.offset)

    async def compare_events(self, drain: bool = True) -> None:
        while True:
            n = await self.reg_read(OFF["EVQ_COUNT"])
            for name in ("EVT_HEAD0", "EVT_HEAD1", "EVT_ARG_LO", "EVT_ARG_HI"):
                await self.reg_read(OFF[name])
            if n:
                head = self.m.events.head()
                assert head is not None
                cover(f"event:{head.type.name}")
            if not drain or n == 0:
                return
            await self.reg_write(OFF["EVQ_POP"], 1)

    async def compare_tables(self) -> None:
        """Every table, through commands: bitmaps and hotness (no clear), every BAT entry, every
        slot and chunk."""
        cfg = self.m.cfg
        step = min(cfg.pages, 4096)
        for start in range(0, cfg.pages, step):
            n = min(step, cfg.pages - start)
            await self.command(OP.HARVEST_DIRTY, start, n, result_bytes=n // 8)
            await self.command(OP.HARVEST_ACCESSED, start, n, result_bytes=n // 8)
            await self.command(OP.HARVEST_HOTNESS, start, n, result_bytes=n)
        for page in range(cfg.pages):
            await self.command(OP.BAT_GET, page)
        for s in range(cfg.slots):
            await self.command(OP.SLOT_QUERY, s, result_bytes=512)
        for c in range(cfg.chunks):
            await self.command(OP.CHUNK_QUERY, c)
        await self.command(OP.CHUNK_LIST, 0, 0, result_bytes=(cfg.chunks + 7) // 8)


def finish(bench: Bench, name: str) -> None:
    bench.check_clean()
    dump_coverage(name)


Hook = Callable[[], Any]


async def random_accesses(b: Bench, rng: random.Random, n: int) -> None:
    """`n` 8-byte accesses at random places of the device, 60 % writes: dirty, accessed and
    hotness for a harvest to find."""
    for _ in range(n):
        addr = rng.randrange(b.cfg.pages) * 4096 + rng.randrange(64) * 64
        if rng.random() < 0.6:
            await b.mem_write(addr, rng.randbytes(8))
        else:
            await b.mem_read(addr, 8)


async def open_bench(dut: Any, seed_name: str | None = None) -> tuple[Bench, Scoreboard, random.Random]:
    """The opening of a core bench: the bench on the DUT with the model mirror, reset, a scoreboard,
    and a random generator seeded from CXLTRACK_SEED (else a fresh seed, printed under `seed_name`;
    a bench without randomness passes no name and gets a fixed generator)."""
    rng = random.Random(seed_from_env(seed_name)) if seed_name else random.Random(0)
    bench = Bench(dut)
    await bench.reset()
    return bench, Scoreboard(bench), rng
