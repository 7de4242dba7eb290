# SPDX-License-Identifier: Apache-2.0
"""pytest fixtures for full-stack tests (enable with `pytest_plugins = ["cxltrack.harness.pytest_plugin"]`).

Fixtures:
  boot_vm   factory: boot_vm(topology=None, image=None, append="", region=None) → started Vm;
            every VM it made is shut down when the test ends (pass, fail or Ctrl-C).
  vm        one VM on the default CXL topology, region not created.
  boot_host factory: boot_host(region="devdax"|"kmem"|None, config="default", kvm=True, memory="3G")
            → a nested-virtualisation host (harness/nested.py: L1 with the tracker, cxltrack.ko,
            the region, kvm_amd nested=1) whose start_vm(VmSpec) boots VMs (L2); every host and
            its VMs are stopped when the test ends.
  host      one such host with a devdax region.
  nested_vm one L2 VM on `host` with a 128 MiB NUMA node on the device (devdax).

Configuration (set by `make test-e2e`):
  CXLTRACK_QEMU         path of qemu-system-x86_64
  CXLTRACK_GUEST_IMAGE  image manifest (out/guest/busybox.json by default)
  CXLTRACK_HOST_IMAGE   nested host image manifest (out/guest/host.json, `make guest-host`)
  CXLTRACK_KEEP_LOGS=1  keep out/e2e/<test>/ for passing tests too

Logs of a test go to out/e2e/<test>/ (one subdirectory per VM: console.log,
qemu.log, commands.log, and dmesg.log if the guest still answered; a nested host's
L2 VMs get a subdirectory of the host's with their own console.log, qemu.log and
commands.log, copied out of L1). They are
kept when the test fails and removed when it passes. A failing test's report gets a section with each VM's console tail.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cxltrack.config import named as named_config

from .image import GuestImage, load_image
from .kernlog import first_report
from .nested import (
    DeviceMemory,
    Host,
    HostImage,
    HostKernelReport,
    HostWedged,
    NestedVm,
    VmSpec,
    load_host_image,
    silent_vm_reset,
)
from .nested import boot_host as _boot_host
from .pins import out_dir
from .topology import Topology, cxl_type3_topology
from .tracker import tracker_topology
from .vm import GuestWedged, Vm, VmConfig

BootVm = Callable[..., Vm]
BootHost = Callable[..., Host]
_REPORT_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()
HOSTS_KEY = pytest.StashKey[list[Host]]()
# (test, wall seconds from starting QEMU to the agent's greeting), from the reports: a test
# records each VM's boot in its user properties, which pytest-xdist carries to the controller.
BOOT_TIMES: list[tuple[str, float]] = []
_BOOT_PROPERTY = "vm_boot_seconds"


# (test, first line of the error) of every run that pytest-rerunfailures ran again.
RERUNS: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "rerun":  # type: ignore[comparison-overlap]  # pytest-rerunfailures' outcome
        crash = getattr(report.longrepr, "reprcrash", None)
        why = str(crash.message if crash is not None else report.longrepr)
        RERUNS.append((report.nodeid, why.splitlines()[0] if why else "?"))
    if report.when == "teardown":
        BOOT_TIMES.extend(
            (report.nodeid, v) for k, v in report.user_properties if k == _BOOT_PROPERTY and isinstance(v, float)
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for nodeid, why in RERUNS:
        terminalreporter.write_line(f"run again (the platform lost the machine): {nodeid}: {why}")
    if not BOOT_TIMES:
        return
    walls = sorted(t for _, t in BOOT_TIMES)
    median = walls[len(walls) // 2]
    terminalreporter.write_line(
        f"e2e boot-to-ready: {len(walls)} VM(s), min {walls[0]:.2f} s, median {median:.2f} s, "
        f"max {walls[-1]:.2f} s (QEMU start to guest agent ready)"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that failed while a host it booted was lost to the platform (nested.HostWedged)
    fails as HostWedged, and one that failed because an L2 VM triple-faulted (a VmReset with
    nothing on the VM's console in the failure's chain, or a VM of its hosts still running
    that was so reset: NestedVm.silent_reset) as GuestWedged, its own error chained:
    `--reruns 1 --only-rerun` (mk/common.mk) then runs it once more on a fresh host, and the
    report keeps both runs. A VM reset whose kernel said why (an oops, a panic) stays the
    test's failure."""
    try:
        return (yield)
    except Exception as exc:
        for h in item.stash.get(HOSTS_KEY, []):
            report = h.wedge_report()
            if report is not None:
                raise HostWedged(f"{h.vm.cfg.workdir.name}: {report}") from exc
        reset = silent_vm_reset(exc)
        why = str(reset).splitlines()[0] if reset is not None else None
        for h in item.stash.get(HOSTS_KEY, []):
            for vm in list(getattr(h, "vms", {}).values()):
                why = why or vm.silent_reset()
        if why is not None:
            raise GuestWedged(f"{why} (the platform: nested SVM on TCG)") from exc
        for h in item.stash.get(HOSTS_KEY, []):
            said = first_report(h.vm.console_text(), lines=4)
            if said:
                lines = " | ".join(line.strip() for line in said)
                raise HostKernelReport(f"{h.vm.cfg.workdir.name} kernel: {lines}") from exc
        raise


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()
    item.stash.setdefault(_REPORT_KEY, {})[rep.when] = rep


def _failed(node: pytest.Item) -> bool:
    reps = node.stash.get(_REPORT_KEY, {})
    return any(r.failed for r in reps.values()) or "call" not in reps


