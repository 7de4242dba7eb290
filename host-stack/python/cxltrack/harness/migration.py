# SPDX-License-Identifier: Apache-2.0
"""Live migration of an L2 VM between two QEMUs of one host, with a writer dirtying the VM's
device-backed node, and the page-by-page comparison of both memories at the switch-over.

One run (`migrate_and_compare`) boots a source and a paused destination, starts the writer,
migrates over a Unix socket, dumps both memories and compares them, and reads what it cost:
QEMU's migration statistics (pages sent, rounds, total time, downtime) and the host KVM's
counters (page faults; with the KVM patch, its device-dirty-log counters incl. the
write-protect faults taken on dirty-logged memory). `dirty_log` chooses who logs the guest's
writes to its device node: "stock" (KVM write-protects the pages), "device" (the patched KVM
takes the device's dirty bits; the patched kvm.ko's `device_dirty_log` parameter) or "qemu"
(the host QEMU's cxltrack-dirty-log object harvests them, and KVM does not log that memory;
works with any KVM).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec

from .agent import GuestError
from .kvmstats import KVM_DEBUGFS, KVM_PARAM, MOUNT_DEBUGFS, delta, parse_counters
from .nested import RESET_RUNS, DeviceMemory, Host, MiB, NestedVm, VmHung, VmReset, VmSpec, run_with_fresh_vms

# KVM's own fault counters (every build): all faults, the fast path that write-unprotects a
# page for dirty logging, and faults fixed by the full handler.
KVM_FAULT_STATS = ("pf_taken", "pf_fast", "pf_fixed")
SOCK = "/run/cxlt/migrate.sock"
P = ParamSpec("P")
TRACING = "/sys/kernel/tracing"
NPF_EVENT = f"{TRACING}/events/kvm/kvm_page_fault"


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
    client: dict[str, int] = field(default_factory=dict)  # the QEMU client's harvests, dirty-pages

    wp_faults: int = 0  # write-protect faults the host KVM took on the device node (any KVM)
    attempts: int = 1  # runs it took: a run in which a VM was reset is done again with fresh VMs

    def line(self) -> str:
        named = " ".join(f"{key}={getattr(self, attr)}" for key, attr in LINE_FIELDS)
        kvm = " ".join(f"{k}={v}" for k, v in sorted({**self.kvm, **self.client}.items()))
        return f"migrate {named} {kvm}"

    @classmethod
    def parse(cls, text: str) -> MigrationResult:
        """The result a `line()` printed (its `differ` list is not in the line)."""
        words = text.split()
        if words[:1] != ["migrate"]:
            raise ValueError(f"not a migration line: {text[:80]!r}")
        f = dict(w.split("=", 1) for w in words[1:])
        named: dict[str, Any] = {attr: f.pop(key) for key, attr in LINE_FIELDS}
        for attr, value in named.items():
            named[attr] = value if attr == "dirty_log" else int(value)
        client = {k: int(f.pop(k)) for k in CLIENT_COUNTERS if k in f}
        return cls(**named, differ=[], kvm={k: int(v) for k, v in f.items()}, client=client)


# The fields of a migration's line, in order: (key in the line, MigrationResult attribute).
LINE_FIELDS = (
    ("dirty_log", "dirty_log"),
    ("wp_faults_device_node", "wp_faults"),
    ("pages_sent", "pages_sent"),
    ("zero", "zero_pages"),
    ("bytes", "bytes_sent"),
    ("rounds", "rounds"),
    ("total_ms", "total_ms"),
    ("downtime_ms", "downtime_ms"),
    ("compared", "pages_compared"),
    ("equal", "pages_equal"),
    ("attempts", "attempts"),
)
# The QEMU client's counters (MigrationResult.client), printed among KVM's.
CLIENT_COUNTERS = ("harvests", "dirty-pages", "skipped-pages")


def kvm_counters(host: Host) -> dict[str, int]:
    """KVM's fault counters and, with the KVM patch, its device-dirty-log counters."""
    host.run(MOUNT_DEBUGFS)
    out = host.run(
        f"cd {KVM_DEBUGFS} && for s in {' '.join(KVM_FAULT_STATS)}; do echo $s $(cat $s); done; "
        "cat device_dirty_log 2>/dev/null || true"
    ).out
    return parse_counters(out)


def start_wp_fault_trace(host: Host, lo: int, hi: int) -> None:
    """Record the host KVM's nested page faults at guest-physical addresses in [lo, hi)
    (kvm:kvm_page_fault, filtered by address in the kernel), so any KVM build is measured the
    same way; stop_wp_fault_trace counts the write-protect faults among them."""
    host.run(
        f"grep -q ' {TRACING} ' /proc/mounts || mount -t tracefs none {TRACING}; "
        f"echo 0 > {TRACING}/tracing_on && echo > {TRACING}/trace && echo 8192 > {TRACING}/buffer_size_kb && "
        f"echo 'fault_address >= {lo} && fault_address < {hi}' "
        f"> {NPF_EVENT}/filter && echo 1 > {NPF_EVENT}/enable && echo 1 > {TRACING}/tracing_on"
    )


