# SPDX-License-Identifier: Apache-2.0
"""Live migration of an L2 VM between two QEMUs of one host, with a writer dirtying the VM's
device-backed node, and the page-by-page comparison of both memories at the switch-over.

One run (`migrate_and_compare`) boots a source and a paused destination, starts the writer,
migrates over a Unix socket, dumps both memories and compares them, and reads what it cost:
QEMU's migration statistics (pages sent, rounds, total time, downtime) and the host KVM's
counters (page faults; with the KVM patch, its device-dirty-log counters incl. the
write-protect faults taken on dirty-logged memory). `dirty_log` chooses who logs the guest's
writes: "stock" (KVM write-protects the pages) or "device" (the patched KVM takes the
device's dirty bits), switched by the patched kvm.ko's `device_dirty_log` parameter.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from .agent import GuestError
from .nested import DeviceMemory, Host, MiB, NestedVm, VmSpec

KVM_PARAM = "/sys/module/kvm/parameters/device_dirty_log"
KVM_DEBUGFS = "/sys/kernel/debug/kvm"
# KVM's own fault counters (every build): all faults, the fast path that write-unprotects a
# page for dirty logging, and faults fixed by the full handler.
KVM_FAULT_STATS = ("pf_taken", "pf_fast", "pf_fixed")
SOCK = "/run/cxlt/migrate.sock"


@dataclass
class MigrationResult:
    dirty_log: str
    pages_compared: int
    pages_equal: int
    differ: list[str]
    pages_sent: int  # normal pages QEMU sent (zero pages excluded)
    zero_pages: int
    bytes_sent: int
    rounds: int  # dirty bitmap syncs
    total_ms: int
    downtime_ms: int
    kvm: dict[str, int] = field(default_factory=dict)  # counter deltas over the migration

    @property
    def wp_faults(self) -> int:
        """Write-protect faults taken on dirty-logged memory (the KVM patch's counter)."""
        if "wp_faults" not in self.kvm:
            raise GuestError("the host's KVM has no device_dirty_log counters (stock kvm.ko)")
        return self.kvm["wp_faults"]

    def line(self) -> str:
        kvm = " ".join(f"{k}={v}" for k, v in sorted(self.kvm.items()))
        return (
            f"migrate dirty_log={self.dirty_log} pages_sent={self.pages_sent} zero={self.zero_pages} "
            f"bytes={self.bytes_sent} rounds={self.rounds} total_ms={self.total_ms} "
            f"downtime_ms={self.downtime_ms} "
            f"compared={self.pages_compared} equal={self.pages_equal} {kvm}"
        )


def kvm_counters(host: Host) -> dict[str, int]:
    """KVM's fault counters and, with the KVM patch, its device-dirty-log counters."""
    host.run("grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs none /sys/kernel/debug")
    out = host.run(
        f"cd {KVM_DEBUGFS} && for s in {' '.join(KVM_FAULT_STATS)}; do echo $s $(cat $s); done; "
        "cat device_dirty_log 2>/dev/null || true"
    ).out
    counters: dict[str, int] = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].lstrip("-").isdigit():
            counters[words[0]] = int(words[1])
    return counters


def has_device_dirty_log(host: Host) -> bool:
    return host.run(f"test -w {KVM_PARAM}", check=False).ok


def set_dirty_log(host: Host, dirty_log: str) -> None:
    if dirty_log not in ("stock", "device"):
        raise ValueError(f"dirty_log {dirty_log!r}: stock or device")
    if not has_device_dirty_log(host):
        if dirty_log == "device":
            raise GuestError(f"the host's kvm.ko has no {KVM_PARAM}: load the patched KVM (make kvm)")
        return
    host.run(f"echo {'Y' if dirty_log == 'device' else 'N'} > {KVM_PARAM}")


