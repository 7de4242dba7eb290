# SPDX-License-Identifier: Apache-2.0
"""The patched KVM as the harness sees it from inside a host: the module parameter that turns
the device dirty log on and off, its debugfs counters, and counter files of "name value" lines."""

from __future__ import annotations

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
