# SPDX-License-Identifier: Apache-2.0
"""DmaWriter on its own: the bench plays the command engine (a transfer's start and its stream of
64-byte beats, offered with random gaps) and the host memory behind the AXI4 write port (random
READY on AW and W, B answered in order after a random delay, random BVALID gaps, error injection:
a burst touching a faulty range is answered SLVERR or DECERR and not written).

Checked independently of the RTL's structure (docs/spec.md 5.3, docs/rtl-notes.md "DMA harvest"):
- every AW: INCR, 64-byte beats, 1..64 beats, never across a 4 KiB boundary, at the next address
  of the transfer (the bursts cover [addr, addr + bytes) exactly once, in order), held stable until
  accepted; never more than 16 bursts outstanding (AW accepted, no B yet);
- W: a beat only for a burst whose AW was accepted (W follows AW), WLAST on each burst's last beat
  only, WSTRB all ones except on the transfer's last beat where it covers the bytes left; the data
  of beat k is the k-th beat the bench handed over;
- host memory after each transfer: every byte of [addr, addr + bytes) holds the stream's byte
  (those of faulty bursts excepted), no byte outside the range was written (WSTRB applied);
- `done` exactly once per transfer, in the cycle of the last B response, with its error bit set iff
  some B was SLVERR/DECERR; `idle` between transfers.

The seed is printed (CXLTRACK_SEED reproduces a run); CXLTRACK_BLOCK_CYCLES sets the length."""

from __future__ import annotations

import os
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

import cocotb

from ..env import cover, dump_coverage, seed_from_env
from .common import block_params, next_cycle, settle, sig, start

BLOCK = "DmaWriter"
CYCLES = int(os.environ.get("CXLTRACK_BLOCK_CYCLES", "12000"))
COVERAGE_NAME = "block_dma_writer"
OKAY, SLVERR, DECERR = 0, 2, 3


@dataclass
class Burst:
    addr: int
    beats: int
    sent: int = 0  # W beats seen
    fault: int = OKAY