def wait_migrated(src: NestedVm, timeout: float) -> dict[str, object]:
    end = time.monotonic() + timeout
    assert src.qmp is not None
    while time.monotonic() < end:
        info: dict[str, object] = src.qmp.command("query-migrate")
        status = info.get("status")
        if status == "completed":
            return info
        if status in ("failed", "cancelled"):
            raise GuestError(f"migration {status}: {info}")
        time.sleep(0.5)
    raise TimeoutError(f"migration did not complete in {timeout:.0f} s")


def _int(d: object, key: str) -> int:
    v = d.get(key, 0) if isinstance(d, dict) else 0
    return int(v) if isinstance(v, int) else 0


def migrate_and_compare(
    host: Host,
    dirty_log: str = "stock",
    device_mib: int = 128,
    writer_pages: int = 2048,
    writer_seconds: int = 30,
    timeout: float = 900,
) -> MigrationResult:
    """One migration of a VM whose node 1 (`device_mib` MiB of /dev/dax0.0) a writer keeps
    dirtying (`writer_pages` pages, rewritten at random for `writer_seconds`): source at
    offset 0 of the device, destination right after it."""
    set_dirty_log(host, dirty_log)
    size = device_mib * MiB
    # Without KVM's paravirtual clock: KVM writes the guest's kvmclock page at the destination
    # when it loads the clock, after the switch-over and outside the migration stream.
    src = host.start_vm(VmSpec("src", device=DeviceMemory("devdax", size, offset=0), paravirt=False))
    dst = host.start_vm(
        VmSpec(
            "dst",
            device=DeviceMemory("devdax", size, offset=size),
            incoming=f"unix:{SOCK}",
            paravirt=False,
            extra_args=["-S"],  # stay paused after the switch-over, for the comparison
        )
    )
    try:
        src.run(f"setsid cxlt-touch 1 {writer_pages} {writer_seconds} >/tmp/writer.log 2>&1 </dev/null &")
        # the writer's first pass (every page once) before the first round
        src.run(
            f"i=0; until [ $(grep -c '^gpa ' /tmp/writer.log) -ge {writer_pages} ]; do "
            "sleep 0.5; i=$((i+1)); [ $i -lt 600 ] || exit 1; done",
            timeout=360,
        )
        before = kvm_counters(host)
        assert src.qmp is not None
        src.qmp.command("migrate", uri=f"unix:{SOCK}")
        info = wait_migrated(src, timeout)
        after = kvm_counters(host)
        ram = info.get("ram", {})
        src.dump("/run/cxlt/src.mem")
        dst.dump("/run/cxlt/dst.mem")
        cmp = host.run("cxlt-pagecmp /run/cxlt/src.mem /run/cxlt/dst.mem", check=False, timeout=300)
        host.run("rm -f /run/cxlt/src.mem /run/cxlt/dst.mem")
        head = next((ln for ln in cmp.out.splitlines() if ln.startswith("pages=")), "")
        fields = dict(w.split("=", 1) for w in head.split())
        if cmp.status not in (0, 1) or "pages" not in fields:
            raise GuestError(f"cxlt-pagecmp failed: {cmp.describe()}")
        # the guest runs on at the destination
        assert dst.qmp is not None
        dst.qmp.command("cont")
        dst.reattach()
        if dst.run("echo alive").out.strip() != "alive":
            raise GuestError("the migrated VM does not answer at the destination")
        return MigrationResult(
            dirty_log=dirty_log,
            pages_compared=int(fields["pages"]),
            pages_equal=int(fields["equal"]),
            differ=[ln for ln in cmp.out.splitlines() if ln.startswith("differ page")],
            pages_sent=_int(ram, "normal"),
            zero_pages=_int(ram, "duplicate"),
            bytes_sent=_int(ram, "transferred"),
            rounds=_int(ram, "dirty-sync-count"),
            total_ms=_int(info, "total-time"),
            downtime_ms=_int(info, "downtime"),
            kvm={k: after[k] - before.get(k, 0) for k in after},
        )
    except BaseException:
        for vm in (src, dst):
            with contextlib.suppress(GuestError, OSError):
                vm.save_logs()
        raise
    finally:
        for vm in (src, dst):
            with contextlib.suppress(GuestError, OSError):
                vm.shutdown()
