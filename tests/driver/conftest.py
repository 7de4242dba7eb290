# SPDX-License-Identifier: Apache-2.0
"""Full-stack driver tests: each test boots QEMU's CXL machine with the cxltrack
tracker as function 1 of the type-3 device, loads cxltrack.ko in the guest and
drives it through the CLI and the guest test programs (tests/driver/guest/).

Every VM a test boots is checked at teardown: the guest kernel log must hold no
WARNING/BUG/Oops/lockdep/KASAN/UBSAN/hung-task report (the pinned Debian kernel
has no lockdep; the pattern is checked anyway so a debug kernel would be caught).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from cxltrack import config as cxlconfig
from cxltrack.config import DeviceConfig
from cxltrack.harness import Device, Vm
from cxltrack.harness.kernlog import dmesg_splats
from cxltrack.harness.pytest_plugin import BootVm, qemu_binary
from cxltrack.harness.tracker import tracker_topology

pytest_plugins = ["cxltrack.harness.pytest_plugin"]

DAX = "/dev/dax0.0"

_qemu_has_tracker: bool | None = None


def require_tracker_qemu() -> None:
    global _qemu_has_tracker
    if _qemu_has_tracker is None:
        out = subprocess.run([str(qemu_binary()), "-device", "help"], capture_output=True, text=True, timeout=60).stdout
        _qemu_has_tracker = '"cxltrack"' in out
    if not _qemu_has_tracker:
        pytest.fail(
            f"{qemu_binary()} has no 'cxltrack' device (the qemu branch's device model is "
            "needed: merge it, or point CXLTRACK_QEMU at a build that has it)",
            pytrace=False,
        )


@dataclass
class Tracker:
    vm: Vm
    cfg: DeviceConfig
    bdf: str  # function 1 as the guest sees it, e.g. 0000:0d:00.1

    def run(self, cmd: str, timeout: float = 120, check: bool = True):  # type: ignore[no-untyped-def]
        return self.vm.run(cmd, timeout=timeout, check=check)

    def sysfs(self, name: str) -> str:
        return self.vm.run(f"cat /sys/class/cxltrack/cxltrack0/{name}").out.strip()


TrackerFactory = Callable[..., Tracker]

TRACING = "/sys/kernel/tracing"
# TCG has no cache model: the driver's write-backs are seen where it asks the kernel for them.
# flush: the first 8 bytes at the address (which page it is) and the length.
CACHE_PROBES = {"flush": "clflush_cache_range size=%si:u32 head=+0(%di):u64", "wbinvd": "wbinvd_on_all_cpus"}
KprobeEvent = tuple[str, dict[str, int]]


def kprobe_trace(t: Tracker, probes: dict[str, str], cmd: str) -> tuple[str, list[KprobeEvent]]:
    """Run cmd in the guest with kprobe events on (name → "function fetch-args"): its stdout
    and the events its own program (the command's first word) hit, as (name, {arg: value})."""
    t.run(f"grep -q ' {TRACING} ' /proc/mounts || mount -t tracefs nodev {TRACING}")
    for name, spec in probes.items():
        t.run(f"echo 'p:cxlt/{name} {spec}' >> {TRACING}/kprobe_events")
    t.run(f"echo > {TRACING}/trace && echo 1 > {TRACING}/events/cxlt/enable")
    try:
        out = t.run(cmd, timeout=60).out
    finally:
        t.run(f"echo 0 > {TRACING}/events/cxlt/enable")
    comm = cmd.split()[0][:15]  # the kernel's task name
    events: list[KprobeEvent] = []
    for line in t.run(f"cat {TRACING}/trace").out.splitlines():
        if not line.strip().startswith(comm + "-"):
            continue
        # "<task>-<pid> [cpu] flags time: <name>: (<function>+0x0/0x..) arg=value ..."
        name = line.split(": ", 2)[1]
        args = line.split(") ", 1)[1].split() if ") " in line else []
        events.append((name, {k: int(v, 0) for k, v in (a.split("=", 1) for a in args)}))
    t.run(f"echo > {TRACING}/kprobe_events")
    return out, events


@pytest.fixture
def tracker_vm(boot_vm: BootVm) -> Iterator[TrackerFactory]:
    """Factory: tracker_vm(config="default", region=True, raw=False, load=True, cfg=None,
    devices=None, tcg_single_thread=False) → Tracker (cfg: a DeviceConfig instead of a named
    one; devices: more QEMU devices for the topology; tcg_single_thread: see VmConfig).
    Boots the topology with the tracker built from config/<config>.toml, loads cxltrack.ko
    (allow_raw=1 if raw) and creates the devdax region /dev/dax0.0."""
    made: list[Vm] = []

    def make(
        config: str = "default",
        region: bool = True,
        raw: bool = False,
        load: bool = True,
        append: str = "",
        cfg: DeviceConfig | None = None,
        devices: list[Device] | None = None,
        tcg_single_thread: bool = False,
    ) -> Tracker:
        require_tracker_qemu()
        cfg = cfg or cxlconfig.named(config)
        topo = tracker_topology(cfg)
        for dev in devices or []:
            topo.add(dev)
        vm = boot_vm(topology=topo, append=append, tcg_single_thread=tcg_single_thread)
        made.append(vm)
        bdf = next(d["bdf"] for d in vm.pci_devices() if d["vendor"] == "0x1b36" and d["device"] == "0x0c7e")
        if load:
            vm.run(f"modprobe cxltrack{' allow_raw=1' if raw else ''}")
            vm.run("test -c /dev/cxltrack0")
        if region:
            vm.run("cxl-region create devdax", timeout=60)
        return Tracker(vm, cfg, bdf)

    yield make
    problems = []
    for vm in made:
        if vm.answering():
            try:
                splats = dmesg_splats(vm)
            except Exception as exc:  # report it, do not mask the test's own result
                problems.append(f"could not read dmesg: {exc}")
                continue
            if splats:
                problems.append("\n".join(splats[:40]))
    if problems:
        pytest.fail("guest kernel log has warnings/oopses:\n" + "\n".join(problems), pytrace=False)
