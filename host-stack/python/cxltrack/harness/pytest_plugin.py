# SPDX-License-Identifier: Apache-2.0
"""pytest fixtures for full-stack tests (enable with `pytest_plugins = ["cxltrack.harness.pytest_plugin"]`).

Fixtures:
  boot_vm   factory: boot_vm(topology=None, image=None, append="", region=None) → started Vm;
            every VM it made is shut down when the test ends (pass, fail or Ctrl-C).
  vm        one VM on the default CXL topology, region not created.

Configuration (set by `make test-e2e`):
  CXLTRACK_QEMU         path of qemu-system-x86_64
  CXLTRACK_GUEST_IMAGE  image manifest (out/guest/busybox.json by default)
  CXLTRACK_KEEP_LOGS=1  keep out/e2e/<test>/ for passing tests too

Logs of a test go to out/e2e/<test>/ (one subdirectory per VM: console.log,
qemu.log, commands.log, and dmesg.log if the guest still answered). They are
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

from .image import GuestImage, load_image
from .pins import out_dir
from .topology import Topology, cxl_type3_topology
from .vm import Vm, VmConfig

BootVm = Callable[..., Vm]
_REPORT_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()
# (test, wall seconds from starting QEMU to the agent's greeting, guest uptime then)
BOOT_TIMES: list[tuple[str, float, float | None]] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not BOOT_TIMES:
        return
    walls = sorted(t for _, t, _ in BOOT_TIMES)
    median = walls[len(walls) // 2]
    terminalreporter.write_line(
        f"e2e boot-to-ready: {len(walls)} VM(s), min {walls[0]:.2f} s, median {median:.2f} s, "
        f"max {walls[-1]:.2f} s (QEMU start to guest agent ready)"
    )


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


@pytest.fixture
def boot_vm(request: pytest.FixtureRequest) -> Iterator[BootVm]:
    node = request.node
    assert isinstance(node, pytest.Item)
    base = test_dir(node)
    shutil.rmtree(base, ignore_errors=True)
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
        BOOT_TIMES.append((node.name, vm.boot_seconds, vm.guest_uptime_at_ready))
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
                tail = "\n".join(vm.console_text().splitlines()[-60:])
                node.add_report_section("teardown", f"vm{i} console (tail; full logs in {vm.cfg.workdir})", tail)
        elif os.environ.get("CXLTRACK_KEEP_LOGS") != "1":
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def vm(boot_vm: BootVm) -> Vm:
    return boot_vm()
