// SPDX-License-Identifier: Apache-2.0
// Drives the Lockstep wrapper (two CxlTrackCore netlists on the same inputs, sim/equiv/lockstep.py) with random
// traffic and stops at the first cycle in which any output differs.
// usage: lockstep <cycles> <seed>; prints "lockstep: seed S: N cycles identical (...)" or the first difference.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <vector>

#include "VLockstep.h"
#include "lockstep_ports.h"
#include "verilated.h"

static VLockstep* t;
static std::mt19937_64 rng;
static uint64_t rnd(uint64_t n) { return n ? rng() % n : 0; }
static bool chance(int pct) { return int(rng() % 100) < pct; }

static void set_wide(VlWide<16>& w, bool zero) {
  for (int i = 0; i < 16; i++) w[i] = zero ? 0 : uint32_t(rng());
}

static const uint64_t kCapacity = uint64_t(1) << 20;  // config/small.toml
static const int kSlots = 4;

// register-port stimulus: offsets worth hitting
static uint32_t reg_offset() {
  static const uint32_t regs[] = {0x00, 0x04, 0x08, 0x10, 0x14, 0x18, 0x1c, 0x20, 0x24, 0x28, 0x30, 0x34, 0x40,
                                  0x44, 0x48, 0x80, 0x84, 0x88, 0x8c, 0x90, 0x94, 0xa0, 0xa4, 0xa8, 0xac, 0xb0,
                                  0xb4, 0x100, 0x104, 0x108, 0x110, 0x114, 0x118, 0x11c, 0x200, 0x204, 0x208,
                                  0x20c, 0x210, 0x214, 0x800, 0xffc};
  return regs[rnd(sizeof(regs) / sizeof(regs[0]))];
}