class Host:
    """The host side: faulty ranges and the B channel (in order, after a delay)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.faults: list[tuple[int, int]] = []
        self.bq: deque[tuple[int, int]] = deque()  # (cycle it may be answered, resp)

    def fault_of(self, b: Burst) -> int:
        lo, hi = b.addr, b.addr + 64 * b.beats
        for flo, fhi in self.faults:
            if flo < hi and lo < fhi:
                return SLVERR if flo & 64 else DECERR
        return OKAY


@cocotb.test()
async def random_transfers(dut: Any) -> None:
    seed = seed_from_env("dma_writer")
    rng = random.Random(seed)
    p = block_params()
    addr_bits, max_bursts = p["addr_bits"], p["max_bursts"]
    await start(dut)
    host = Host(rng)
    dut.io_start_valid.value = 0
    dut.io_start_bits_stream.value = 0  # length-known transfers here; stream_transfers below
    dut.io_avail.value = 0
    dut.io_strb.value = 0
    dut.io_end.value = 0
    dut.io_data_valid.value = 0
    dut.io_axi_awready.value = 0
    dut.io_axi_wready.value = 0
    dut.io_axi_bvalid.value = 0
    dut.io_axi_bresp.value = 0
    dut.io_axi_bid.value = 0
    cycle = 0
    transfers = 0
    while cycle < CYCLES:
        # a transfer: 64-byte aligned start, often just below a 4 KiB boundary; 8-byte multiple length
        base = rng.choice([0, (1 << addr_bits) - (1 << 20)]) if addr_bits > 21 else 0
        addr = base + 64 * rng.randrange(0, 1 << 12)
        if rng.random() < 0.3:
            addr = (addr | 0xFFF) - 64 * rng.randrange(4) & ~63
        # lengths: one beat or less, a partial beat, up to 16 KiB; rarely 64..128 KiB (more than 16 bursts in flight)
        words = rng.choice([1, 7, 8, 9, rng.randrange(1, 64), rng.randrange(1, 2048), 512 * rng.randrange(1, 5)])
        nbytes = 8 * (1024 * rng.randrange(8, 17) if rng.random() < 0.06 else words)
        beats_total = (nbytes + 63) // 64
        stream = [rng.getrandbits(512) for _ in range(beats_total)]
        host.faults = []
        if rng.random() < 0.25:
            at = addr + 64 * rng.randrange(beats_total)
            host.faults = [(at, at + 64 * rng.randrange(1, 8))]
        mode = rng.choice(["fast", "slow_aw", "slow_w", "slow_b", "random"])
        p_aw = 0.95 if mode in ("fast", "slow_w", "slow_b") else 0.3
        p_w = 0.95 if mode in ("fast", "slow_aw", "slow_b") else 0.3
        p_data = rng.choice([1.0, 0.7, 0.3])
        if transfers == 0:
            # The first transfer fills every burst slot (the coverage goal max_outstanding): more
            # than max_bursts 4 KiB bursts, the stream always ready, B slow. Random choices alone
            # reached it in some seeds only.
            addr &= ~0xFFF
            nbytes = 4096 * (max_bursts + 4)
            beats_total = nbytes // 64
            stream = [rng.getrandbits(512) for _ in range(beats_total)]
            host.faults = []
            mode, p_aw, p_w, p_data, b_delay = "slow_b", 0.95, 0.95, 1.0, (20, 80)
        else:
            b_delay = (0, 3) if mode != "slow_b" else (20, 80)
        cover(f"mode:{mode}")

        # nothing offered in the start cycle (the previous transfer's last B is not repeated)
        dut.io_axi_bvalid.value = 0
        dut.io_data_valid.value = 0
        dut.io_start_valid.value = 1
        dut.io_start_bits_addr.value = addr
        dut.io_start_bits_bytes.value = nbytes
        await settle()
        assert sig(dut.io_idle) == 1, "idle before a transfer"
        await next_cycle(dut)
        dut.io_start_valid.value = 0
        next_aw = addr  # the address the next AW must name
        end = addr + nbytes
        bursts: deque[Burst] = deque()  # AW accepted, W not complete
        answered: deque[Burst] = deque()  # W complete, waiting for B (in order)
        outstanding = 0
        handed = 0  # beats the writer took from the stream
        sent = 0  # W beats accepted
        errors = False
        done_seen = False
        held_aw: tuple[int, int] | None = None
        written: dict[int, int] = {}
        faulty: list[tuple[int, int]] = []  # bursts answered with an error: not written
        for _ in range(200000):
            # drive this cycle's inputs
            aw_ready = int(rng.random() < p_aw)
            w_ready = int(rng.random() < p_w)
            dut.io_axi_awready.value = aw_ready
            dut.io_axi_wready.value = w_ready
            data_valid = handed < beats_total and rng.random() < p_data
            dut.io_data_valid.value = int(data_valid)
            dut.io_data_bits.value = stream[handed] if data_valid else 0
            b_now = bool(host.bq) and host.bq[0][0] <= cycle and rng.random() < 0.8
            dut.io_axi_bvalid.value = int(b_now)
            dut.io_axi_bresp.value = host.bq[0][1] if b_now else 0
            await settle()
            # sample
            aw_valid = sig(dut.io_axi_awvalid)
            if aw_valid:
                a, ln = sig(dut.io_axi_awaddr), sig(dut.io_axi_awlen) + 1
                assert sig(dut.io_axi_awsize) == 6 and sig(dut.io_axi_awburst) == 1, "AW: INCR of 64-byte beats"
                assert held_aw is None or held_aw == (a, ln), f"AW changed while not accepted: {held_aw} -> {(a, ln)}"
                assert a == next_aw, f"AW address {a:#x}, expected {next_aw:#x}"
                assert 1 <= ln <= 64 and (a & 0xFFF) + 64 * ln <= 4096, f"AW {a:#x} x{ln} crosses 4 KiB"
                assert a + 64 * ln <= end + 63, f"AW {a:#x} x{ln} beyond the transfer's end {end:#x}"
                last_possible = min(end, (a | 0xFFF) + 1)
                assert a + 64 * ln >= last_possible, f"AW {a:#x} x{ln}: shorter than needed (up to {last_possible:#x})"
                if (a & 0xFFF) + 64 * ln == 4096 and a + 64 * ln < end:
                    cover("burst_to_4k_boundary")
            w_valid = sig(dut.io_axi_wvalid)
            if w_valid:
                assert bursts, "W beat without an accepted AW"
                b = bursts[0]
                is_last = b.sent == b.beats - 1
                assert sig(dut.io_axi_wlast) == int(is_last), (
                    f"WLAST {sig(dut.io_axi_wlast)} on beat {b.sent}/{b.beats}"
                )
                left = nbytes - 64 * sent
                exp_strb = (1 << 64) - 1 if left >= 64 else (1 << left) - 1
                assert sig(dut.io_axi_wstrb) == exp_strb, f"WSTRB {sig(dut.io_axi_wstrb):#x}, expected {exp_strb:#x}"
                assert sig(dut.io_axi_wdata) == stream[sent], f"W data of beat {sent} is not the stream's beat"
            assert sig(dut.io_axi_bready) == 1
            data_ready = sig(dut.io_data_ready)
            if os.environ.get("DMA_TRACE"):
                cocotb.log.info(
                    "c%d aw %d/%d w %d/%d b %d inFlight=%s",
                    cycle,
                    aw_valid,
                    aw_ready,
                    w_valid,
                    w_ready,
                    b_now,
                    dut.inFlight.value,
                )
            done_valid = sig(dut.io_done_valid)
            # handshakes
            if data_valid and data_ready:
                handed += 1
            assert handed >= sent + (1 if w_valid and w_ready else 0) - 0, "W sent a beat not handed over"
            if aw_valid and aw_ready:
                nb = sig(dut.io_axi_awlen) + 1
                burst = Burst(next_aw, nb)
                burst.fault = host.fault_of(burst)
                bursts.append(burst)
                next_aw += 64 * nb
                outstanding += 1
                assert outstanding <= max_bursts, f"{outstanding} bursts outstanding"
                if outstanding == max_bursts:
                    cover("max_outstanding")
                held_aw = None
            elif aw_valid:
                held_aw = (sig(dut.io_axi_awaddr), sig(dut.io_axi_awlen) + 1)
            if w_valid and w_ready:
                b = bursts[0]
                strb = sig(dut.io_axi_wstrb)
                data = sig(dut.io_axi_wdata)
                beat_addr = b.addr + 64 * b.sent
                if b.fault != OKAY and b.sent == 0:
                    faulty.append((b.addr, b.addr + 64 * b.beats))
                if b.fault == OKAY:
                    for i in range(64):
                        if strb >> i & 1:
                            written[beat_addr + i] = data >> (8 * i) & 0xFF
                b.sent += 1
                sent += 1
                if b.sent == b.beats:
                    bursts.popleft()
                    answered.append(b)
                    host.bq.append((cycle + rng.randint(*b_delay), b.fault))
            last_b = False
            if b_now:
                resp = host.bq.popleft()[1]
                answered.popleft()
                outstanding -= 1
                if resp != OKAY:
                    errors = True
                    cover("error_resp")
                last_b = next_aw >= end and not bursts and not answered and sent == beats_total
            if done_valid != int(last_b):
                cocotb.log.error(
                    "rtl inFlight=%s awLeft=%s wLeft=%s busy=%s; bench out=%d next_aw=%#x end=%#x sent=%d/%d",
                    dut.inFlight.value,
                    dut.awLeft.value,
                    dut.wLeft.value,
                    dut.busy.value,
                    outstanding,
                    next_aw,
                    end,
                    sent,
                    beats_total,
                )
            assert done_valid == int(last_b), (
                f"done {done_valid} in a cycle whose B is {'' if last_b else 'not '}the last"
            )
            if done_valid:
                assert sig(dut.io_done_bits) == int(errors), (
                    f"done error bit {sig(dut.io_done_bits)}, expected {errors}"
                )
                done_seen = True
            await next_cycle(dut)
            cycle += 1
            if done_seen:
                break
        assert done_seen, "transfer never completed"
        # host memory: the range holds the stream except the faulty bursts, nothing else changed
        exp_bytes = b"".join(v.to_bytes(64, "little") for v in stream)[:nbytes]
        for i in range(nbytes):
            a = addr + i
            if a in written:
                assert written[a] == exp_bytes[i], f"host byte {a:#x}: {written[a]:#x}, expected {exp_bytes[i]:#x}"
            else:
                assert any(lo <= a < hi for lo, hi in faulty), f"host byte {a:#x} of the range not written"
        assert all(addr <= a < end for a in written), "a write outside [addr, addr + bytes)"
        cover("transfer")
        cover("partial_last_beat", int(nbytes % 64 != 0))
        transfers += 1
    cocotb.log.info("dma_writer: %d transfers in %d cycles", transfers, cycle)
    dump_coverage(COVERAGE_NAME)


@cocotb.test()
async def stream_transfers(dut: Any) -> None:
    """Stream mode (a list harvest, docs/spec.md 5.4): the source's beats arrive at random with their own WSTRB, their
    number unknown at the start; an AW must only announce beats the source already holds (`avail`), bursts never
    cross 4 KiB and follow each other; the bytes written are exactly the strobed bytes in order; `done` comes once,
    after `end` and the last B, with the error bit iff a B failed; a stream of no beats issues nothing and is done at
    `end`."""
    rng = random.Random(seed_from_env("dma_writer.stream"))
    await start(dut)
    for name in ("io_start_valid", "io_data_valid", "io_axi_bvalid", "io_axi_bresp", "io_axi_bid", "io_end"):
        getattr(dut, name).value = 0
    dut.io_avail.value = 0
    dut.io_strb.value = 0
    for n in range(40):
        beats = rng.choice([0, 1, 3, rng.randrange(1, 200)])
        last_recs = rng.randrange(1, 5)  # records (16 bytes) in the last beat
        data = [rng.getrandbits(512) for _ in range(beats)]
        strbs = [(1 << 64) - 1] * beats
        if beats:
            strbs[-1] = (1 << (16 * last_recs)) - 1
        addr = 64 * rng.randrange(1 << 12) + (1 << 32)
        fail = beats > 0 and rng.random() < 0.2
        dut.io_axi_bvalid.value = 0  # the previous stream's last B is not repeated in the start cycle
        dut.io_data_valid.value = 0
        p_src, p_aw, p_w = rng.choice([1.0, 0.5, 0.1]), rng.choice([1.0, 0.4]), rng.choice([1.0, 0.4])
        dut.io_start_valid.value = 1
        dut.io_start_bits_addr.value = addr
        dut.io_start_bits_bytes.value = 0
        dut.io_start_bits_stream.value = 1
        await next_cycle(dut)
        dut.io_start_valid.value = 0
        queue: deque[int] = deque()  # indexes of beats in the source, not yet taken
        given = taken = 0
        announced = 0  # beats covered by accepted AWs
        bursts: deque[list[int]] = deque()  # [addr, beats, sent]
        bq: deque[tuple[int, int]] = deque()
        written = bytearray()
        cycle = done_count = 0
        error_seen = False
        ended = False
        held: tuple[int, int] | None = None  # the AW presented and not accepted
        while True:
            if given < beats and rng.random() < p_src:
                queue.append(given)
                given += 1
            # `end`: no more beats will be added (the engine raises it with beats still queued)
            ended = given == beats and (ended or rng.random() < 0.5)
            dut.io_end.value = int(ended)
            dut.io_avail.value = len(queue)
            dut.io_data_valid.value = int(bool(queue))
            dut.io_data_bits.value = data[queue[0]] if queue else 0
            dut.io_strb.value = strbs[queue[0]] if queue else 0
            dut.io_axi_awready.value = int(rng.random() < p_aw)
            dut.io_axi_wready.value = int(rng.random() < p_w)
            b_now = bool(bq) and bq[0][0] <= cycle
            dut.io_axi_bvalid.value = int(b_now)
            dut.io_axi_bresp.value = bq[0][1] if b_now else 0
            await settle()
            if sig(dut.io_axi_awvalid):  # AXI: held as first presented until accepted (beats arrive meanwhile)
                now = (sig(dut.io_axi_awaddr), sig(dut.io_axi_awlen) + 1)
                assert held is None or held == now, f"stream {n}: AW changed while not accepted: {held} -> {now}"
                held = None if sig(dut.io_axi_awready) else now
            else:
                assert held is None, f"stream {n}: AW VALID dropped before READY"
            if sig(dut.io_axi_awvalid) and sig(dut.io_axi_awready):
                a, ln = sig(dut.io_axi_awaddr), sig(dut.io_axi_awlen) + 1
                assert a == addr + 64 * announced, f"stream {n}: AW {a:#x} out of order"
                assert (a & 0xFFF) + 64 * ln <= 4096, f"stream {n}: AW {a:#x} x{ln} crosses 4 KiB"
                assert announced + ln <= taken + len(queue), f"stream {n}: AW announces beats the source lacks"
                announced += ln
                bursts.append([a, ln, 0])
            if sig(dut.io_axi_wvalid) and sig(dut.io_axi_wready):
                assert bursts, f"stream {n}: W before its AW"
                b = bursts[0]
                assert sig(dut.io_axi_wlast) == int(b[2] == b[1] - 1), f"stream {n}: WLAST"
                k = queue[0]
                assert sig(dut.io_axi_wdata) == data[k] and sig(dut.io_axi_wstrb) == strbs[k], f"stream {n}: beat {k}"
                for i in range(64):
                    if strbs[k] >> i & 1:
                        written.append(data[k] >> (8 * i) & 0xFF)
                b[2] += 1
                if b[2] == b[1]:
                    bursts.popleft()
                    bq.append((cycle + rng.randrange(0, 20), 2 if fail and not error_seen else 0))
                    error_seen = error_seen or fail
            if sig(dut.io_data_valid) and sig(dut.io_data_ready):
                queue.popleft()
                taken += 1
            if os.environ.get("DMA_TRACE"):
                cocotb.log.info(
                    "s%d c%d q%s aw %d/%d w %d/%d b %d bq %s inFlight=%s end=%d done=%d",
                    n,
                    cycle,
                    list(queue),
                    sig(dut.io_axi_awvalid),
                    sig(dut.io_axi_awready),
                    sig(dut.io_axi_wvalid),
                    sig(dut.io_axi_wready),
                    b_now,
                    list(bq),
                    dut.inFlight.value,
                    sig(dut.io_end),
                    sig(dut.io_done_valid),
                )
            if sig(dut.io_done_valid):
                done_count += 1
                assert sig(dut.io_done_bits) == int(fail), f"stream {n}: done error bit {sig(dut.io_done_bits)}"
                assert not bursts and not queue and given == beats, f"stream {n}: done too early"
                # in the cycle of the last B, or at `end` when every B came before it (none for no beats)
                assert len(bq) - int(b_now) == 0, f"stream {n}: done with B responses outstanding"
            if b_now:
                bq.popleft()
            await next_cycle(dut)
            cycle += 1
            if done_count:
                break
            assert cycle < 100000, f"stream {n}: no done"
        want = b"".join(bytes(data[k] >> (8 * i) & 0xFF for i in range(64) if strbs[k] >> i & 1) for k in range(beats))
        assert bytes(written) == want, f"stream {n}: bytes differ"
        assert sig(dut.io_idle) == 1
        dut.io_end.value = 0
        dut.io_start_bits_stream.value = 0
        cover("stream:" + ("empty" if not beats else "error" if fail else "ok"))
    dump_coverage(COVERAGE_NAME + "_stream")
