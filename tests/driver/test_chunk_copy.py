# SPDX-License-Identifier: Apache-2.0
"""CHUNK_COPY through the driver (docs/spec.md section 7.1, CXLT_IOC_CHUNK_COPY): the device copies
an owned chunk by DMA into the driver's buffer and the CLI writes it to a file; the file holds
the chunk's bytes as the devdax mapping reads them; the copy clears no dirty bit; another
owner's and a free chunk are refused with the errno the uapi
names. (Bus mastering off, -EIO: the QEMU device's own test; the DMA harvest's driver test
covers the driver's error path of a failed DMA.)"""

from __future__ import annotations

from conftest import DAX, TrackerFactory


def test_chunk_copy_gives_the_chunks_bytes_and_keeps_its_dirty_bits(tracker_vm: TrackerFactory) -> None:
    t = tracker_vm()
    assert "chunk_copy: 1" in t.run("cxltrack status").out
    shift = t.cfg.chunk_shift
    size = 1 << shift
    chunk = 5
    dpa = chunk << shift
    page = dpa >> t.cfg.page_shift
    cpages = size >> t.cfg.page_shift
    t.run(f"cxltrack chunk assign {chunk} 9 --keep")
    # the driver scrubbed the chunk before the assignment (every page dirty): start afresh
    t.run(f"cxltrack harvest dirty {page} {cpages} --clear")
    pokes = {dpa + 8: "0123456789abcdef", dpa + 3 * 4096 + 100: "c0ffee", dpa + size - 8: "feedfacecafebeef"}
    for addr, hexbytes in pokes.items():
        t.run(f"cxlt-test poke {DAX} {addr:#x} {hexbytes}")
    written = sorted({(a - dpa) >> t.cfg.page_shift for a in pokes})
    out = t.run(f"cxltrack chunk copy {chunk} 9 /tmp/c", timeout=120).out
    assert f"copied={size}" in out, out
    # The chunk was scrubbed before its assignment: the copy is zero but for the poked bytes
    # (all non-zero), which read the same through the devdax mapping (the CPU path).
    nonzero = t.run("cmp -l /tmp/c /dev/zero 2>/dev/null | wc -l", check=False).out.strip()
    assert nonzero == str(sum(len(h) // 2 for h in pokes.values())), nonzero
    for addr, hexbytes in pokes.items():
        assert t.run(f"cxlt-test peek {DAX} {addr:#x} {len(hexbytes) // 2}").out.strip() == hexbytes
        got = t.run(f"dd if=/tmp/c bs=1 skip={addr - dpa} count={len(hexbytes) // 2} 2>/dev/null | od -An -tx1 -v").out
        assert "".join(got.split()) == hexbytes, (addr, got)
    # No tracking effect: every poked page is still dirty, no other page became dirty.
    got = t.run(f"cxltrack harvest dirty {page} {cpages} --clear").out.split()
    assert got == [str(page + p) for p in written], got
    # Refusals: another owner (EPERM), a free chunk (ENOENT)
    r = t.run(f"cxltrack chunk copy {chunk} 8 /tmp/x", check=False)
    assert r.status == 1 and "not permitted" in r.err, (r.status, r.err)
    r = t.run(f"cxltrack chunk copy {chunk + 1} 9 /tmp/x", check=False)
    assert r.status == 1 and "wrong state" in r.err, (r.status, r.err)
    out = t.run(f"cxltrack chunk copy {chunk} 9 /tmp/c2", timeout=120).out
    assert f"copied={size}" in out
    t.run("cmp /tmp/c /tmp/c2")
    t.run(f"cxltrack chunk release {chunk} 9")