def stop_wp_fault_trace(host: Host) -> int:
    """Stops tracing; the number of write-protect faults recorded since start_wp_fault_trace:
    nested page faults whose error code says present (bit 0) and write (bit 1)."""
    out = host.run(
        f"echo 0 > {TRACING}/tracing_on && echo 0 > {NPF_EVENT}/enable && "
        f"cat {TRACING}/per_cpu/cpu*/stats | awk '/^overrun:/ {{o += $2}} END {{print \"overrun\", o + 0}}'; "
        f"grep -o 'error_code 0x[0-9a-f]*' {TRACING}/trace; echo 0 > {NPF_EVENT}/filter; echo > {TRACING}/trace",
        check=False,
        timeout=300,
    ).out.splitlines()
    if not out or not out[0].startswith("overrun "):
        raise GuestError(f"reading the page-fault trace: {out[:3]}")
    if int(out[0].split()[1]):
        raise GuestError(f"the page-fault trace overran ({out[0]}): raise buffer_size_kb")
    codes = [int(line.split()[1], 16) for line in out[1:] if line.startswith("error_code ")]
    return sum(1 for c in codes if c & 3 == 3)


def has_device_dirty_log(host: Host) -> bool:
    return host.run(f"test -w {KVM_PARAM}", check=False).ok


DIRTY_LOGS = ("stock", "device", "qemu")


def set_dirty_log(host: Host, dirty_log: str) -> None:
    if dirty_log not in DIRTY_LOGS:
        raise ValueError(f"dirty_log {dirty_log!r}: one of {', '.join(DIRTY_LOGS)}")
    if not has_device_dirty_log(host):
        if dirty_log == "device":
            raise GuestError(f"the host's kvm.ko has no {KVM_PARAM}: load the patched KVM (make kvm)")
        return
    host.run(f"echo {'Y' if dirty_log == 'device' else 'N'} > {KVM_PARAM}")


def wait_migrated(src: NestedVm, timeout: float) -> dict[str, object]:
    end = time.monotonic() + timeout
    qmp = src.qmp
    assert qmp is not None
    usual = qmp.sock.gettimeout()
    try:
        while time.monotonic() < end:
            # The monitor does not answer while the migration's completion holds QEMU's big
            # lock (vCPUs stopped, the last dirty pages sent): under emulation and load that has
            # taken longer than a QMP command's usual minute, so a poll may wait as long as the
            # migration.
            qmp.sock.settimeout(max(end - time.monotonic(), 1.0))
            info: dict[str, object] = qmp.command("query-migrate")
            status = info.get("status")
            if status == "completed":
                return info
            if status in ("failed", "cancelled"):
                raise GuestError(f"migration {status}: {info}")
            time.sleep(0.5)
    finally:
        qmp.sock.settimeout(usual)
    raise TimeoutError(f"migration did not complete in {timeout:.0f} s")


def _int(d: object, key: str) -> int:
    v = d.get(key, 0) if isinstance(d, dict) else 0
    return int(v) if isinstance(v, int) else 0


