# SPDX-License-Identifier: Apache-2.0
"""The first kernel report in a VM's console heads the diagnostics of a VM that was reset."""

from __future__ import annotations

from cxltrack.harness.kernlog import first_report

CONSOLE = """\
[    1.0] Run /init as init process
ok agent ready
[  812.3] BUG: unable to handle page fault for address: ffff888012345000
[  812.3] #PF: supervisor read access in kernel mode
[  812.3] RIP: 0010:copy_page+0x7/0x10
[  812.4] Kernel panic - not syncing: Fatal exception
[  812.4] Rebooting in 1 seconds..
SeaBIOS (version 1.16.2-debian-1.16.2-1)
"""


def test_the_first_report_and_what_follows_it() -> None:
    report = first_report(CONSOLE, lines=3)
    assert report == [
        "[  812.3] BUG: unable to handle page fault for address: ffff888012345000",
        "[  812.3] #PF: supervisor read access in kernel mode",
        "[  812.3] RIP: 0010:copy_page+0x7/0x10",
    ]


def test_a_panic_without_an_oops_is_found() -> None:
    assert first_report("boot\n[ 9.1] Kernel panic - not syncing: VFS\nreboot\n", lines=1) == [
        "[ 9.1] Kernel panic - not syncing: VFS"
    ]


def test_a_quiet_console_has_no_report() -> None:
    assert first_report("[    1.0] Run /init as init process\nok agent ready\nSeaBIOS\n") == []


def test_lockdep_reports_are_splats_and_its_banner_is_not() -> None:
    from cxltrack.harness.kernlog import SPLAT

    assert not SPLAT.search("[    0.000000] rcu: \tRCU lockdep checking is enabled.")
    for line in (
        "[   23.743405] WARNING: possible circular locking dependency detected",
        "[   23.905876] INFO: lockdep is turned off.",
        "[    5.100000] INFO: possible irq lock inversion dependency detected",
        "[    5.100000] DEBUG_LOCKS_WARN_ON(1)",
        "[   23.716353] BUG: workqueue leaked atomic, lock or RCU: kworker/u8:2[38]",
        "[    1.326863] BUG: KASAN: wild-memory-access in rcu_is_watching+0x20/0x50",
    ):
        assert SPLAT.search(line), line
