# SPDX-License-Identifier: Apache-2.0
"""Live migration between two VMs (L2 QEMUs) of one host over a Unix socket, with a writer
dirtying the VM's device-backed memory: the destination's memory equals the source's at the
switch-over, page by page, with each source of the device node's dirty bits: KVM's write
protection (stock), the host QEMU's cxltrack-dirty-log client (KVM then does not log that
memory) and, when the host runs the patched KVM, KVM's device dirty log, which takes no
write-protect fault. The small version of `make bench-migrate`."""

from __future__ import annotations

import pytest

from cxltrack.harness.migration import MigrationResult, has_device_dirty_log, migrate_and_compare
from cxltrack.harness.nested import Host


def test_page_compare_finds_one_changed_byte(host: Host) -> None:
    """The comparison the migration tests rely on can fail."""
    host.run("head -c 1048576 /dev/urandom > /run/cxlt/a.mem && cp /run/cxlt/a.mem /run/cxlt/b.mem")
    same = host.run("cxlt-pagecmp /run/cxlt/a.mem /run/cxlt/b.mem", check=False)
    assert same.status == 0 and "pages=256 equal=256 differ=0" in same.out, same.out
    host.run("printf x | dd of=/run/cxlt/b.mem bs=1 seek=12345 conv=notrunc 2>/dev/null")
    bad = host.run("cxlt-pagecmp /run/cxlt/a.mem /run/cxlt/b.mem", check=False)
    assert bad.status == 1 and "differ=1" in bad.out and "differ page 3 " in bad.out, bad.out
    host.run("rm -f /run/cxlt/a.mem /run/cxlt/b.mem")


def check_exact(r: MigrationResult) -> None:
    assert r.pages_compared == (192 + 128) * 256, r.line()
    assert r.pages_equal == r.pages_compared, f"{r.differ[:8]} {r.line()}"
    assert r.pages_sent > 0 and r.rounds >= 2, r.line()


def test_migration_memory_equal_at_switch_over(host: Host, migrations: list[str]) -> None:
    modes = ["stock", "qemu"] + (["device"] if has_device_dirty_log(host) else [])
    results = {}
    for mode in modes:
        r = migrate_and_compare(host, mode, writer_pages=2048, writer_seconds=15)
        migrations.append(r.line())
        results[mode] = r
        check_exact(r)
    # write-protect faults on the device node while migrating (traced in the host's KVM)
    assert results["stock"].wp_faults > 0, results["stock"].line()
    for mode in modes[1:]:
        assert results[mode].wp_faults == 0, results[mode].line()
    q = results["qemu"].client
    assert q["harvests"] >= results["qemu"].rounds and q["dirty-pages"] > 0, results["qemu"].line()


@pytest.mark.skip(
    reason="needs a writer that outlasts round 1 yet stops before the switch-over: a 15 s writer and "
    "once a 60 s one ended before round 1 reached the device node (nothing to miss, 81920/81920 "
    "equal), and one that runs on keeps the migration from converging (its shifted dirty pages are "
    "re-sent every round). Passed twice (256 pages wrong). Stopping the writer after the third "
    "bitmap sync did not let it converge either: the shifted range overlaps the destination's first "
    "2 MiB, rewritten by the incoming migration; shift it elsewhere (not done yet)"
)
def test_qemu_client_harvesting_the_wrong_pages_loses_writes(host: Host, migrations: list[str]) -> None:
    """Negative control: KVM leaves the device node to the QEMU client, so a client whose
    harvest is off by 2 MiB reports the writer's pages 512 places too low, misses them, and
    the copy differs. Shows that the client's bits, not KVM's, carry the device node. (Not the
    destination's range: the pages the destination receives would be reported dirty again at
    the source and sent again, and the migration would never converge.)

    The writer must write after round 1 has sent the device node and stop before the
    switch-over (see the skip reason)."""
    wrong = host.dpa_base() + 2 * 1024 * 1024
    r = migrate_and_compare(host, "qemu", writer_pages=2048, writer_seconds=60, client_dpa=wrong, resume=False)
    migrations.append(f"(negative control) {r.line()}")
    assert r.pages_equal < r.pages_compared, r.line()
    assert all(int(d.split()[2]) >= 192 * 256 for d in r.differ), f"differences outside the device node: {r.differ}"