def qemu_binary() -> Path:
    q = os.environ.get("CXLTRACK_QEMU")
    if not q:
        pytest.fail("CXLTRACK_QEMU is not set: run `make test-e2e` (it builds QEMU and the guest image)", pytrace=False)
    p = Path(q)
    if not os.access(p, os.X_OK):
        pytest.fail(f"CXLTRACK_QEMU={q} is not an executable", pytrace=False)
    return p


def default_image() -> GuestImage:
    manifest = Path(os.environ.get("CXLTRACK_GUEST_IMAGE", out_dir() / "guest" / "busybox.json"))
    if not manifest.exists():
        pytest.fail(f"guest image manifest {manifest} missing: run `make guest`", pytrace=False)
    return load_image(manifest)


def test_dir(node: pytest.Item) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", node.nodeid.split("/")[-1]).strip("_")
    return out_dir() / "e2e" / name


def _fresh_test_dir(node: pytest.Item) -> Path:
    """The test's log directory, emptied of an earlier run's. When the test runs again because
    the platform lost its machine (`--reruns`, see pytest_runtest_call), the failed run's logs
    move to <dir>.run<N> and stay."""
    base = test_dir(node)
    run = int(getattr(node, "execution_count", 1))
    if run > 1 and base.exists():
        failed_run = base.with_name(f"{base.name}.run{run - 1}")
        shutil.rmtree(failed_run, ignore_errors=True)
        base.rename(failed_run)
    else:
        for old in [base, *base.parent.glob(f"{base.name}.run*")]:
            shutil.rmtree(old, ignore_errors=True)
    return base


def _report_tail(node: pytest.Item, title: str, text: str, lines: int) -> None:
    node.add_report_section("teardown", title, "\n".join(text.splitlines()[-lines:]))


def drop_test_dir(base: Path, failed: bool) -> None:
    """A passing test's logs go (CXLTRACK_KEEP_LOGS=1 keeps them); a failing test's stay."""
    if not failed and os.environ.get("CXLTRACK_KEEP_LOGS") != "1":
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def boot_vm(request: pytest.FixtureRequest) -> Iterator[BootVm]:
    node = request.node
    assert isinstance(node, pytest.Item)
    base = _fresh_test_dir(node)
    vms: list[Vm] = []

    def boot(
        topology: Topology | None = None,
        image: GuestImage | None = None,
        append: str = "",
        region: str | None = None,
        **cfg: Any,
    ) -> Vm:
        if region:
            append = f"{append} cxltrack.region={region}".strip()
        vm_cfg = VmConfig(
            qemu=qemu_binary(),
            image=image or default_image(),
            topology=topology or cxl_type3_topology(),
            workdir=base / f"vm{len(vms)}",
            append=append,
            **cfg,
        )
        vm = Vm(vm_cfg)
        vms.append(vm)
        vm.start()
        assert vm.boot_seconds is not None
        node.user_properties.append((_BOOT_PROPERTY, vm.boot_seconds))
        print(
            f"[e2e] {node.name}: vm{len(vms) - 1} ready in {vm.boot_seconds:.2f} s "
            f"(guest uptime {vm.guest_uptime_at_ready} s)"
        )
        return vm

    try:
        yield boot
    finally:
        failed = _failed(node)
        for vm in vms:
            if failed:
                vm.save_dmesg()
            vm.shutdown()
        if failed:
            for i, vm in enumerate(vms):
                _report_tail(node, f"vm{i} console (tail; full logs in {vm.cfg.workdir})", vm.console_text(), 60)
        drop_test_dir(base, failed)


@pytest.fixture
def vm(boot_vm: BootVm) -> Vm:
    return boot_vm()


def host_image() -> HostImage:
    manifest = Path(os.environ.get("CXLTRACK_HOST_IMAGE", out_dir() / "guest" / "host.json"))
    if not manifest.exists():
        pytest.fail(f"nested host image manifest {manifest} missing: run `make guest-host`", pytrace=False)
    return load_host_image(manifest)


@pytest.fixture
def boot_host(request: pytest.FixtureRequest) -> Iterator[BootHost]:
    node = request.node
    assert isinstance(node, pytest.Item)
    base = _fresh_test_dir(node)
    hosts: list[Host] = []
    node.stash[HOSTS_KEY] = hosts

    def boot(region: str | None = "devdax", config: str = "default", kvm: bool = True, memory: str = "3G") -> Host:
        topo = tracker_topology(named_config(config))
        h = _boot_host(qemu_binary(), host_image(), topo, base / f"host{len(hosts)}", region, kvm, memory)
        hosts.append(h)
        assert h.vm.boot_seconds is not None
        node.user_properties.append((_BOOT_PROPERTY, h.vm.boot_seconds))
        print(f"[nested] {node.name}: host{len(hosts) - 1} ready in {h.vm.boot_seconds:.2f} s")
        return h

    try:
        yield boot
    finally:
        failed = _failed(node)
        for h in hosts:
            if failed:
                h.vm.save_dmesg()
            vms = list(h.vms.values())
            h.shutdown(save_logs=failed)
            if failed:
                _report_tail(node, f"host console (tail; logs in {h.vm.cfg.workdir})", h.vm.console_text(), 60)
                for v in vms:
                    try:
                        con = (v.workdir / "console.log").read_text(errors="replace")
                    except OSError:
                        con = "(no console log)"
                    _report_tail(node, f"L2 {v.spec.name} console (tail; logs in {v.workdir})", con, 40)
        drop_test_dir(base, failed)


@pytest.fixture
def host(boot_host: BootHost) -> Host:
    return boot_host()


@pytest.fixture
def nested_vm(host: Host) -> NestedVm:
    return host.start_vm(VmSpec("vm0", device=DeviceMemory("devdax", 128 << 20)))