def migrate_once(
    host: Host,
    dirty_log: str = "stock",
    device_mib: int = 128,
    writer_pages: int = 2048,
    writer_seconds: int = 30,
    timeout: float = 900,
    client_dpa: int | None = None,
    resume: bool = True,
    dst_on_device: bool = True,
    zeroed: bool = False,
) -> MigrationResult:
    """One migration of a VM whose node 1 (`device_mib` MiB of /dev/dax0.0) a writer keeps
    dirtying (`writer_pages` pages, rewritten at random for `writer_seconds`): source at
    offset 0 of the device, destination right after it, or with `dst_on_device` false, its
    node 1 in the host's ordinary memory. `client_dpa` places the "qemu" client's harvest
    elsewhere, unchecked (a negative control: its bits are then the wrong pages'). With
    `resume`, the destination then runs on and must answer. With `zeroed` ("qemu" only), the
    host zeroes both nodes' device ranges first (Host.zero) and the client leaves the pages
    the device has not seen written out of the first round (zeroed=on; the destination's
    object checks its range is still zero)."""
    if zeroed and dirty_log != "qemu":
        raise ValueError("zeroed needs the QEMU client (dirty_log 'qemu')")
    set_dirty_log(host, dirty_log)
    size = device_mib * MiB
    if zeroed:
        for offset in (0, size) if dst_on_device else (0,):
            print(f"[nested] {host.zero(offset, size)}")
    # Without KVM's paravirtual clock: KVM writes the guest's kvmclock page at the destination
    # when it loads the clock, after the switch-over and outside the migration stream.
    src = host.start_vm(
        VmSpec(
            "src",
            device=DeviceMemory("devdax", size, offset=0),
            paravirt=False,
            device_dirty_log=dirty_log == "qemu",
            device_dirty_log_dpa=client_dpa,
            device_dirty_log_unchecked=client_dpa is not None,
            device_dirty_log_zeroed=zeroed,
        )
    )
    dst = host.start_vm(
        VmSpec(
            "dst",
            device=DeviceMemory("devdax", size, offset=size) if dst_on_device else DeviceMemory("ram", size),
            incoming=f"unix:{SOCK}",
            paravirt=False,
            device_dirty_log=zeroed and dst_on_device,
            device_dirty_log_zeroed=zeroed and dst_on_device,
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
        start_wp_fault_trace(host, src.device_gpa, src.device_gpa + size)
        assert src.qmp is not None
        src.qmp.command("migrate", uri=f"unix:{SOCK}")
        info = wait_migrated(src, timeout)
        wp_faults = stop_wp_fault_trace(host)
        after = kvm_counters(host)
        client = {}
        if dirty_log == "qemu":
            for prop in CLIENT_COUNTERS:
                client[prop] = int(src.qmp.command("qom-get", path="/objects/devlog0", property=prop))
        ram = info.get("ram", {})
        src.dump("/run/cxlt/src.mem")
        dst.dump("/run/cxlt/dst.mem")
        cmp = host.run("cxlt-pagecmp /run/cxlt/src.mem /run/cxlt/dst.mem", check=False, timeout=300)
        host.run("rm -f /run/cxlt/src.mem /run/cxlt/dst.mem")
        head = next((ln for ln in cmp.out.splitlines() if ln.startswith("pages=")), "")
        fields = dict(w.split("=", 1) for w in head.split())
        if cmp.status not in (0, 1) or "pages" not in fields:
            raise GuestError(f"cxlt-pagecmp failed: {cmp.describe()}")
        if resume:  # the guest runs on at the destination
            assert dst.qmp is not None
            dst.qmp.command("cont")
            dst.reattach()
            if dst.run("echo alive").out.strip() != "alive":
                raise GuestError("the migrated VM does not answer at the destination")
        result = MigrationResult(
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
            kvm=delta(before, after),
            client=client,
            wp_faults=wp_faults,
        )
    except BaseException:
        for vm in (src, dst):
            with contextlib.suppress(GuestError, OSError):
                vm.save_logs()
        raise
    finally:
        stopped = _shutdown(src, dst)
    # Reached only when the migration succeeded: a VM reset meanwhile (shutdown says so) makes
    # the run worthless, whatever the comparison said.
    if stopped:
        raise stopped[0]
    return result


# Runs of one migration at most, when a VM was reset or hung during a run (migrate_and_compare).
RESET_ATTEMPTS = RESET_RUNS


def _spoiled(exc: Exception) -> str | None:
    if isinstance(exc, (VmReset, VmHung)):
        what = "was reset" if isinstance(exc, VmReset) else "did not answer after the migration"
        return f"a VM {what} ({str(exc).splitlines()[0]})"
    return None


def _repeat_on_vm_reset(run: Callable[P, MigrationResult]) -> Callable[P, MigrationResult]:
    """`run`, done again with fresh VMs (nested.run_with_fresh_vms, at most RESET_ATTEMPTS runs
    in all) when a VM was reset during it, or the migrated VM did not answer once resumed.
    Under nested SVM on TCG an L2 guest now and then resets during a live migration, or hangs
    at the destination after its memory compared equal (any dirty log, stock KVM included;
    docs/harness.md); such a run says nothing about the dirty log, so it is reported and
    repeated, and the result says how many runs it took. The last run's failure is the
    caller's."""

    @functools.wraps(run)
    def repeated(*args: P.args, **kwargs: P.kwargs) -> MigrationResult:
        r, attempts = run_with_fresh_vms("migration", _spoiled, run, *args, **kwargs)
        r.attempts = attempts
        return r

    return repeated


migrate_and_compare = _repeat_on_vm_reset(migrate_once)


def _shutdown(*vms: NestedVm) -> list[GuestError | OSError]:
    """Shut every VM down; the errors, in order (one VM's error does not keep the next up)."""
    errors: list[GuestError | OSError] = []
    for vm in vms:
        try:
            vm.shutdown()
        except (GuestError, OSError) as exc:
            errors.append(exc)
    return errors
