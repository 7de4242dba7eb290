# SPDX-License-Identifier: Apache-2.0
"""The cxltrack scenario on the reference model (the device without a VM:
QEMU, the driver and a guest are not needed).

1. Pre-copy migration: a writer dirties guest pages while the migration loop
   harvests the device's dirty log and sends only what changed; the final
   round stops the writer. The destination copy is then compared with the
   source byte for byte.
2. Swap mapper: disk-backed pages are associated with their blocks, the
   writer rewrites some, and discard-if-clean tells which need no swap write.
3. False-reads preventer: a slot written in full needs no disk read; a
   partial one is merged over the page read from disk.
4. Swap tier: two VMs take chunks, one releases them and they are scrubbed.

Every count printed is checked against ground truth kept by the scenario.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass, field

from cxltrack.config import DeviceConfig, load, named
from cxltrack.model import Device, ModelDriver
from cxltrack.regs import Event, Op, Status


class ScenarioError(AssertionError):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise ScenarioError(what)


@dataclass
class Report:
    rows: list[tuple[str, str]] = field(default_factory=list)

    def add(self, name: str, value: object) -> None:
        self.rows.append((name, str(value)))

    def print(self) -> None:
        width = max(len(n) for n, _ in self.rows)
        print("cxltrack demo (reference model)")
        for name, value in self.rows:
            print(f"  {name:<{width}}  {value}")


class Writer:
    """A guest writing 8-byte values, 90 % into a hot tenth of its pages."""

    def __init__(self, dev: Device, pages: int, rng: random.Random) -> None:
        self.dev, self.pages, self.rng = dev, pages, rng
        self.hot = max(1, pages // 10)
        self.ps = dev.cfg.page_size
        self.written: set[int] = set()

    def write(self) -> None:
        r = self.rng
        page = r.randrange(self.hot) if r.random() < 0.9 else r.randrange(self.pages)
        self.dev.mem_write(page * self.ps + 8 * r.randrange(self.ps // 8), r.getrandbits(64).to_bytes(8, "little"))
        self.written.add(page)


def harvest_while_writing(drv: ModelDriver, pages: int, writer: Writer | None, per_step: int) -> set[int]:
    """One HARVEST_DIRTY with CLEAR over the guest, with writer requests
    interleaved between the harvest engine's atomic steps."""
    dev = drv.dev
    out: set[int] = set()
    for start in range(0, pages, 32768):
        count = min(32768, pages - start)
        drv.launch(Op.HARVEST_DIRTY, start, count, clear=True)
        while dev.busy:
            dev.step()
            for _ in range(per_step if writer else 0):
                writer.write()  # type: ignore[union-attr]
        res = drv.result()
        check(res.code == Status.OK, f"harvest failed: {res.code.name}")
        bits = int.from_bytes(dev.result[: count // 8], "little")
        out |= {start + i for i in range(count) if bits >> i & 1}
    return out


def precopy(drv: ModelDriver, rep: Report, pages: int, rng: random.Random, rounds: int) -> None:
    dev = drv.dev
    ps = dev.cfg.page_size
    writer = Writer(dev, pages, rng)
    for p in range(pages):  # the guest's initial contents
        dev.mem_write(p * ps, rng.getrandbits(64).to_bytes(8, "little"))
    harvest_while_writing(drv, pages, None, 0)  # start the dirty log clean
    dest: dict[int, bytes] = {}
    sent = 0

    def send(batch: set[int] | range) -> None:
        nonlocal sent
        for p in batch:
            dest[p] = dev.mem.read(p * ps, ps)
        sent += len(batch)

    # Round 0 sends everything (nothing is known to be clean yet); the guest
    # keeps writing while pages are on the wire.
    send(range(pages))
    for _ in range(pages // 4):
        writer.write()
    per_round = [pages]
    for _ in range(1, rounds):
        dirty = harvest_while_writing(drv, pages, writer, 2)
        send(dirty)
        for _ in range(len(dirty) // 2):
            writer.write()
        per_round.append(len(dirty))
        if len(dirty) < pages // 100:
            break
    # Final round: pause the writer (on real hardware also write back the
    # CPU caches, docs/spec.md section 9), harvest, send, compare.
    final = harvest_while_writing(drv, pages, None, 0)
    send(final)
    per_round.append(len(final))
    mismatched = [p for p in range(pages) if dest[p] != dev.mem.read(p * ps, ps)]
    check(not mismatched, f"destination differs from source in {len(mismatched)} pages: a lost dirty bit")
    naive = pages * len(per_round)
    rep.add("pre-copy guest pages", pages)
    rep.add("pre-copy rounds", len(per_round))
    rep.add("pages sent per round (dirty log)", " ".join(map(str, per_round)))
    rep.add("pages sent, dirty log", sent)
    rep.add("pages sent, every page every round", naive)
    rep.add("saved by the dirty log", f"{100 * (1 - sent / naive):.1f} %")
    rep.add("destination == source after final round", "yes (all pages compared)")


def swap_mapper(drv: ModelDriver, rep: Report, rng: random.Random) -> None:
    dev = drv.dev
    ps = dev.cfg.page_size
    base, n = 1000, 200
    disk = 3
    for i in range(n):
        check(drv.cmd(Op.BAT_SET, base + i, 50_000 + i, disk).code == Status.OK, "BAT_SET failed")
    rewritten = set(rng.sample(range(base, base + n), 37))
    for p in rewritten:
        dev.mem_write(p * ps + 64, b"\xab" * 8)
    clean = dirty = 0
    for i in range(n):
        res = drv.cmd(Op.BAT_DISCARD, base + i)
        was_clean = bool(res.result1 >> 32 & 1)
        check(was_clean == (base + i not in rewritten), f"page {base + i}: discard said clean={was_clean}")
        if was_clean:
            check(res.result0 == 50_000 + i and res.result1 & 0xFFFF == disk, "wrong association returned")
            clean += 1
        else:
            dirty += 1
    rep.add("associated disk-backed pages", n)
    rep.add("rewritten by the guest", len(rewritten))
    rep.add("discarded clean (no swap write)", clean)
    rep.add("needed a swap write", dirty)


def false_reads(drv: ModelDriver, rep: Report, rng: random.Random) -> None:
    dev = drv.dev
    ps = dev.cfg.page_size
    drv.pop_events()
    # Full: the guest zeroes a reallocated page; no disk read at all.
    full = drv.cmd(Op.SLOT_ALLOC, 0xF00D).result0
    drv.window_write(full, 0, bytes(ps))
    events = drv.pop_events()
    check((int(Event.SLOT_FULL), full, 0xF00D) in [(e[0], e[1], e[3]) for e in events], "no SLOT_FULL event")
    check(drv.cmd(Op.SLOT_MERGE, full, 3000).result0 == ps, "full merge")
    check(dev.mem.read(3000 * ps, ps) == bytes(ps), "full page not installed")
    # Partial: 100 scattered bytes written; old contents read "from disk" into
    # the destination, then merged under the mask.
    old = bytes(rng.getrandbits(8) for _ in range(ps))
    part = drv.cmd(Op.SLOT_ALLOC, 0xBEEF).result0
    new: dict[int, int] = {}
    for off in rng.sample(range(ps), 100):
        new[off] = rng.getrandbits(8)
        drv.window_write(part, off, bytes([new[off]]))
    for off in range(0, ps, 8):  # the disk read (DMA into the destination page)
        dev.mem_write(3001 * ps + off, old[off : off + 8])
    res = drv.cmd(Op.SLOT_MERGE, part, 3001)
    check(res.code == Status.OK and res.result0 == len(new), "partial merge")
    got = dev.mem.read(3001 * ps, ps)
    wrong = [i for i in range(ps) if got[i] != new.get(i, old[i])]
    check(not wrong, f"{len(wrong)} bytes merged wrongly")
    rep.add("slot written in full: disk reads", "0 (SLOT_FULL, merged without reading)")
    rep.add("slot written partially: bytes from guest", f"{len(new)} of {ps}, merged over 1 disk read, 0 wrong")


def swap_tier(drv: ModelDriver, rep: Report) -> None:
    dev = drv.dev
    for c in range(4):
        check(drv.cmd(Op.CHUNK_ASSIGN, 100 + c, 1 + c % 2).code == Status.OK, "assign")
    vm1 = drv.cmd(Op.CHUNK_LIST, 0, 1).result0
    for c in (100, 102):
        check(drv.cmd(Op.CHUNK_RELEASE, c, 1).code == Status.OK, "release")
    check(drv.cmd(Op.CHUNK_ASSIGN, 100, 2).code == Status.BUSY, "assign during scrub must be refused")
    dev.settle()
    scrubbed = [e for e in drv.pop_events() if e[0] == Event.SCRUB_DONE]
    rep.add("swap tier: VM1 chunks, released+scrubbed", f"{vm1}, {len(scrubbed)}")
    rep.add("swap tier: free chunks after scrub", drv.cmd(Op.CHUNK_LIST, 0, 0).result0)


def run(cfg: DeviceConfig, pages: int, seed: int, rounds: int) -> Report:
    rng = random.Random(seed)
    dev = Device(cfg)
    drv = ModelDriver(dev)
    rep = Report()
    rep.add("device", f"{cfg.capacity_bytes >> 20} MiB, {cfg.pages} pages of {cfg.page_size} B, seed {seed}")
    precopy(drv, rep, pages, rng, rounds)
    swap_mapper(drv, rep, rng)
    false_reads(drv, rep, rng)
    swap_tier(drv, rep)
    return rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", help="device configuration TOML (default: the embedded config/default.toml)")
    ap.add_argument("--pages", type=int, default=4096, help="guest pages in the pre-copy scenario (default 4096)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=8, help="maximum pre-copy rounds before the final one")
    args = ap.parse_args(argv)
    cfg = load(args.config) if args.config else named("default")
    if not 64 <= args.pages <= min(cfg.pages, 65536) or args.pages % 64:
        ap.error(f"--pages must be a multiple of 64 in 64..{min(cfg.pages, 65536)}")
    try:
        rep = run(cfg, args.pages, args.seed, args.rounds)
    except ScenarioError as exc:
        print(f"demo: FAILED: {exc}", file=sys.stderr)
        return 1
    rep.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
