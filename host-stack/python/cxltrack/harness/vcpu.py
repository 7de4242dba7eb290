# SPDX-License-Identifier: Apache-2.0
"""What the guest's vCPUs are doing, from QEMU's side (HMP `info registers -a` and
`info lapic`), for when the guest agent stops answering.

One failure has been seen this way (tests/driver vector replay, TCG): a vCPU halted
with interrupts enabled while its local APIC still had an interrupt in service that
never got its EOI. The processor priority then masks every interrupt of the same or
a lower class - its own timer, IPIs, device interrupts - so nothing on that CPU runs
again: the guest looks idle, its timers stop (RCU stall reports on the console),
and a command either never starts or never ends. `VcpuState.wedged` recognises it.

A second has been seen (a nested host, 2026-11-28: the L1 host's agent unanswered for 135 s
during the memory manager's racing writes): a vCPU halted with interrupts enabled, nothing in
service, and interrupts pending that its priority lets through (its timer among them). A
processor in that state takes one at once; QEMU seeing it so twice, a second apart, means TCG
lost the wakeup. `VcpuState.lost_wakeup` recognises one sighting; `Vm.stuck_vcpus()` the
second.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_CPU = re.compile(r"^CPU#(\d+)\s*$", re.M)
_RIP = re.compile(r"^RIP=([0-9a-f]+) RFL=([0-9a-f]+) .*\bHLT=(\d)", re.M)
_VECTORS = re.compile(r"^(ISR|IRR)\t(.*)$", re.M)
_PPR = re.compile(r"\bPPR 0x([0-9a-f]+)")
IF_MASK = 0x200
TIMER_VECTOR = 0xEC  # Linux's LOCAL_TIMER_VECTOR


@dataclass
class VcpuState:
    index: int
    rip: int
    halted: bool
    interrupts_enabled: bool
    isr: list[int]  # vectors in service (delivered, no EOI yet)
    irr: list[int]  # vectors requested, not yet delivered
    ppr: int

    @property
    def wedged(self) -> bool:
        """Halted with interrupts enabled, interrupts pending, and every one of them masked by
        the processor priority of an interrupt still in service: it will never run again."""
        return (
            self.halted
            and self.interrupts_enabled
            and bool(self.isr)
            and bool(self.irr)
            and max(self.irr) & 0xF0 <= self.ppr & 0xF0
        )

    @property
    def lost_wakeup(self) -> bool:
        """Halted with interrupts enabled and a pending interrupt whose class is above the
        processor priority: the CPU should be taking it now. One sighting may be the moment
        before the wakeup; the same seen again a second later is a wakeup TCG lost."""
        return self.halted and self.interrupts_enabled and bool(self.irr) and max(self.irr) & 0xF0 > self.ppr & 0xF0

    def describe(self) -> str:
        def vecs(v: list[int]) -> str:
            return " ".join(f"{x:#04x}" for x in v) or "none"

        state = "halted" if self.halted else "running"
        text = (
            f"vCPU {self.index}: {state}, interrupts {'enabled' if self.interrupts_enabled else 'disabled'}, "
            f"RIP {self.rip:#x}, APIC in service {vecs(self.isr)}, requested {vecs(self.irr)}, PPR {self.ppr:#04x}"
        )
        if self.wedged:
            timer = " (including its timer)" if TIMER_VECTOR in self.irr else ""
            text += (
                f"\n  WEDGED: vector {max(self.isr):#04x} is still in service (no EOI), so the CPU takes none of "
                f"the pending interrupts{timer}; nothing on this vCPU runs again"
            )
        elif self.lost_wakeup:
            timer = " (its timer among them)" if TIMER_VECTOR in self.irr else ""
            due = vecs([v for v in self.irr if v & 0xF0 > self.ppr & 0xF0])
            text += (
                f"\n  WAKEUP LOST: halted with interrupts enabled while {due} pend above its priority{timer}; "
                "if it stays so, nothing on this vCPU runs again"
            )
        return text


def parse_registers(text: str) -> dict[int, tuple[int, bool, bool]]:
    """`info registers -a` → {cpu index: (RIP, halted, interrupts enabled)}."""
    out: dict[int, tuple[int, bool, bool]] = {}
    heads = list(_CPU.finditer(text))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        m = _RIP.search(text, head.end(), end)
        if m:
            out[int(head.group(1))] = (int(m.group(1), 16), m.group(3) == "1", bool(int(m.group(2), 16) & IF_MASK))
    return out


def parse_lapic(text: str) -> tuple[list[int], list[int], int]:
    """`info lapic N` → (ISR vectors, IRR vectors, PPR)."""
    regs = {
        name: [int(w.split("(")[0]) for w in rest.split() if w[0].isdigit()] for name, rest in _VECTORS.findall(text)
    }
    ppr = _PPR.search(text)
    if "ISR" not in regs or "IRR" not in regs or ppr is None:
        raise ValueError(f"unexpected `info lapic` output: {text[:200]!r}")
    return regs["ISR"], regs["IRR"], int(ppr.group(1), 16)


def probe(hmp: Callable[[str], str]) -> list[VcpuState]:
    """Every vCPU's state through an HMP command runner (APIC ID = CPU index, as in the
    harness's topologies)."""
    states = []
    for index, (rip, halted, ie) in sorted(parse_registers(hmp("info registers -a")).items()):
        isr, irr, ppr = parse_lapic(hmp(f"info lapic {index}"))
        states.append(VcpuState(index, rip, halted, ie, isr, irr, ppr))
    return states
