// SPDX-License-Identifier: Apache-2.0
// Raw Verilator speed and throughput of CxlTrackCore without Python in the loop: full-rate random
// 64-byte reads and writes on the CXL port, a DDR stub with random stalls and fixed latency.
// usage: vperf <cycles> <track_en 0|1> <seed> [<arg0> <arg1> <op> <status> <op value> <pages>]; prints
// "req_per_cycle=<x> cycles_per_s=<n>". With the six harvest arguments (register offsets of CMD_ARG0_LO,
// CMD_ARG1_LO, CMD_OP and CMD_STATUS, the CMD_OP value, the pages per command) the register port runs that
// harvest back to back during the traffic (ARG0, ARG1 written, CMD_OP written, CMD_STATUS read until BUSY is
// clear, next one) and the line also gives harvests=<n> cycles_per_harvest=<x> (from its first register write to
// the status read that saw it done, register port included).
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
  const bool harvest = argc > 9;
  uint32_t h_arg0 = 0, h_arg1 = 0, h_op = 0, h_status = 0, h_value = 0, h_pages = 0;
  if (harvest) {
    h_arg0 = strtoul(argv[4], nullptr, 0), h_arg1 = strtoul(argv[5], nullptr, 0);
    h_op = strtoul(argv[6], nullptr, 0), h_status = strtoul(argv[7], nullptr, 0);
    h_value = strtoul(argv[8], nullptr, 0), h_pages = strtoul(argv[9], nullptr, 0);
  }
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
  // the host behind the DMA port (a harvest with CMD_OP.DMA writes there; ARG2 stays 0): READY stalls like the DDR's,
  // each burst answered 20 cycles after its last beat
  std::deque<uint64_t> hb;
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
  // the register port's harvest loop: (offset, data) writes, then status reads until not busy
  struct Access {
    bool write;
    uint32_t addr, data;
  };
  std::deque<Access> todo;
  uint64_t harvests = 0, h_started = 0, h_cycles = 0;
  bool lw_aw = false, lw_w = false, l_ar = false, l_wait_b = false, l_wait_r = false;
  t->s_axil_bready = 1;
  t->s_axil_rready = 1;
  t->s_axil_wstrb = 0xf;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t c = 0; c < cycles; c++) {
    if (harvest && todo.empty() && !l_wait_b && !l_wait_r && !lw_aw && !lw_w && !l_ar) {
      todo = {{true, h_arg0, 0}, {true, h_arg0 + 4, 0}, {true, h_arg1, h_pages}, {true, h_arg1 + 4, 0},
              {true, h_op, h_value}, {false, h_status, 0}};
      h_started = c;
    }
    if (harvest && !todo.empty() && !l_wait_b && !l_wait_r && !lw_aw && !lw_w && !l_ar) {
      Access a = todo.front();
      todo.pop_front();
      if (a.write) {
        t->s_axil_awaddr = a.addr, t->s_axil_wdata = a.data;
        lw_aw = lw_w = l_wait_b = true;
      } else {
        t->s_axil_araddr = a.addr;
        l_ar = l_wait_r = true;
      }
    }
    t->s_axil_awvalid = lw_aw, t->s_axil_wvalid = lw_w, t->s_axil_arvalid = l_ar;
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
    t->h_axi_awready = pct(rng) >= 10;
    t->h_axi_wready = pct(rng) >= 10;
    t->h_axi_bvalid = !hb.empty() && hb.front() <= c;
    t->h_axi_bresp = 0;
    t->h_axi_bid = 0;
    t->eval();
    bool hwlast = t->h_axi_wvalid && t->h_axi_wready && t->h_axi_wlast;
    bool hbf = t->h_axi_bvalid && t->h_axi_bready;
    bool arf = t->s_axi_arvalid && t->s_axi_arready, awf = t->s_axi_awvalid && t->s_axi_awready;
    bool wf = t->s_axi_wvalid && t->s_axi_wready;
    bool marf = t->m_axi_arvalid && t->m_axi_arready, mawf = t->m_axi_awvalid && t->m_axi_awready;
    bool mwf = t->m_axi_wvalid && t->m_axi_wready;
    bool mrf = t->m_axi_rvalid && t->m_axi_rready, mbf = t->m_axi_bvalid && t->m_axi_bready;
    bool l_awf = lw_aw && t->s_axil_awready, l_wf = lw_w && t->s_axil_wready, l_arf = l_ar && t->s_axil_arready;
    bool l_bf = t->s_axil_bvalid, l_rf = t->s_axil_rvalid;
    uint32_t l_rdata = t->s_axil_rdata;
    t->clock = 1;
    t->eval();
    if (arf) ar++, t->s_axi_araddr = (rng() % lines) * 64;
    if (awf) aw++, t->s_axi_awaddr = (rng() % lines) * 64;
    if (wf) w++;
    if (marf) rq.push_back(c + lat);
    if (mrf) rq.pop_front();
    if (mbf) bq.pop_front();
    if (hwlast) hb.push_back(c + 20);
    if (hbf) hb.pop_front();
    if (mawf) mw_aw++;
    if (mwf) mw_w++;
    if (l_awf) lw_aw = false;
    if (l_wf) lw_w = false;
    if (l_arf) l_ar = false;
    if (l_bf && l_wait_b) l_wait_b = false;
    if (l_rf && l_wait_r) {
      l_wait_r = false;
      if (l_rdata & 1)  // CMD_STATUS.BUSY: read again
        todo.push_front({false, h_status, 0});
      else
        harvests++, h_cycles += c + 1 - h_started;
    }
    if (mw_aw && mw_w) {  // one B per write whose address and data both arrived
      bq.push_back(c + lat);
      mw_aw--, mw_w--;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("track_en=%d cycles=%llu reads=%llu writes=%llu req_per_cycle=%.4f cycles_per_s=%.0f", track,
         (unsigned long long)cycles, (unsigned long long)ar, (unsigned long long)aw, double(ar + aw) / cycles,
         cycles / secs);
  if (harvest)
    printf(" harvests=%llu cycles_per_harvest=%.1f", (unsigned long long)harvests,
           harvests ? double(h_cycles) / harvests : 0.0);
  printf("\n");
  delete t;
  return 0;
}