// a command with coherent arguments (small configuration: 256 pages, 4 slots, 16 chunks): ARG0..2, then CMD_OP
static void command_script(std::deque<std::pair<uint32_t, uint32_t>>& script) {
  static const uint32_t ops[] = {0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x12, 0x13, 0x20,
                                 0x21, 0x22, 0x23, 0x30, 0x31, 0x32, 0x33};
  uint32_t op = ops[rnd(16)], a0 = 0, a1 = 0, a2 = 0, flags = 0;
  switch (op >> 4) {
    case 0:
      a0 = rnd(4) * 64 + (chance(5) ? 1 : 0);
      a1 = (1 + rnd(4)) * 64;
      flags = chance(50) ? 1 : chance(30) ? 2 : 0;
      break;
    case 1:
      a0 = chance(95) ? rnd(256) : 256 + rnd(8);
      a1 = rng() & (chance(95) ? 0xfffff : 0x1fffff);
      a2 = rnd(chance(95) ? 16 : 32);
      break;
    case 2:
      a0 = op == 0x20 ? uint32_t(rng()) : rnd(5);
      a1 = chance(95) ? rnd(256) : 256;
      break;
    default:
      a0 = rnd(17);
      a1 = chance(90) ? 1 + rnd(3) : chance(50) ? 0 : 0x10000;
  }
  script.push_back({0x80, a0});
  script.push_back({0x84, 0});
  script.push_back({0x88, a1});
  script.push_back({0x8c, 0});
  script.push_back({0x90, a2});
  script.push_back({0xa0, op | flags << 8});
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  const uint64_t cycles = argc > 1 ? strtoull(argv[1], nullptr, 10) : 100000;
  const uint64_t seed = argc > 2 ? strtoull(argv[2], nullptr, 10) : 1;
  rng.seed(seed);
  t = new VLockstep;
  const bool time_en = seed % 2;
  // CXL-side master state
  struct Burst {
    uint64_t addr;
    int len, id;
  };
  std::deque<Burst> w_todo;  // AW issued, W beats still to send (in AW order)
  int w_beat = 0;
  bool ar_hold = false, aw_hold = false;
  // memory-side responder state
  std::deque<std::pair<int, int>> mem_aw;  // (id, len) accepted AW without complete W
  int mem_w_bursts = 0;                    // complete W bursts not yet matched
  std::deque<std::pair<uint64_t, int>> b_due;  // (cycle, id)
  struct Rd {
    uint64_t due;
    int id, left;
  };
  std::deque<Rd> r_due;
  // register port
  bool l_aw = false, l_ar = false;
  std::deque<std::pair<uint32_t, uint32_t>> script;  // register writes still to issue
  uint64_t resets = 0, merge_writes = 0, scrub_bursts = 0, decerr = 0, msi = 0, lite_writes = 0;
  uint64_t c = 0;
  auto drive_reset = [&](int n) {
    t->reset = 1;
    for (int i = 0; i < n; i++) {
      t->clock = 0;
      t->eval();
      t->clock = 1;
      t->eval();
    }
    t->reset = 0;
    w_todo.clear();
    w_beat = 0;
    ar_hold = aw_hold = false;
    mem_aw.clear();
    mem_w_bursts = 0;
    b_due.clear();
    r_due.clear();
    l_aw = l_ar = false;
    script.clear();
    t->s_axi_arvalid = t->s_axi_awvalid = t->s_axi_wvalid = 0;
    t->m_axi_rvalid = t->m_axi_bvalid = 0;
    t->s_axil_awvalid = t->s_axil_wvalid = t->s_axil_arvalid = 0;
  };
  drive_reset(5);
  // traffic mix of this seed
  const int p_rd = 5 + rnd(30), p_wr = 5 + rnd(30), p_lite = 30 + rnd(60), p_ready = 50 + rnd(50);
  for (c = 0; c < cycles; c++) {
    if (c && c % 200000 == 0 && chance(50)) {
      drive_reset(1 + rnd(3));
      resets++;
    }
    t->clock = 0;
    t->dbg_time_en = time_en;
    t->dbg_tick = chance(1);
    // ---- CXL-side master
    if (!ar_hold && chance(p_rd)) {
      ar_hold = true;
      t->s_axi_arid = rnd(16);
      t->s_axi_arlen = chance(80) ? 0 : rnd(4);
      t->s_axi_arsize = 6;
      t->s_axi_arburst = 1;
      t->s_axi_araddr = chance(5) ? kCapacity + rnd(kCapacity) : rnd(kCapacity / 256) * 256;
    }
    t->s_axi_arvalid = ar_hold;
    if (!aw_hold && w_todo.size() < 8 && chance(p_wr)) {
      aw_hold = true;
      t->s_axi_awid = rnd(16);
      t->s_axi_awlen = chance(80) ? 0 : rnd(4);
      t->s_axi_awsize = 6;
      t->s_axi_awburst = 1;
      t->s_axi_awaddr = chance(5) ? kCapacity + rnd(kCapacity) : rnd(kCapacity / 256) * 256;
      w_todo.push_back({t->s_axi_awaddr, int(t->s_axi_awlen), int(t->s_axi_awid)});
    }
    t->s_axi_awvalid = aw_hold;
    if (!t->s_axi_wvalid && !w_todo.empty() && chance(70)) {
      t->s_axi_wvalid = 1;
      set_wide(t->s_axi_wdata, false);
      t->s_axi_wstrb = chance(70) ? ~uint64_t(0) : rng();
      t->s_axi_wlast = w_beat == w_todo.front().len;
    }
    t->s_axi_rready = chance(p_ready);
    t->s_axi_bready = chance(p_ready);
    // ---- memory-side responder
    t->m_axi_arready = chance(p_ready);
    t->m_axi_awready = chance(p_ready);
    t->m_axi_wready = chance(p_ready);
    if (!t->m_axi_bvalid && !b_due.empty() && b_due.front().first <= c) {
      t->m_axi_bvalid = 1;
      t->m_axi_bid = b_due.front().second;
      t->m_axi_bresp = 0;
    }
    if (!t->m_axi_rvalid && !r_due.empty() && r_due.front().due <= c) {
      t->m_axi_rvalid = 1;
      t->m_axi_rid = r_due.front().id;
      t->m_axi_rlast = r_due.front().left == 0;
      t->m_axi_rresp = 0;
      set_wide(t->m_axi_rdata, false);
    }
    // ---- register port
    if (!l_aw && !l_ar && script.empty() && chance(p_lite / 8)) command_script(script);
    if (!l_aw && !l_ar && !script.empty() && chance(p_lite)) {
      l_aw = true;
      t->s_axil_awaddr = script.front().first;
      t->s_axil_wdata = script.front().second;
      t->s_axil_wstrb = 0xf;
      script.pop_front();
    } else if (!l_aw && !l_ar && chance(p_lite)) {
      uint32_t off;
      int k = rnd(100);
      if (k < 25) off = 0x10000 + rnd(kSlots + 1) * 0x1000 + (chance(50) ? rnd(64) * 4 : rnd(4096));
      else if (k < 20) off = 0x1000 + rnd(4096);
      else off = reg_offset() + (chance(8) ? rnd(4) : 0);
      if (chance(55)) {
        l_aw = true;
        t->s_axil_awaddr = off;
        uint32_t v = rng();
        if (off == 0xa0) {  // CMD_OP: mostly defined opcodes, sometimes flags or garbage
          static const uint32_t ops[] = {0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x12, 0x13, 0x20,
                                         0x21, 0x22, 0x23, 0x30, 0x31, 0x32, 0x33};
          v = ops[rnd(16)] | (chance(20) ? (rnd(4) << 8) : 0) | (chance(3) ? (1u << 12) : 0);
          if (chance(3)) v = rng();
        } else if (off >= 0x80 && off < 0x98) {
          static const uint32_t args[] = {0, 1, 2, 3, 5, 64, 128, 192, 256, 4096, 0xffff, 0x10000};
          v = (off & 4) ? (chance(90) ? 0 : rng()) : (chance(85) ? args[rnd(12)] + rnd(2) * rnd(8) : rng());
        } else if (off == 0x24) {
          v = rnd(8);
        } else if (off == 0x20) {
          v = chance(80) ? 1 | (rnd(2) << 1) : rng();
        }
        t->s_axil_wdata = v;
        int s = rnd(10);
        t->s_axil_wstrb = s < 7 ? 0xf : s < 8 ? 0 : rnd(16);
      } else {
        l_ar = true;
        t->s_axil_araddr = chance(30) ? 0xa4 : off;
      }
    }
    t->s_axil_awvalid = t->s_axil_wvalid = l_aw;
    t->s_axil_arvalid = l_ar;
    t->s_axil_bready = chance(80);
    t->s_axil_rready = chance(80);
    t->eval();
    // ---- compare
    bool bad = false;
#define CHECK(n)                                                                            \
  if (t->diff_##n) {                                                                        \
    printf("lockstep: seed %llu: cycle %llu: output %s differs\n", (unsigned long long)seed, \
           (unsigned long long)c, #n);                                                      \
    bad = true;                                                                             \
  }
    LOCKSTEP_OUTPUTS(CHECK)
    if (bad) return 1;
    // ---- handshakes (sampled before the edge)
    bool arf = t->s_axi_arvalid && t->s_axi_arready;
    bool awf = t->s_axi_awvalid && t->s_axi_awready;
    bool wf = t->s_axi_wvalid && t->s_axi_wready;
    bool m_arf = t->m_axi_arvalid && t->m_axi_arready;
    bool m_awf = t->m_axi_awvalid && t->m_axi_awready;
    bool m_wf = t->m_axi_wvalid && t->m_axi_wready;
    bool m_bf = t->m_axi_bvalid && t->m_axi_bready;
    bool m_rf = t->m_axi_rvalid && t->m_axi_rready;
    bool l_awf = t->s_axil_awvalid && t->s_axil_awready;
    bool l_arf = t->s_axil_arvalid && t->s_axil_arready;
    int m_arid = t->m_axi_arid, m_arlen = t->m_axi_arlen, m_awid = t->m_axi_awid, m_awlen = t->m_axi_awlen;
    bool m_wlast = t->m_axi_wlast;
    if (m_awf && (m_awid & 16)) (m_awid & 1 ? scrub_bursts : merge_writes)++;
    if (t->s_axi_bvalid && t->s_axi_bready && t->s_axi_bresp == 3) decerr++;
    if (t->msi) msi++;
    if (l_awf) lite_writes++;
    t->clock = 1;
    t->eval();
    if (arf) ar_hold = false;
    if (awf) aw_hold = false;
    if (wf) {
      t->s_axi_wvalid = 0;
      if (w_beat == w_todo.front().len) {
        w_todo.pop_front();
        w_beat = 0;
      } else {
        w_beat++;
      }
    }
    if (m_arf) r_due.push_back({c + 1 + rnd(6), m_arid, m_arlen});
    if (m_awf) mem_aw.push_back({m_awid, m_awlen});
    if (m_wf && m_wlast) mem_w_bursts++;
    while (!mem_aw.empty() && mem_w_bursts > 0) {
      b_due.push_back({c + 1 + rnd(6), mem_aw.front().first});
      mem_aw.pop_front();
      mem_w_bursts--;
    }
    if (m_bf) {
      t->m_axi_bvalid = 0;
      b_due.pop_front();
    }
    if (m_rf) {
      t->m_axi_rvalid = 0;
      if (r_due.front().left == 0) r_due.pop_front();
      else r_due.front().left--;
    }
    if (l_awf) l_aw = false;
    if (l_arf) l_ar = false;
  }
  printf(
      "lockstep: seed %llu: %llu cycles identical (register writes %llu, merge writes %llu, scrub bursts %llu, "
      "DECERR writes %llu, MSI %llu, resets %llu)\n",
      (unsigned long long)seed, (unsigned long long)cycles, (unsigned long long)lite_writes,
      (unsigned long long)merge_writes, (unsigned long long)scrub_bursts, (unsigned long long)decerr,
      (unsigned long long)msi, (unsigned long long)resets);
  return 0;
}
