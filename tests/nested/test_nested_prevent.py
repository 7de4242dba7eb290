# SPDX-License-Identifier: Apache-2.0
"""VSwapper's False Reads Preventer in the memory manager (issue 14, docs/swap-design.md section
5): the host QEMU's manager flags the pages it evicts with KVM_SET_PREVENT_READS, the L2
guest's stores to them go into slots of the device, a page written whole comes back with no
read, and anything else (loads of bytes not written, slot timeouts, scattered stores, no free
slot) fetches the old content before the slot is merged over it. Every byte the guest wrote
or reads is checked against a shadow copy (cxlt-prevent)."""

from __future__ import annotations

import re

from cxltrack.harness.nested import Host, MemoryManager, MiB, VmSpec, repeat_on_silent_reset
from cxltrack.harness.pytest_plugin import BootHost
from cxltrack.harness.vswapper import DISK, counters, make_disk, managed_vm, run_false_reads

BLOCKS = 256
LIMIT = 2 * MiB
ANON = 4 * MiB


def prevent_spec(name: str, limit: int = LIMIT, prevent_max: int = 256, timeout: int = 0) -> VmSpec:
    return managed_vm(
        name,
        MemoryManager(
            resident_limit=limit, period_ms=50, prevent=True, prevent_max=prevent_max, prevent_timeout=timeout
        ),
    )


@repeat_on_silent_reset("cxlt-prevent")
def run_tool(host: Host, spec: VmSpec, args: str) -> tuple[str, int, dict[str, int]]:
    """cxlt-prevent `args` in a VM of `spec`: its output, exit status and the manager's counters."""
    host.run(f"cp {DISK}.orig {DISK}")
    vm = host.start_vm(spec)
    try:
        res = vm.run(f"cxlt-prevent {args}", timeout=1200, check=False)
        c = counters(vm)
    finally:
        vm.shutdown()
        host.release(vm)
    print(f"[nested] prevent {spec.name}: {res.out.strip().splitlines()[-1:]} {c}")
    return res.out, res.status, c


def host_log_clean(host: Host) -> None:
    log = host.run("dmesg").out
    assert not re.search(r"BUG:|WARNING:|Oops|general protection", log), log[-4000:]


def test_random_writes_to_flagged_pages_match_a_shadow(boot_host: BootHost) -> None:
    """Full pages (memset, rep stosq), ranges (rep movsb, memcpy, across page ends), small
    overlapping stores and loads, two vCPUs on one page: every byte equals the shadow, pages
    written whole came back with no read, the others were fetched."""
    host = boot_host(region="kmem")
    make_disk(host, BLOCKS)
    out, status, c = run_tool(host, prevent_spec("vm-prevent"), f"race 1 {ANON} 3 30 1")
    assert status == 0 and "ok prevent" in out, out
    assert c["mm-errors"] == 0, c
    assert c["prevent-flagged"] > 0 and c["prevent-unflagged"] > 0, c
    # whole pages: unflagged with no read, pages whose old content was in swap among them
    assert c["prevent-full"] > 0 and c["false-reads-avoided"] > 0, c
    # partial pages read back first (loads of bytes not written: exits)
    assert c["prevent-fetches"] > 0 and c["prevent-exits"] > 0, c
    host_log_clean(host)


def test_more_half_written_pages_than_slots(boot_host: BootHost) -> None:
    """Every page of 4 MiB, most of them evicted and flagged, gets its first half written front
    to back, one page after the other, with no slot timeout: the device's slots (8) are all
    open long before the end, so the later pages' stores find no free slot and exit to QEMU,
    which fetches the page, merges and applies the store on memory. Every byte checked."""
    host = boot_host(region="kmem")
    make_disk(host, BLOCKS)
    out, status, c = run_tool(host, prevent_spec("vm-slots"), f"partial 1 {ANON} 3")
    assert status == 0 and "ok partial" in out, out
    assert c["mm-errors"] == 0, c
    # far more flagged pages written than slots: most went through an exit (no free slot)
    assert c["prevent-flagged"] > 64 and c["prevent-exits"] > 16, c
    assert c["prevent-fetches"] > 16 and c["prevent-timeouts"] == 0, c
    host_log_clean(host)


def test_slot_timeout_fetches_half_written_pages(boot_host: BootHost) -> None:
    """The same half-written pages with the device's SLOT_TIMEOUT at 2000 ticks (2 ms of the
    device's clock, about VSwapper's 1 ms): the manager hears of the timeouts (eventfd) and
    fetches and merges the pages itself, before the guest needs them. Every byte checked."""
    host = boot_host(region="kmem")
    make_disk(host, BLOCKS)
    out, status, c = run_tool(host, prevent_spec("vm-timeout", timeout=2000), f"partial 1 {ANON} 3")
    assert status == 0 and "ok partial" in out, out
    assert c["mm-errors"] == 0, c
    assert c["prevent-timeouts"] > 16 and c["prevent-fetches"] >= c["prevent-timeouts"], c
    host_log_clean(host)


def test_false_reads_baseline_vs_prevent(boot_host: BootHost) -> None:
    """VSwapper's false reads, small (the experiment: make experiments-vswapper): a process
    fills 4 MiB of a VM kept within 2 MiB and exits, the host evicts its pages, another fills
    4 MiB again. Without the Preventer the host reads back pages the guest then overwrites whole;
    with it, pages written whole are unflagged with no read."""
    host = boot_host(region="kmem")
    make_disk(host, BLOCKS)
    base = run_false_reads(host, False, ANON, LIMIT)
    dev = run_false_reads(host, True, ANON, LIMIT)
    for r in (base, dev):
        print(f"[nested] false reads {r.mode}: {r.false_reads} fill {r.seconds:.1f} s {r.counters}")
        assert r.wrong_bytes == 0 and not r.failures, r.failures
        assert r.counters["mm-errors"] == 0, r.counters
    assert base.false_reads >= 128, base.counters
    # With the Preventer a page is read only when the guest began it while all 8 slots of the
    # device were taken (slots of full pages waiting for their merge): a handful in a run.
    assert dev.false_reads * 20 <= base.false_reads, (base.counters, dev.counters)
    assert dev.counters["prevent-full"] >= 128 and dev.counters["false-reads-avoided"] >= 128, dev.counters
    host_log_clean(host)
