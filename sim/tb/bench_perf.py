# SPDX-License-Identifier: Apache-2.0
"""Benchmark (not a test): full-rate random single-line reads and writes offered on every cycle,
random back-pressure on the responses and on the DDR side; accepted requests per cycle with
CTRL.TRACK_EN=1 and 0, added read/write latency of the tracker (request accept to response at
the CXL port minus the same at the DDR port), simulated cycles per wall-clock second."""

from __future__ import annotations

import json
import os
import random
import time
from collections import deque
from typing import Any

import cocotb
from cocotb.triggers import RisingEdge

from .env import OFF, Bench, pause_gen, val

CYCLES = int(os.environ.get("CXLTRACK_BENCH_CYCLES", "20000"))


class Driver:
    """Keeps AR, AW and W valid every cycle (one 64-byte beat per request, id 0)."""

    def __init__(self, b: Bench, rng: random.Random, p_stall: float) -> None:
        self.b, self.rng, self.p = b, rng, p_stall
        self.pages = b.cfg.pages
        self.stats = {"ar": 0, "aw": 0, "r": 0, "b": 0}
        self.lat: dict[str, deque[int]] = {k: deque() for k in ("s_r", "m_r", "s_w", "m_w")}
        self.sum = {"s_r": 0, "m_r": 0, "s_w": 0, "m_w": 0, "n_r": 0, "n_w": 0}
        self.running = False

    def addr(self) -> int:
        return (self.rng.randrange(self.pages) << 12) + (self.rng.randrange(64) << 6)

    async def run(self, cycles: int) -> int:
        d = self.b.dut
        d.s_axi_arid.value = 0
        d.s_axi_awid.value = 0
        for sig, v in (("arlen", 0), ("awlen", 0), ("arsize", 6), ("awsize", 6), ("arburst", 1), ("awburst", 1)):
            getattr(d, f"s_axi_{sig}").value = v
        d.s_axi_wstrb.value = (1 << 64) - 1
        d.s_axi_wlast.value = 1
        d.s_axi_wdata.value = self.rng.getrandbits(512)
        d.s_axi_araddr.value = self.addr()
        d.s_axi_awaddr.value = self.addr()
        d.s_axi_arvalid.value = 1
        d.s_axi_awvalid.value = 1
        d.s_axi_wvalid.value = 1
        d.s_axi_rready.value = 1
        d.s_axi_bready.value = 1
        cyc = 0
        outstanding_w = 0
        while cyc < cycles or self.stats["r"] < self.stats["ar"] or self.stats["b"] < self.stats["aw"]:
            await RisingEdge(d.clock)
            cyc += 1
            issuing = cyc < cycles
            if val(d.m_axi_arvalid) and val(d.m_axi_arready):
                self.lat["m_r"].append(cyc)
            if val(d.m_axi_rvalid) and val(d.m_axi_rready):
                self.sum["m_r"] += cyc - self.lat["m_r"].popleft()
            if val(d.m_axi_awvalid) and val(d.m_axi_awready):
                self.lat["m_w"].append(cyc)
            if val(d.m_axi_bvalid) and val(d.m_axi_bready):
                self.sum["m_w"] += cyc - self.lat["m_w"].popleft()
            if val(d.s_axi_arvalid) and val(d.s_axi_arready):
                self.stats["ar"] += 1
                self.lat["s_r"].append(cyc)
                d.s_axi_araddr.value = self.addr()
            if val(d.s_axi_rvalid) and val(d.s_axi_rready):
                self.stats["r"] += 1
                self.sum["s_r"] += cyc - self.lat["s_r"].popleft()
                self.sum["n_r"] += 1
            if val(d.s_axi_awvalid) and val(d.s_axi_awready):
                self.stats["aw"] += 1
                self.lat["s_w"].append(cyc)
                d.s_axi_awaddr.value = self.addr()
            if val(d.s_axi_wvalid) and val(d.s_axi_wready):
                outstanding_w += 1
            if val(d.s_axi_bvalid) and val(d.s_axi_bready):
                self.stats["b"] += 1
                self.sum["s_w"] += cyc - self.lat["s_w"].popleft()
                self.sum["n_w"] += 1
            d.s_axi_arvalid.value = int(issuing)
            d.s_axi_awvalid.value = int(issuing)
            # one W beat per AW: never let W run more than one request ahead of AW
            d.s_axi_wvalid.value = int(issuing or outstanding_w < self.stats["aw"])
            d.s_axi_rready.value = int(self.rng.random() >= self.p)
            d.s_axi_bready.value = int(self.rng.random() >= self.p)
        d.s_axi_wvalid.value = 0
        return cycles


@cocotb.test()
async def throughput(dut: Any) -> None:
    seed = int(os.environ.get("CXLTRACK_SEED", "1"))
    rng = random.Random(seed)
    b = Bench(dut, mirror=False, cxl_master=False)
    for sig in ("arvalid", "awvalid", "wvalid"):
        getattr(dut, f"s_axi_{sig}").value = 0
    await b.reset()
    p_stall = float(os.environ.get("CXLTRACK_BENCH_STALL", "0.1"))
    results = {}
    for track in (1, 0):
        # identical traffic and identical DDR stalls in both runs
        rng = random.Random(seed)
        for ifc in (b.ram.write_if, b.ram.read_if):
            for ch in ("aw_channel", "w_channel", "b_channel", "ar_channel", "r_channel"):
                if hasattr(ifc, ch):
                    getattr(ifc, ch).set_pause_generator(pause_gen(random.Random(rng.random()), p_stall))
        await b.reg_write(OFF["CTRL"], track)
        drv = Driver(b, random.Random(seed), p_stall)
        t0 = time.perf_counter()
        cycles = await drv.run(CYCLES)
        wall = time.perf_counter() - t0
        s = drv.sum
        results[f"track{track}"] = {
            "cycles": cycles,
            "reads": drv.stats["ar"],
            "writes": drv.stats["aw"],
            "req_per_cycle": (drv.stats["ar"] + drv.stats["aw"]) / cycles,
            "read_latency_cxl": s["s_r"] / max(1, s["n_r"]),
            "read_latency_ddr": s["m_r"] / max(1, s["n_r"]),
            "write_latency_cxl": s["s_w"] / max(1, s["n_w"]),
            "write_latency_ddr": s["m_w"] / max(1, s["n_w"]),
            "sim_cps": cycles / wall,
        }
        await b.wait_idle(limit=8)  # the tables take their last requests' effect two cycles after them
    out = os.environ.get("CXLTRACK_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    b.check_clean()
