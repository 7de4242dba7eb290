# SPDX-License-Identifier: Apache-2.0
"""The swap mapper's memory manager (issue 13 item 2, docs/swap-design.md section 2): the host
QEMU keeps the VM's device node within a resident limit set at run time, picks victims by the
tracker's accessed bits, drops pages that still equal their disk block with no swap write
(discard-if-clean) and reads them back from the image with read-ahead, writes the others to
swap. Every page the VM reads back is checked against its disk block (cxlt-diskread) or its
pattern (cxl-memtest); the same workloads without offload are the baseline, whose silent swap
writes and stale swap reads the manager counts the same way. The experiment at full size:
`make experiments-vswapper` (cxltrack.experiments.vswapper)."""

from __future__ import annotations

from cxltrack.harness.nested import MiB
from cxltrack.harness.pytest_plugin import BootHost
from cxltrack.harness.vswapper import make_disk, run_workloads

BLOCKS = 1024  # 4 MiB disk of 4 KiB blocks, each stamped with its number (Host.make_disk)
LIMIT = 2 * MiB
ANON = 4 * MiB


def test_memory_manager_with_and_without_offload(boot_host: BootHost) -> None:
    host = boot_host(region="kmem")
    make_disk(host, BLOCKS)
    runs = [run_workloads(host, offload, BLOCKS, LIMIT, ANON) for offload in (True, False)]
    for r in runs:
        print(f"[nested] memory manager offload={r.offload}: {r.counters} {r.seconds}")
        # every page the VM read back held its block or its pattern
        assert r.wrong_pages == 0 and not r.failures, r.failures
        c = r.counters
        assert c["mm-errors"] == 0, c
        # the limit held (give or take the batch being evicted)
        assert c["resident-pages"] <= LIMIT // 4096 + 64, c
        # anonymous pages went to swap and came back
        assert c["swap-writes"] > 0 and c["faults-swap"] > 0, c
    dev, base = runs[0].counters, runs[1].counters
    # With the device: the process's clean disk cache was dropped with no swap write and read back
    # from the image, with read-ahead along the disk.
    assert dev["evicted-clean"] >= BLOCKS // 4, dev
    # A page whose association went without a write (the host kernel moved it: the copy has
    # none) is written to swap and counted here: a handful in some runs, never the bulk.
    assert dev["silent-writes"] * 20 <= base["silent-writes"], (dev, base)
    assert dev["faults-block"] > 0 and dev["readahead-pages"] > 0, dev
    # The baseline wrote the same pages to swap: silent writes, measured byte by byte.
    assert base["evicted-clean"] == 0 and base["faults-block"] == 0, base
    assert base["silent-writes"] >= BLOCKS // 4, base
    # Stale reads: the baseline brought evicted pages back for a disk read to overwrite them;
    # with the device they got fresh pages instead.
    assert base["stale-reads"] > 0 and base["stale-reads-avoided"] == 0, base
    assert dev["stale-reads"] == 0 and dev["stale-reads-avoided"] > 0, dev
    # Double paging (the VM writes pages the host evicted to its disk, with O_DIRECT): counted
    # in both; neither avoids it yet (Tesseract's copy is not built).
    assert base["double-paging"] > 0 and dev["double-paging"] > 0, (base, dev)
    print(
        f"[nested] memory manager: double_paging_base={base['double-paging']} "
        f"double_paging_dev={dev['double-paging']} silent_writes_base={base['silent-writes']} "
        f"silent_writes_dev={dev['silent-writes']} "
        f"stale_reads_base={base['stale-reads']} stale_reads_dev={dev['stale-reads']} "
        f"run_len_base={base['host-read-pages'] / max(base['host-reads'], 1):.2f} "
        f"run_len_dev={dev['host-read-pages'] / max(dev['host-reads'], 1):.2f}"
    )
