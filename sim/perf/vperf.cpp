// SPDX-License-Identifier: Apache-2.0
// Raw Verilator speed and throughput of CxlTrackCore without Python in the loop: full-rate random
// 64-byte reads and writes on the CXL port, a DDR stub with random stalls and fixed latency.
// usage: vperf <cycles> <track_en 0|1> <seed>; prints "req_per_cycle=<x> cycles_per_s=<n>".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>

#include "VCxlTrackCore.h"
#include "verilated.h"

static VCxlTrackCore* t;
static void tick() {
  t->clock = 0;
  t->eval();
  t->clock = 1;
  t->eval();
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  const uint64_t cycles = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1000000;
  const int track = argc > 2 ? atoi(argv[2]) : 1;
  std::mt19937_64 rng(argc > 3 ? strtoull(argv[3], nullptr, 10) : 1);
  t = new VCxlTrackCore;
  t->dbg_time_en = 1;
  t->reset = 1;
  for (int i = 0; i < 5; i++) tick();
  t->reset = 0;
  for (int i = 0; i < 80; i++) tick();
  // CTRL.TRACK_EN through the register port
  t->s_axil_awaddr = 0x20;
  t->s_axil_wdata = track;
  t->s_axil_wstrb = 0xf;
  t->s_axil_awvalid = t->s_axil_wvalid = 1;
  t->s_axil_bready = 1;
  for (int i = 0; i < 20; i++) {
    t->clock = 0;
    t->eval();
    bool acc = t->s_axil_awready;
    t->clock = 1;
    t->eval();
    if (acc) t->s_axil_awvalid = t->s_axil_wvalid = 0;
  }
  const uint64_t lines = (uint64_t(1) << 20) / 64;  // small config: 1 MiB
  std::deque<uint64_t> rq, bq;                     // DDR responses due at cycle
  const int lat = 4;
  uint64_t ar = 0, aw = 0, w = 0, mw_aw = 0, mw_w = 0;
  std::uniform_int_distribution<int> pct(0, 99);
  t->s_axi_arlen = t->s_axi_awlen = 0;
  t->s_axi_arsize = t->s_axi_awsize = 6;
  t->s_axi_arburst = t->s_axi_awburst = 1;
  for (int i = 0; i < 16; i++) t->s_axi_wdata[i] = uint32_t(rng());
  t->s_axi_wstrb = ~uint64_t(0);
  t->s_axi_wlast = 1;
  t->s_axi_araddr = (rng() % lines) * 64;
  t->s_axi_awaddr = (rng() % lines) * 64;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t c = 0; c < cycles; c++) {
    t->clock = 0;
    t->s_axi_arvalid = 1;
    t->s_axi_awvalid = 1;
    t->s_axi_wvalid = w <= aw;
    t->s_axi_rready = pct(rng) >= 10;
    t->s_axi_bready = pct(rng) >= 10;
    t->m_axi_arready = pct(rng) >= 10;
    t->m_axi_awready = pct(rng) >= 10;
    t->m_axi_wready = pct(rng) >= 10;
    t->m_axi_rvalid = !rq.empty() && rq.front() <= c;
    t->m_axi_rid = 0;
    t->m_axi_rlast = 1;
    t->m_axi_rresp = 0;
    t->m_axi_bvalid = !bq.empty() && bq.front() <= c;
    t->m_axi_bid = 0;
    t->m_axi_bresp = 0;
    t->eval();
    bool arf = t->s_axi_arvalid && t->s_axi_arready, awf = t->s_axi_awvalid && t->s_axi_awready;
    bool wf = t->s_axi_wvalid && t->s_axi_wready;
    bool marf = t->m_axi_arvalid && t->m_axi_arready, mawf = t->m_axi_awvalid && t->m_axi_awready;
    bool mwf = t->m_axi_wvalid && t->m_axi_wready;
    bool mrf = t->m_axi_rvalid && t->m_axi_rready, mbf = t->m_axi_bvalid && t->m_axi_bready;
    t->clock = 1;
    t->eval();
    if (arf) ar++, t->s_axi_araddr = (rng() % lines) * 64;
    if (awf) aw++, t->s_axi_awaddr = (rng() % lines) * 64;
    if (wf) w++;
    if (marf) rq.push_back(c + lat);
    if (mrf) rq.pop_front();
    if (mbf) bq.pop_front();
    if (mawf) mw_aw++;
    if (mwf) mw_w++;
    if (mw_aw && mw_w) {  // one B per write whose address and data both arrived
      bq.push_back(c + lat);
      mw_aw--, mw_w--;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("track_en=%d cycles=%llu reads=%llu writes=%llu req_per_cycle=%.4f cycles_per_s=%.0f\n", track,
         (unsigned long long)cycles, (unsigned long long)ar, (unsigned long long)aw, double(ar + aw) / cycles,
         cycles / secs);
  delete t;
  return 0;
}
