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


STACK_END = (
    "[   28.4] kvm: kvm [2386]: vcpu0, guest rIP: 0xffffffffa2c9d458 Unhandled WRMSR(0xc0010007) = 0xffff\n"
    "[   34.8] Kernel panic - not syncing: corrupted stack end detected inside scheduler\n"
    "[   34.8] CPU: 0 UID: 0 PID: 301 Comm: CPU 0/KVM Tainted: G           OE      6.12.95+deb12-amd64 #1\n"
    "[   34.8] Call Trace:\n"
)


def test_the_stack_end_panic_in_a_vcpu_thread_is_recognised() -> None:
    from cxltrack.harness.kernlog import vcpu_stack_end_panic

    assert vcpu_stack_end_panic(STACK_END) == (
        "[   34.8] Kernel panic - not syncing: corrupted stack end detected inside scheduler"
    )


def test_the_stack_end_panic_elsewhere_or_after_another_report_is_not() -> None:
    from cxltrack.harness.kernlog import vcpu_stack_end_panic

    # another thread: the L2 QEMU's main thread, or a tool of the test
    assert vcpu_stack_end_panic(STACK_END.replace("Comm: CPU 0/KVM", "Comm: ld-linux-x86-64")) is None
    assert vcpu_stack_end_panic(STACK_END.replace("Comm: CPU 0/KVM", "Comm: CPU 0/KVMx")) is None
    # after a warning: the warning is the report, and it may be the code under test's
    warned = "[   30.1] WARNING: CPU: 1 PID: 77 at arch/x86/kvm/mmu/mmu.c:7000 kvm_mmu_zap+0x1/0x2\n" + STACK_END
    assert vcpu_stack_end_panic(warned) is None
    # another panic in a vCPU thread
    assert (
        vcpu_stack_end_panic(STACK_END.replace("corrupted stack end detected inside scheduler", "Fatal exception"))
        is None
    )
    # the panic line alone, its thread not printed
    assert vcpu_stack_end_panic(STACK_END.splitlines()[1]) is None
    assert vcpu_stack_end_panic("") is None
