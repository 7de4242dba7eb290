# SPDX-License-Identifier: Apache-2.0
"""Reading vCPU state from QEMU's HMP output (harness/vcpu.py), and the TCG thread mode,
without a VM. The wedged sample is what QEMU showed for vCPU 0 when a driver-suite request
never got an answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cxltrack.harness import Vm, VmConfig, cxl_type3_topology
from cxltrack.harness.vcpu import TIMER_VECTOR, VcpuState, parse_lapic, parse_registers, probe

REGS = """
CPU#0
RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000000 RDX=0000000000000000
RSI=0000000000000000 RDI=00000000000739ec RBP=ffffffff8b410940 RSP=ffffffff8b403e88
RIP=ffffffff9a4d1e9f RFL=00000216 [----AP-] CPL=0 II=0 A20=1 SMM=0 HLT=1
ES =0000 0000000000000000 00000000 00000000

CPU#1
RAX=0000000000000001 RBX=0000000000000000 RCX=0000000000000000 RDX=0000000000000001
RIP=00007f0011223344 RFL=00000246 [---Z-P-] CPL=3 II=0 A20=1 SMM=0 HLT=0
"""


def lapic(isr: str, irr: str, ppr: int) -> str:
    return (
        "dumping local APIC state for CPU 0 \n\n"
        "LVTT\t 0x000000ec active-hi edge                 one-shot     Fixed  (vec 236)\n"
        "Timer\t DCR=0x3 (divide by 16) initial_count = 62 current_count = 0\n"
        f"ISR\t {isr}\nIRR\t {irr}\n\n"
        f"APR 0x00 TPR 0x10 DFR 0x0f LDR 0x00 PPR 0x{ppr:02x}\n"
    )


WEDGED = lapic("251 ", "236 251 ", 0xF0)
IDLE = lapic("(none)", "(none)", 0x10)


def test_parse_registers_and_lapic() -> None:
    assert parse_registers(REGS) == {0: (0xFFFFFFFF9A4D1E9F, True, True), 1: (0x7F0011223344, False, True)}
    assert parse_lapic(WEDGED) == ([251], [236, 251], 0xF0)
    assert parse_lapic(IDLE) == ([], [], 0x10)
    assert parse_lapic(lapic("49(level) ", "(none)", 0x30)) == ([49], [], 0x30)


def test_wedged_only_when_every_pending_interrupt_is_masked_by_one_in_service() -> None:
    def state(halted: bool, ie: bool, text: str) -> VcpuState:
        isr, irr, ppr = parse_lapic(text)
        return VcpuState(0, 0, halted, ie, isr, irr, ppr)

    wedged = state(True, True, WEDGED)
    assert wedged.wedged
    assert "WEDGED: vector 0xfb is still in service" in wedged.describe() and "timer" in wedged.describe()
    assert TIMER_VECTOR in wedged.irr
    assert not state(True, True, IDLE).wedged  # plain idle
    assert not state(False, True, WEDGED).wedged  # running: will EOI
    assert not state(True, False, WEDGED).wedged  # interrupts off: not an APIC matter
    assert not state(True, True, lapic("49 ", "236 ", 0x30)).wedged  # the timer outranks vector 0x31


def test_a_lost_wakeup_is_halted_with_an_interrupt_it_should_take() -> None:
    """What QEMU showed for an L1 host's vCPU 0 (2026-11-28) when the host's agent went
    unanswered: halted, interrupts enabled, nothing in service, 0x21, the timer and 0xfb
    pending above PPR 0x10."""

    def state(halted: bool, ie: bool, text: str) -> VcpuState:
        isr, irr, ppr = parse_lapic(text)
        return VcpuState(0, 0, halted, ie, isr, irr, ppr)

    lost = state(True, True, lapic("(none)", "33 236 251 ", 0x10))
    assert lost.lost_wakeup and not lost.wedged
    assert "WAKEUP LOST" in lost.describe() and "its timer among them" in lost.describe()
    assert not state(True, True, IDLE).lost_wakeup  # plain idle
    assert not state(False, True, lapic("(none)", "236 ", 0x10)).lost_wakeup  # running: takes it
    assert not state(True, False, lapic("(none)", "236 ", 0x10)).lost_wakeup  # interrupts off
    assert not state(True, True, lapic("236 ", "225 ", 0xE0)).lost_wakeup  # masked by the one in service
    assert not state(True, True, WEDGED).lost_wakeup  # the masked kind is `wedged`


def test_a_lost_wakeup_counts_only_when_the_vcpu_thread_sleeps(tmp_path: Path, monkeypatch: Any) -> None:
    """stuck_vcpus(): a halted vCPU with an interrupt it should take, seen so twice, is stuck
    only if its QEMU thread is asleep (not woken); a runnable thread is a starved one, which the
    host runs soon. The masked kind does not depend on the thread."""
    vm = Vm(VmConfig(qemu=Path("qemu"), image=_Image(), topology=cxl_type3_topology(), workdir=tmp_path))
    lost = VcpuState(0, 0, True, True, [], [0xEC], 0x10)
    masked = VcpuState(1, 0, True, True, [0xFB], [0xEC, 0xFB], 0xF0)
    monkeypatch.setattr("cxltrack.harness.vm.time.sleep", lambda _: None)
    monkeypatch.setattr(vm, "_wedged", lambda: [lost, masked])
    monkeypatch.setattr(vm, "vcpu_threads_asleep", lambda: {0: True, 1: False})
    assert [s.index for s in vm.stuck_vcpus()] == [0, 1]
    monkeypatch.setattr(vm, "vcpu_threads_asleep", lambda: {0: False, 1: False})
    assert [s.index for s in vm.stuck_vcpus()] == [1]
    monkeypatch.setattr(vm, "vcpu_threads_asleep", lambda: {})  # QEMU could not say
    assert [s.index for s in vm.stuck_vcpus()] == [1]


def test_probe_asks_each_cpu_lapic() -> None:
    asked: list[str] = []

    def hmp(line: str) -> str:
        asked.append(line)
        return REGS if line == "info registers -a" else WEDGED if line.endswith(" 0") else IDLE

    states = probe(hmp)
    assert asked == ["info registers -a", "info lapic 0", "info lapic 1"]
    assert [s.wedged for s in states] == [True, False]


class _Image:
    name = "none"

    def qemu_args(self, append: str = "") -> list[str]:
        return ["-kernel", "k"]


def test_single_threaded_tcg_only_on_request(tmp_path: Path) -> None:
    def accel(**cfg: Any) -> str:
        vm = Vm(VmConfig(qemu=Path("qemu"), image=_Image(), topology=cxl_type3_topology(), workdir=tmp_path, **cfg))
        args = vm.command_line(tmp_path / "a.sock", tmp_path / "q.sock")
        return args[args.index("-accel") + 1]

    assert accel(accel="tcg") == "tcg"
    assert accel(accel="tcg", tcg_single_thread=True) == "tcg,thread=single"
    assert accel(accel="kvm", tcg_single_thread=True) == "kvm"


def test_a_watchdog_verdict_survives_the_agents_wrapping() -> None:
    """The agent wraps the watchdog's GuestWedged in a GuestError ("guest command ...: ...",
    raised from it); Vm.run and the boot wait must still see the verdict, not ask again (a
    second look found the vCPU running once and turned a lost wakeup into a plain GuestError,
    which is not run again: test_ioctl_fuzzer_with_raw_writes_and_resets, 2026-11-28)."""
    from cxltrack.harness.agent import GuestError
    from cxltrack.harness.vm import GuestWedged, found_wedged

    def wrapped(inner: BaseException) -> GuestError:
        try:
            try:
                raise inner
            except GuestError as exc:
                raise GuestError(f"guest command 'x': {exc}") from exc
        except GuestError as outer:
            return outer

    assert found_wedged(wrapped(GuestWedged("the guest cannot answer any more")))
    assert found_wedged(GuestWedged("direct"))
    assert not found_wedged(wrapped(GuestError("agent channel closed")))
    assert not found_wedged(TimeoutError("no result"))


def test_a_boot_trapped_on_its_own_text_patching_is_the_platforms() -> None:
    """boot_patch_trap: an int3 Oops before the kernel runs its init (fresh-machine run of 2a91574, a nested
    host at 2.6 s); none after the init started (then the project's modules may be the cause), none without one."""
    from cxltrack.harness.vm import boot_patch_trap

    before = (
        "[    2.632248] sched_clock: Marking stable (2596164613, 34459258)->(2749109750, -118485879)\n"
        "[    2.648363] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n"
        "[    2.649104] RIP: 0010:sched_clock_cpu+0x9/0x190\n"
    )
    assert boot_patch_trap(before) == "[    2.648363] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
    after = "[    4.116110] Run /init as init process\n" + before
    assert boot_patch_trap(after) is None
    assert boot_patch_trap("[    2.7] Oops: general protection fault\n") is None
