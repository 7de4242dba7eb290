# SPDX-License-Identifier: Apache-2.0
"""Kernel log checks for full-stack tests: a test that passes while the guest kernel
printed a warning or an oops has not passed."""

from __future__ import annotations

import re

from .vm import Vm

# The pinned Debian kernel has no lockdep/KASAN; the patterns also catch the debug kernel
# of `make test-driver-debug` (lockdep's reports: "WARNING: possible circular locking ...",
# "INFO: possible irq lock inversion ...", "DEBUG_LOCKS_WARN_ON"; not the boot banner "RCU
# lockdep checking is enabled").
SPLAT = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|kernel BUG|Call Trace:|"
    r"INFO: (possible|trying to register|lockdep is turned off)|DEBUG_LOCKS_WARN_ON|"
    r"possible circular locking|possible recursive locking|KASAN|UBSAN|"
    r"blocked for more than|RCU stall|list_(add|del) corruption|refcount_t:|"
    r"use-after-free|double free"
)


# What a kernel prints when it stops: the first of these in a console is where to start reading.
FATAL = re.compile(SPLAT.pattern + r"|Kernel panic|unable to handle|stack-protector|Kernel Offset:")


def first_report(console: str, lines: int = 24) -> list[str]:
    """The console's first kernel report (a warning, oops or panic) and the lines after it, or
    nothing: a VM that was reset while in use says why here, if its kernel said anything."""
    text = console.splitlines()
    for i, line in enumerate(text):
        if FATAL.search(line):
            return text[i : i + lines]
    return []


# The nested hosts' panic in an L2 QEMU's vCPU thread (docs/harness.md, "corrupted stack end"):
# the magic word at the bottom of the thread's kernel stack was overwritten. It happens with
# KVM modules built from Debian's unmodified source too (code byte for byte Debian's), so it is
# not the KVM series'; the cause is open (a stray write under nested SVM on L0's TCG).
STACK_END_PANIC = "Kernel panic - not syncing: corrupted stack end detected inside scheduler"
VCPU_THREAD = re.compile(r"\bComm: CPU \d+/KVM\b")


def vcpu_stack_end_panic(console: str) -> str | None:
    """The panic line if the console's first kernel report is STACK_END_PANIC in a KVM vCPU
    thread (`Comm: CPU n/KVM` on the line after it), else None: a panic after an earlier
    warning or oops, or in another thread, stays that report's."""
    said = first_report(console, lines=2)
    if len(said) == 2 and STACK_END_PANIC in said[0] and VCPU_THREAD.search(said[1]):
        return said[0].strip()
    return None


def dmesg_splats(vm: Vm) -> list[str]:
    """Lines of the guest's kernel log that report a warning, bug or oops."""
    out = vm.run("dmesg", check=False).out
    return [line for line in out.splitlines() if SPLAT.search(line)]
