# SPDX-License-Identifier: Apache-2.0
"""Host.wedge_report() on a host gone with the "corrupted stack end" panic in an L2 QEMU's
vCPU thread: a lost host (the test runs once more), not the code under test's failure."""

from __future__ import annotations

from dataclasses import dataclass

from cxltrack.harness.nested import Host

PANIC = (
    "[   28.4] kvm: kvm [2386]: vcpu0, guest rIP: 0xffffffffa2c9d458 Unhandled WRMSR(0xc0010007) = 0xffff\n"
    "[   34.8] Kernel panic - not syncing: corrupted stack end detected inside scheduler\n"
    "[   34.8] CPU: 0 UID: 0 PID: 301 Comm: {comm} Tainted: G           OE      6.12.95+deb12-amd64 #1\n"
)


@dataclass
class GoneVm:
    """What wedge_report() reads of a host's L0 QEMU that has exited."""

    console: str
    debug_log: str = ""

    def alive(self) -> bool:
        return False

    def console_text(self) -> str:
        return self.console

    def qemu_log_text(self) -> str:
        return ""

    def debug_log_text(self) -> str:
        return self.debug_log


class QuietWatch:
    def poll(self) -> str | None:
        return None


def host_with(console: str, debug_log: str = "") -> Host:
    host = Host.__new__(Host)  # no QEMU, no LockupWatch thread: only what wedge_report() reads
    host.vm = GoneVm(console, debug_log)  # type: ignore[assignment]
    host.watch = QuietWatch()  # type: ignore[assignment]
    host.stuck = None
    host.wedged = None
    return host


def test_the_stack_end_panic_in_a_vcpu_thread_loses_the_host() -> None:
    why = host_with(PANIC.format(comm="CPU 0/KVM")).wedge_report()
    assert why is not None and "corrupted stack end" in why and "cause open" in why


def test_the_same_panic_in_another_thread_is_the_tests() -> None:
    assert host_with(PANIC.format(comm="ld-linux-x86-64")).wedge_report() is None


def test_a_panic_after_a_triple_fault_logged_is_still_the_panics_thread_that_decides() -> None:
    # the triple fault after a kernel report is that report's (vm.machine_lost_to_platform)
    assert host_with(PANIC.format(comm="cxlt-racewrite"), "Triple fault\n").wedge_report() is None
    assert host_with(PANIC.format(comm="CPU 1/KVM"), "Triple fault\n").wedge_report() is not None
