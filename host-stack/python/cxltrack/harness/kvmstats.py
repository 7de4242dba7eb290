# SPDX-License-Identifier: Apache-2.0
"""The patched KVM as the harness sees it from inside a host: the module parameter that turns
the device dirty log on and off, its debugfs counters, counter files of "name value" lines, and
how to load Debian's own KVM beside it."""

from __future__ import annotations

from collections.abc import Callable

KVM_PARAM = "/sys/module/kvm/parameters/device_dirty_log"
KVM_DEBUGFS = "/sys/kernel/debug/kvm"
DEVICE_DIRTY_LOG_STATS = f"{KVM_DEBUGFS}/device_dirty_log"
# A shell command that mounts debugfs unless it is mounted.
MOUNT_DEBUGFS = "grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs none /sys/kernel/debug"


def parse_counters(text: str) -> dict[str, int]:
    """{name: value} of the "name value" lines of `text` (other lines are ignored)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].lstrip("-").isdigit():
            out[words[0]] = int(words[1])
    return out


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What each counter of `after` gained since `before`."""
    return {k: after[k] - before.get(k, 0) for k in after}


# Debian's own KVM modules in a host image; modprobe picks the project's patched ones (extra/).
STOCK_KVM_DIR = "/lib/modules/$(uname -r)/kernel/arch/x86/kvm"


def insmod_stock_kvm(run: Callable[[str], object], kvm_amd_args: str = "") -> None:
    """Load Debian's kvm.ko and kvm-amd.ko (STOCK_KVM_DIR) through `run` (a host's shell):
    insmod, because modprobe would load the project's; insmod loads no dependencies, and
    kvm-amd needs ccp (SEV)."""
    run("modprobe irqbypass && modprobe ccp")
    run(f"insmod {STOCK_KVM_DIR}/kvm.ko && insmod {STOCK_KVM_DIR}/kvm-amd.ko {kvm_amd_args}".rstrip())
