# SPDX-License-Identifier: Apache-2.0
"""KVM tests: the guest is a hypervisor (L1, TCG with `-cpu max`: nested SVM) with the
cxltrack tracker as function 1 of its CXL memory device; KVM's selftests create their own
small L2 VMs in it.

Setup of the shared L1 (`l1` fixture, one VM for the session): cxltrack.ko, the region as
NUMA node 1 (kmem), its HPA -> DPA map registered with the tracker (`cxl-region track`).
A test picks the KVM build with `l1.use()`:

  patched      the image's kvm.ko + kvm-amd.ko (kvm/patches), device dirty log on
  patched-off  the same modules with kvm.device_dirty_log=N (stock behaviour)
  stock        Debian's kvm.ko + kvm-amd.ko, loaded with insmod from kernel/arch/x86/kvm

Selftests run with all their memory bound to node 1 (`membind 1`) unless a test says
otherwise. Every run is recorded (build, selftest, exit code, seconds, the device dirty
log's counter deltas); the session writes out/kvm/selftests.{json,md} and prints the table.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import pytest

from cxltrack import config as cxlconfig
from cxltrack.harness import Vm
from cxltrack.harness.kernlog import dmesg_splats
from cxltrack.harness.kvmstats import (
    DEVICE_DIRTY_LOG_STATS,
    KVM_PARAM,
    MOUNT_DEBUGFS,
    delta,
    insmod_stock_kvm,
    parse_counters,
)
from cxltrack.harness.pins import out_dir
from cxltrack.harness.pytest_plugin import default_image, drop_test_dir, qemu_binary
from cxltrack.harness.tracker import tracker_topology
from cxltrack.harness.vm import VmConfig

pytest_plugins = ["cxltrack.harness.pytest_plugin"]

BIN = "/opt/cxltrack/bin"
TRACKER = "/sys/class/cxltrack/cxltrack0"
BUILDS = ("patched", "patched-off", "stock")
# kselftest's exit code for a test that does not apply (e.g. no capability).
KSFT_SKIP = 4
# The whole matrix (`make test-kvm-full`) or the small one of `make test`.
FULL = os.environ.get("CXLTRACK_KVM_FULL") == "1"
# dirty_log_test, small: 4 MiB of test memory, 3 rounds of 50 ms (the vCPU keeps writing
# while the host takes the log; every page is checked).
DIRTY_LOG = "dirty_log_test -b 4M -i 3 -I 50"


@dataclass
class Run:
    build: str
    test: str
    cmd: str
    rc: int
    seconds: float
    kvm: dict[str, int] = field(default_factory=dict)  # device_dirty_log counter deltas
    tracker: dict[str, int] = field(default_factory=dict)  # dirty_log/ counter deltas
    out: str = ""


RUNS: list[Run] = []


class L1Host:
    def __init__(self, vm: Vm) -> None:
        self.vm = vm
        self.build: str | None = None

    def run(self, cmd: str, timeout: float = 120, check: bool = True):  # type: ignore[no-untyped-def]
        return self.vm.run(cmd, timeout=timeout, check=check)

    def use(self, build: str) -> None:
        """Load the KVM build (unloading another one first)."""
        assert build in BUILDS, build
        if build == self.build:
            return
        if self.build is not None:
            self.run("rmmod kvm_amd kvm")
        if build == "stock":
            insmod_stock_kvm(self.run)
            loaded = self.run(f"test -e {KVM_PARAM} && echo patched || echo stock").out.strip()
            assert loaded == "stock", "insmod of Debian's kvm.ko loaded a module with device_dirty_log"
        else:
            # modprobe must pick the project's modules (extra/) over Debian's.
            self.run("modprobe kvm_amd")
            assert self.run(f"test -e {KVM_PARAM} && echo yes || echo no").out.strip() == "yes", (
                "modprobe kvm_amd did not load the patched KVM (no kvm.device_dirty_log)"
            )
            self.run(f"echo {'N' if build == 'patched-off' else 'Y'} > {KVM_PARAM}")
        assert "svm" in self.run("cat /proc/cpuinfo").out, "the L1 CPU has no SVM"
        self.build = build

    def stats(self) -> tuple[dict[str, int], dict[str, int]]:
        """KVM's device dirty log counters ({} on stock KVM) and the tracker's, in one
        guest command."""
        names = ("syncs", "pages", "dirty", "losses", "users")
        kvm = f"cat {DEVICE_DIRTY_LOG_STATS}; " if self.build != "stock" else ""
        out = self.run(f"{kvm}cd {TRACKER}/dirty_log && for f in {' '.join(names)}; do echo t_$f $(cat $f); done").out
        both = parse_counters(out)
        tracker = {k[2:]: v for k, v in both.items() if k.startswith("t_")}
        return {k: v for k, v in both.items() if not k.startswith("t_")}, tracker

    def kvm_stats(self) -> dict[str, int]:
        return self.stats()[0]

    def selftest(self, label: str, cmd: str, node: int | None = 1, timeout: float = 600) -> Run:
        """Run /opt/cxltrack/bin/<cmd> (memory bound to `node`) and record it."""
        assert self.build is not None, "call use() first"
        full = f"{BIN}/{cmd}"
        if node is not None:
            full = f"membind {node} {full}"
        k0, t0 = self.stats()
        start = time.monotonic()
        res = self.run(f"cd /tmp && {full}", timeout=timeout, check=False)
        seconds = time.monotonic() - start
        k1, t1 = self.stats()
        run = Run(
            self.build,
            label,
            cmd,
            res.status if not res.timed_out else -1,
            round(seconds, 1),
            delta(k0, k1),
            delta(t0, t1),
            (res.out + res.err)[-4000:],
        )
        RUNS.append(run)
        return run


def _table(runs: list[Run]) -> str:
    tests: list[str] = []
    for r in runs:
        if r.test not in tests:
            tests.append(r.test)
    builds = [b for b in BUILDS if any(r.build == b for r in runs)]
    lines = ["| selftest | " + " | ".join(builds) + " |", "|---" * (len(builds) + 1) + "|"]

    def verdict(r: Run) -> str:
        return "pass" if r.rc == 0 else "skip" if r.rc == KSFT_SKIP else f"FAIL rc={r.rc}"

    for t in tests:
        cells = []
        for b in builds:
            rs = [r for r in runs if r.test == t and r.build == b]
            cells.append(", ".join(verdict(r) + f" ({r.seconds:.0f} s)" for r in rs) or "-")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RUNS:
        return
    dest = out_dir() / "kvm"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "selftests.json").write_text(json.dumps([asdict(r) for r in RUNS], indent=1))
    table = _table(RUNS)
    (dest / "selftests.md").write_text(table + "\n")
    terminalreporter.write_line(f"KVM selftests in L1 ({dest / 'selftests.md'}):")
    for line in table.splitlines():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def l1(request: pytest.FixtureRequest) -> Iterator[L1Host]:
    """The L1 hypervisor with the tracker, node 1 on the device and its map registered."""
    workdir = out_dir() / "e2e" / "kvm-l1"
    shutil.rmtree(workdir, ignore_errors=True)
    topo = tracker_topology(cxlconfig.named("default"))
    vm = Vm(VmConfig(qemu=qemu_binary(), image=default_image(), topology=topo, workdir=workdir, command_timeout=600))
    failed_before = request.session.testsfailed
    vm.start()
    print(f"[kvm] L1 ready in {vm.boot_seconds:.2f} s")
    host = L1Host(vm)
    try:
        host.run("modprobe cxltrack && test -c /dev/cxltrack0")
        host.run("cxl-region create kmem", timeout=120)
        host.run("cxl-region track")
        host.run(MOUNT_DEBUGFS)
        yield host
        # a host whose agent broke (wedged: the test failed saying so) is not read again
        splats = dmesg_splats(vm) if vm.answering() else []
        assert not splats, "L1 kernel log has warnings/oopses:\n" + "\n".join(splats[:40])
    finally:
        failed = request.session.testsfailed != failed_before
        if failed:
            vm.save_dmesg()
        vm.shutdown()
        drop_test_dir(workdir, failed)
