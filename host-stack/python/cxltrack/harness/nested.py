# SPDX-License-Identifier: Apache-2.0
"""Nested virtualisation: a hypervisor host (L1) whose VMs (L2) keep memory on the device.

    L0  this machine: the project's QEMU (TCG) with the CXL type-3 device and the tracker
    L1  the host: the pinned kernel, cxltrack.ko, kvm_amd nested=1, the CXL region as devdax or
        kmem, and the project's QEMU again (its shared libraries in the image)
    L2  the VMs: the same kernel with a small busybox initramfs and the agent; RAM in ordinary
        L1 memory (node 0) plus, optionally, a NUMA node backed by the device

    host = boot_host(qemu, load_host_image(manifest), tracker_topology(config), workdir, region="devdax")
    vm = host.start_vm(VmSpec("vm0", device=DeviceMemory("devdax", 128 * MiB)))
    dirty = host.harvest_dirty(0, host.device_pages())  # clears the log
    gpas = vm.touch(256)                                # 256 pages written on node 1
    pages = {dpa >> host.page_shift() for dpa in vm.device_dpas(gpas)}

The harness talks to an L2 VM with the same agent protocol and QMP client as to its own VMs:
the L0 QEMU gives L1 two virtio-serial ports per VM slot (`org.cxltrack.relay.agent.N`,
`org.cxltrack.relay.qmp.N`, joined to harness sockets, `VmConfig.relays`), and in L1
`cxlt-relay` joins each port to the Unix socket that the VM's QEMU connects to (its agent
port's chardev and its monitor). `cxlt-vm` (host-stack/guest-image/host/) starts and stops
VMs in L1. The host's QEMU is the project's build, run through its own dynamic loader and
libraries under /opt/cxltrack/qemu (the image's /usr/lib holds Debian 13's libraries of `cxl`
and `daxctl`; mixing the two libcs breaks both).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from .agent import AgentChannel, CommandResult, GuestCommandError, GuestError
from .image import DEFAULT_APPEND, EXTRA_MODULES, GUEST_IMAGE_DIR, InitramfsImage, InitramfsSpec, build_initramfs
from .kernlog import first_report, vcpu_stack_end_panic
from .kvmstats import insmod_stock_kvm
from .lockup import LockupWatch, in_own_module
from .pins import cache_dir
from .qmp import Qmp, QmpError
from .stall import INSNS, decode, hmp_bytes, stall_line
from .topology import Topology
from .vm import TCG_CPU, Vm, VmConfig, machine_lost_to_platform

MiB = 1 << 20
# The VM's kernel adds hotplugged memory in memory blocks (128 MiB on x86-64 below 64 GiB):
# a device node of another size fails to online ("add_memory failed").
BLOCK = 128 * MiB
# VM slots of a host: two relay ports each. Four VMs at once are enough for the swap tier's
# several-VM experiments and a migration (source + destination) beside them.
VM_SLOTS = 4
QEMU_DIR = "/opt/cxltrack/qemu"
L2_DIR = "/opt/cxltrack/l2"
RUN_DIR = "/run/cxlt"
# Firmware an L2 q35 machine with -kernel needs (no VGA, no NIC ROM: -nodefaults).
FIRMWARE = ("bios-256k.bin", "linuxboot_dma.bin", "kvmvapic.bin")
# L2 loads the virtio-blk driver for its disk; L1 loads kvm_amd when the host is set up.
L2_BOOT_MODULES = ("virtio_blk",)
# On demand in L2: a swap tier's virtio-pmem device (SwapTier; their dependencies libnvdimm,
# nd_virtio, nd_btt come with them). Not at boot: a VM without a tier need not pay for them.
# zram: the guest's compressed swap, the third swap backend of `make experiments-memflex`.
# dm_writecache (with dm_mod): the tier in front of the disk (SwapTier overflow "lru").
L2_EXTRA_MODULES = ("virtio_pmem", "nd_pmem", "zram", "dm_writecache")
# The dm-writecache device of a SwapTier with overflow "lru", and its status counters in order
# (the kernel's Documentation/admin-guide/device-mapper/writecache.rst, "Status").
TIER_DM = "cxlt-tier"
DM_STATUS_FIELDS = (
    "error",
    "blocks",
    "free",
    "writeback",
    "reads",
    "read_hits",
    "writes",
    "write_hits_uncommitted",
    "write_hits_committed",
    "writes_around",
    "writes_allocated",
    "writes_blocked",
    "flushes",
    "discards",
)
# zram: the stock baseline's swap device (vswapper.swap_on)
HOST_EXTRA_MODULES = (*EXTRA_MODULES, "kvm_amd", "virtio_balloon", "zram")
HOST_DIR = GUEST_IMAGE_DIR / "host"
# Shell for hosts and VMs alike: cgroup v2 at /sys/fs/cgroup unless /proc/mounts has it there
# (busybox has no mountpoint).
MOUNT_CGROUP2 = (
    "mkdir -p /sys/fs/cgroup && "
    "{ grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup; }"
)
# `quiet`: every console character is a port write that exits from L2 to the host's QEMU
# through two levels of (emulated) SVM; the boot messages alone cost about 50 s of an L2
# boot here (docs/harness.md, "Nested"). Warnings and errors are still printed.
L2_APPEND = f"{DEFAULT_APPEND} quiet"


def relay_names(slots: int = VM_SLOTS) -> tuple[str, ...]:
    return tuple(f"org.cxltrack.relay.{ch}.{n}" for n in range(slots) for ch in ("agent", "qmp"))


# -- the host image ------------------------------------------------------------


def _ldd(binary: Path) -> list[Path]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            libs.append(Path(path))
    return libs


def qemu_bundle(qemu: Path) -> dict[str, Path]:
    """Image path → file: the project's QEMU (stripped), its libraries and loader, the firmware
    an L2 VM needs, and a `qemu-system-x86_64` wrapper on PATH that runs it with them."""
    key = hashlib.sha256(qemu.read_bytes()).hexdigest()[:16]
    dest = cache_dir() / "host-qemu" / key
    if not (dest / ".ready").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        shutil.copy2(qemu, dest / "qemu-system-x86_64")
        subprocess.run(["strip", str(dest / "qemu-system-x86_64")], check=True)
        wrapper = dest / "wrapper"
        wrapper.write_text(
            "#!/bin/sh\n"
            "# The project's QEMU with its own loader and libraries (harness/nested.py).\n"
            f"d={QEMU_DIR}\n"
            'exec "$d/lib/ld-linux-x86-64.so.2" --library-path "$d/lib" "$d/bin/qemu-system-x86_64" '
            '-L "$d/share/qemu" "$@"\n'
        )
        wrapper.chmod(0o755)
        (dest / ".ready").touch()
    files = {
        f"{QEMU_DIR}/bin/qemu-system-x86_64": dest / "qemu-system-x86_64",
        "opt/cxltrack/bin/qemu-system-x86_64": dest / "wrapper",
    }
    for lib in _ldd(qemu):
        files[f"{QEMU_DIR}/lib/{lib.name}"] = lib.resolve()
    share = qemu.parent.parent / "share" / "qemu"
    for fw in FIRMWARE:
        if not (share / fw).exists():
            raise FileNotFoundError(f"{share / fw} missing (the QEMU install has no firmware next to it)")
        files[f"{QEMU_DIR}/share/qemu/{fw}"] = share / fw
    return {k.lstrip("/"): v for k, v in files.items()}


@dataclass(frozen=True)
class HostImage:
    """The L1 image (with the L2 image inside it)."""

    host: InitramfsImage
    vm: InitramfsImage

    def to_json(self) -> str:
        return json.dumps(
            {"type": "nested-host", "host": json.loads(self.host.to_json()), "vm": json.loads(self.vm.to_json())},
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> HostImage:
        d = json.loads(text)
        if d.get("type") != "nested-host":
            raise ValueError(f"not a nested host image manifest: {d.get('type')}")
        return cls(InitramfsImage.from_json(json.dumps(d["host"])), InitramfsImage.from_json(json.dumps(d["vm"])))


def build_host_image(
    qemu: Path,
    bin_dirs: tuple[Path, ...],
    module_dirs: tuple[Path, ...],
    force: bool = False,
    vm_bin_dirs: tuple[Path, ...] | None = None,
) -> HostImage:
    """`vm_bin_dirs`: the L2 image's tools (default: all of `bin_dirs`). `make guest-host` gives
    L2 only the static guest tools (out/guest/bin): the driver's test programs, the CLI, the
    KVM selftests, the demo and the pool manager need /dev/cxltrack0 or SVM, which an L2 VM
    has neither of, and the L2 initramfs is unpacked in the VM's 192 MiB, of which its kernel
    keeps about 130 MiB reserved (with the initramfs, and SWIOTLB bounce buffers once maxmem
    reaches above 4 GiB): a 29 MB initramfs with every tool no longer unpacked there
    ("Initramfs unpacking failed: write error", then init panics); with the guest tools alone
    it is 14 MB."""
    vm = build_initramfs(
        InitramfsSpec(
            name="l2",
            boot_modules=L2_BOOT_MODULES,
            extra_modules=L2_EXTRA_MODULES,
            bin_dirs=bin_dirs if vm_bin_dirs is None else vm_bin_dirs,
            module_dirs=(),
            userland=False,
            append=L2_APPEND,
        ),
        force=force,
    )
    files = qemu_bundle(qemu)
    files[f"{L2_DIR}/vmlinuz".lstrip("/")] = vm.kernel
    files[f"{L2_DIR}/initrd".lstrip("/")] = vm.initrd
    for f in sorted(HOST_DIR.iterdir()):
        files[f"opt/cxltrack/bin/{f.name}"] = f
    host = build_initramfs(
        InitramfsSpec(
            name="host",
            extra_modules=HOST_EXTRA_MODULES,
            bin_dirs=bin_dirs,
            module_dirs=module_dirs,
            extra_files=files,
        ),
        force=force,
    )
    return HostImage(host, vm)


# -- L2 VMs ------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceMemory:
    """An L2 NUMA node (node 1) backed by the host's cxltrack region.

    devdax: `memory-backend-file` on /dev/dax0.0 at `offset` (2 MiB aligned), so the node's
    guest-physical pages map linearly onto device pages. kmem: `memory-backend-ram` bound to
    the region's NUMA node (pages anywhere on the device, found per pfn). kmem-shm: a
    `memory-backend-file` on the host's tmpfs file `shm`, bound to that node (shared memory
    whose pages another process may have faulted in, and so charged to its memory cgroup: the
    stock baseline of docs/swap-design.md section 4). ram: the same node in the host's ordinary
    memory, not on the device (a migration peer that must leave the device's pages alone)."""

    mode: str
    size: int = BLOCK
    offset: int = 0
    shm: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("devdax", "kmem", "kmem-shm", "ram"):
            raise ValueError(f"device memory mode {self.mode!r}: devdax, kmem, kmem-shm or ram")
        if (self.mode == "kmem-shm") != (self.shm is not None):
            raise ValueError("device memory: a tmpfs file (shm) with kmem-shm, and only then")
        if self.size <= 0 or self.size % BLOCK:
            raise ValueError(f"device memory size {self.size}: a positive multiple of {BLOCK // MiB} MiB")
        if self.offset % (2 * MiB) or self.offset < 0:
            raise ValueError(f"device memory offset {self.offset}: a multiple of 2 MiB")


@dataclass(frozen=True)
class MemoryManager:
    """The swap mapper's memory manager (docs/swap-design.md section 2): keeps the device node
    (kmem) within `resident_limit` bytes (0: no limit; `qom-set` on /objects/swap0 changes it at
    run time), evicting the pages the tracker saw accessed least recently. `offload`: pages that
    still equal their disk block are dropped with no swap write and read back from the image;
    off, the manager is the baseline that writes every page that is not zero to swap.
    `prevent`: VSwapper's False Reads Preventer (issue 14, KVM's KVM_SET_PREVENT_READS): an
    evicted page is flagged, the guest's stores to it go into a device slot, a page written
    whole comes back with no read; at most `prevent_max` pages flagged at once;
    `prevent_timeout`: the device's SLOT_TIMEOUT in ticks (0: left as it is)."""

    resident_limit: int = 0
    offload: bool = True
    readahead: int = 8
    period_ms: int = 100
    prevent: bool = False
    prevent_max: int = 256
    prevent_timeout: int = 0

    def object_args(self, name: str, disk: str) -> str:
        args = (
            f",image={disk},swap-file=/run/cxlt/swap-{name},offload={'on' if self.offload else 'off'}"
            f",resident-limit={self.resident_limit},readahead={self.readahead},period-ms={self.period_ms}"
        )
        if self.prevent:
            args += f",prevent=on,prevent-max={self.prevent_max},prevent-timeout={self.prevent_timeout}"
        return args


@dataclass(frozen=True)
class SwapTier:
    """A swap tier for the VM (docs/swap-design.md section 5, issue 15): `chunks` device chunks
    (2 MiB each), one contiguous run from the host's pool manager (`cxlt-pool`, Host.start_pool),
    taken before the VM starts and released (scrubbed by the device) after it exits. The VM sees
    them as a virtio-pmem device (`memory-backend-file` on /dev/dax0.0 at the run's offset),
    /dev/pmem0 in the guest, which the harness `mkswap`s and `swapon`s at `priority` once the VM
    is ready. `disk_swap` bytes (0: none): a lower-priority (`disk_priority`) swap area on a
    virtio-blk disk (serial `cxlt-swap`, a sparse image in the host's tmpfs), which takes the
    pages when the tier is full (the guest's own hybrid overflow). `check_fresh`: before
    `mkswap`, the VM counts the pages of /dev/pmem0 that are not zero (cxlt-daxcount in the
    guest; NestedVm.tier_fresh_nonzero): a fresh run must read zero (isolation).

    A pool without `chunks` free chunks in one run does not keep a VM with a disk swap area
    from starting (MemFlex: an exhausted pool overflows to disk): the VM takes the longest
    free run there is, or no tier at all, and swaps the rest to its disk
    (NestedVm.tier_shortfall says how many chunks it went without).

    A running VM's tier grows by whole runs (NestedVm.grow_tier): each a further virtio-pmem
    device, hot-plugged into one of `grow_ports` empty PCIe root ports (the q35 root bus takes
    no hot-plug), swapped to at the tier's priority.

    `overflow`: how the tier and the disk share the swap traffic. "priority": two swap areas,
    the tier above the disk, so once the tier is full the newest pages go to the disk.
    "lru" (MemFlex's rule, the oldest pages to disk): one swap area, a dm-writecache device
    (`cxlt-dmwc`) with the disk as its origin and /dev/pmem0 as its cache: every swap-out is a
    copy into the tier, and when the tier is fuller than `lru_watermarks[0]` percent the
    least recently written blocks are written back to the disk until it is down to
    `lru_watermarks[1]` percent (NestedVm.tier_dm is the guest's device). Its size is the
    disk's: `disk_swap` must be given. It does not grow."""

    chunks: int
    priority: int = 10
    disk_swap: int = 0
    disk_priority: int = 1
    swapon: bool = True
    check_fresh: bool = False
    grow_ports: int = 0  # empty PCIe root ports, each for one run added while the VM runs
    overflow: str = "priority"  # or "lru"
    lru_watermarks: tuple[int, int] = (50, 25)

    def __post_init__(self) -> None:
        if self.overflow not in ("priority", "lru"):
            raise ValueError(f"overflow {self.overflow!r}: 'priority' or 'lru'")
        if self.overflow == "lru" and (not self.disk_swap or self.grow_ports):
            raise ValueError("overflow 'lru' needs a disk swap area and does not grow")
        high, low = self.lru_watermarks
        if not 0 <= low <= high <= 100:
            raise ValueError(f"watermarks {self.lru_watermarks}: 0 <= low <= high <= 100")
        if not 0 <= self.grow_ports <= 8:
            raise ValueError(f"{self.grow_ports} ports to grow the tier by: 0..8")
        if not 1 <= self.chunks <= 64:
            raise ValueError(f"swap tier of {self.chunks} chunks: 1..64 (one run from the pool)")
        if self.disk_swap < 0 or self.disk_swap % MiB:
            raise ValueError(f"disk swap of {self.disk_swap} bytes: a multiple of 1 MiB")
        if not (0 <= self.disk_priority < self.priority <= 32767):
            raise ValueError("swap priorities: 0 <= disk_priority < priority <= 32767")


@dataclass(frozen=True)
class TierRun:
    """A run of chunks the pool gave a VM: chunk numbers, device and /dev/dax0.0 addresses."""

    vm: str
    owner: int
    first: int
    count: int
    dpa: int
    size: int
    offset: int  # in /dev/dax0.0: dpa less the DPA where the dax device starts

    def pages(self, page_shift: int) -> tuple[int, int]:
        """(first device page, page count) of the run."""
        return self.dpa >> page_shift, self.size >> page_shift


@dataclass(frozen=True)
class RunBits:
    """One run in one round of NestedVm.observe_tier: pages the device saw accessed, written,
    and the pages of the run the host's books say the guest still needs after it."""

    accessed: int
    written: int
    live: int


def _bitmap_pages(hexbits: str, count: int) -> set[int]:
    """The pages set in a `cxltrack harvest --format hex` bitmap (bit i of byte i // 8)."""
    raw = bytes.fromhex(hexbits)
    if len(raw) * 8 < count:
        raise GuestError(f"harvest bitmap of {len(raw)} bytes for {count} pages")
    return {i for i in range(count) if raw[i // 8] >> (i % 8) & 1}


@dataclass(frozen=True)
class TierCopy:
    """NestedVm.tier_to_ram: bytes the device copied, the pool's time for the copies, QEMU's
    remap, where the copy is, and the host's whole part."""

    bytes: int
    copy_s: float
    revoke_s: float  # the qom-set x-revoked-copy calls (QEMU maps the copy)
    where: str  # the copy's file system: /dev/hugepages, or /dev/shm without huge pages
    host_s: float  # the host's part, from before the copy to after the revocation
    held_s: float = 0.0  # the vCPUs held (x-revoke-hold): the final pass and the remap
    recopied: int = 0  # chunks the final pass copied again (written after the copy's last pass)


class PoolError(GuestError):
    """The pool manager refused a request ("error ..." with its reason) or did not answer."""


POOL_SOCK = f"{RUN_DIR}/pool.sock"
# Tier runs the host sent to disk (NestedVm.tier_run_to_disk): L1's tmpfs, as the VMs' disk
# images are, and one of the two places the pool writes copies to (cxlt-pool's `copy`).
TIER_DISK_DIR = "/dev/shm"
POOL_LOG = f"{RUN_DIR}/pool.log"


class Pool:
    """The host's pool manager (`cxlt-pool serve`, host-stack/pool/cxlt-pool.c): one process for
    all VMs, holding the tracker open; its chunks are bound to that file, so its death releases
    them and the device scrubs them."""

    def __init__(self, host: Host, first: int, count: int) -> None:
        self.host = host
        self.first = first
        self.count = count
        self.pid: int | None = None
        self.dead = False

    def start(self) -> Pool:
        out = self.host.run(
            f"rm -f {POOL_SOCK}; setsid cxlt-pool serve {POOL_SOCK} {self.first} {self.count} "
            f"</dev/null >{POOL_LOG} 2>&1 & echo $!"
        ).out
        self.pid = int(out.split()[-1])
        for _ in range(100):
            res = self.host.run(f"cxlt-pool {POOL_SOCK} ping", check=False)
            if res.ok:
                # its own word for its pid (setsid may have forked)
                m = re.search(r"serving .* pid (\d+)", self.log())
                self.pid = int(m.group(1)) if m else self.pid
                return self
            if not self.host.run(f"kill -0 {self.pid}", check=False).ok:
                break
            time.sleep(0.1)
        raise PoolError(f"the pool manager did not start:\n{self.log()}")

    def ask(self, request: str, timeout: float = 240) -> dict[str, str]:
        """One request; the answer's key=value words. "error ..." raises PoolError."""
        if self.dead:
            raise PoolError(f"the pool manager was killed; no answer to {request!r}")
        res = self.host.run(f"cxlt-pool {POOL_SOCK} {request}", check=False, timeout=timeout)
        words = res.out.split()
        if res.status != 0 or not words or words[0] != "ok":
            raise PoolError(f"pool: {request!r}: {res.out.strip() or res.err.strip()} (status {res.status})")
        return dict(w.split("=", 1) for w in words[1:] if "=" in w)

    def grow(self, vm: str, chunks: int) -> TierRun:
        """A new VM's tier: an owner id, then a contiguous run of free chunks."""
        owner = int(self.ask(f"open {vm}")["owner"])
        try:
            a = self.ask(f"grow {vm} {chunks}")
        except PoolError:
            with contextlib.suppress(PoolError):
                self.ask(f"release {vm}")
            raise
        return self._run(vm, owner, a)

    def grow_more(self, vm: str, chunks: int) -> TierRun:
        """Another run of `chunks` free chunks for a VM that holds one already (same owner)."""
        a = self.ask(f"grow {vm} {chunks}")
        return self._run(vm, int(a["owner"]), a)

    def _run(self, vm: str, owner: int, a: dict[str, str]) -> TierRun:
        dpa = int(a["dpa"], 0)
        return TierRun(vm, owner, int(a["first"]), int(a["count"]), dpa, int(a["bytes"]), dpa - self.host.dpa_base())

    def shrink(self, vm: str, run: TierRun) -> dict[str, str]:
        """Release the chunks of `run`, one of `vm`'s, and wait for their scrub; the VM keeps
        its other chunks (the answer's `chunks`)."""
        return self.ask(f"shrink {vm} {run.first} {run.count}")

    def release(self, vm: str) -> dict[str, str]:
        """Release every chunk of `vm` and wait for the device's scrub of each (SCRUB_DONE)."""
        return self.ask(f"release {vm}")

    def kill(self, signal: str = "KILL") -> None:
        """Kill the pool manager (a crash) and wait until it is gone."""
        if self.pid is None:
            raise PoolError("the pool manager was not started")
        self.host.run(
            f"kill -{signal} {self.pid}; i=0; while kill -0 {self.pid} 2>/dev/null; do "
            "i=$((i + 1)); [ $i -gt 100 ] && exit 1; sleep 0.1; done"
        )
        self.dead = True

    def log(self) -> str:
        return self.host.run(f"cat {POOL_LOG}", check=False).out


@dataclass
class VmSpec:
    name: str = "vm0"
    memory: int = 192 * MiB  # node 0, ordinary host memory (boot, kernel, initramfs)
    device: DeviceMemory | None = None
    smp: int = 1
    accel: str = "kvm"  # kvm: nested SVM in the host; tcg: emulated inside the host
    disk: str | None = None  # path in the host of a raw image (Host.make_disk): virtio-blk, 4 KiB blocks
    incoming: str | None = None  # migration target: QEMU -incoming URI (the VM starts paused)
    append: str = ""
    # KVM's paravirtual interfaces (kvmclock, steal time, PV EOI): KVM itself writes their
    # pages in guest memory, outside QEMU's view. Off (kvm=off) where pages are compared.
    paravirt: bool = True
    # Migration dirty bits of the device node from the tracker, by the host QEMU's
    # cxltrack-dirty-log object (devdax only); KVM then does not log that memory.
    device_dirty_log: bool = False
    # The object's dpa. Default: none given, the host's driver tells where the node is
    # (CXLT_IOC_ADDR_PAGE); a given dpa must agree with it unless `unchecked` (x-dpa-unchecked:
    # a negative control's wrong range).
    device_dirty_log_dpa: int | None = None
    device_dirty_log_unchecked: bool = False
    # The object's zeroed=on: the host zeroed the node's range with the device (Host.zero)
    # before the VM started, so a migration's first round leaves out the pages the device has
    # not seen written (and the object refuses a range written since).
    device_dirty_log_zeroed: bool = False
    # The disk's reads into the device node set block associations in the tracker, its
    # writes take them away (the host QEMU's cxltrack-swap-mapper, disk id as given;
    # docs/swap-design.md). Needs `disk` and a device node.
    swap_mapper_disk: int | None = None
    # The mapper's memory manager (needs swap_mapper_disk and a kmem device node).
    memory_manager: MemoryManager | None = None
    # A swap tier of device chunks from the host's pool manager, as virtio-pmem (devdax host).
    swap_tier: SwapTier | None = None
    extra_args: list[str] = field(default_factory=list)
    boot_timeout: float = 300.0
    command_timeout: float = 120.0


# CPU resets QEMU logs per x86 vCPU while a machine starts (NestedVm.resets_after_start).
START_RESETS_PER_VCPU = 2


SILENT = " with nothing on its console (a triple fault)"  # how a silent L2 reset is described


class VmReset(GuestError):
    """An L2 VM was reset while in use (NestedVm.shutdown found CPU resets past ready).
    `kernel_report`: the first kernel report on its console (kernlog.first_report), empty
    when its kernel said nothing: a triple fault, which SVM turns into a shutdown intercept
    (KVM re-INITs the vCPU, the VM's QEMU resets the machine). No code of the project can
    cause that from the VM's device node: the node is ZONE_MOVABLE in the guest
    (memhp_default_state=online_movable), so it holds user and page-cache pages only, never the
    page tables, descriptor tables or stacks a triple fault needs; a wrong page there is a
    wrong page the workloads count, or an oops. It is the platform's (docs/harness.md: L2
    guests reset under TCG's nested SVM, during migrations with stock KVM too)."""

    def __init__(self, message: str, kernel_report: list[str] | None = None) -> None:
        super().__init__(message)
        self.kernel_report = kernel_report or []

    @property
    def silent(self) -> bool:
        return not self.kernel_report


def silent_vm_reset(exc: BaseException) -> VmReset | None:
    """The VmReset with nothing on the VM's console in `exc`'s chain (cause or context), if any."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, VmReset) and e.silent:
            return e
        e = e.__cause__ or e.__context__
    return None


RESET_RUNS = 3  # the most runs of one VM workload that a repeat with fresh VMs makes
_P = ParamSpec("_P")
_R = TypeVar("_R")


def run_with_fresh_vms(
    what: str, spoiled: Callable[[Exception], str | None], run: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs
) -> tuple[_R, int]:
    """`run(*args, **kwargs)` and the number of runs it took: a run that failed with an error
    `spoiled` describes (the platform lost a VM, not the code under test) is printed and done
    again with fresh VMs, at most RESET_RUNS runs in all. Any other failure is the caller's at
    once, as is the last run's."""
    for attempt in range(1, RESET_RUNS):
        try:
            return run(*args, **kwargs), attempt
        except Exception as exc:
            why = spoiled(exc)
            if why is None:
                raise
            print(
                f"[nested] {what}: {why} during run {attempt}; running it again with fresh VMs "
                f"(at most {RESET_RUNS} runs)",
                flush=True,
            )
    return run(*args, **kwargs), RESET_RUNS


def _silent_reset_why(exc: Exception) -> str | None:
    reset = silent_vm_reset(exc)
    return str(reset).splitlines()[0] if reset is not None else None


def repeat_on_silent_reset(what: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Run a function that starts an L2 VM, runs a workload in it and shuts it down again
    with a fresh VM (run_with_fresh_vms) when the VM was reset with nothing on its console (a
    triple fault, see VmReset: the platform, not the code under test). A reset after a kernel
    report, and any other failure, is the caller's at once."""

    def wrap(run: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(run)
        def repeated(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return run_with_fresh_vms(what, _silent_reset_why, run, *args, **kwargs)[0]

        return repeated

    return wrap


class VmBootHung(GuestError):
    """An L2 VM whose kernel never reached the image's init: its QEMU runs, its console holds no kernel report and
    no `init:` line, and its agent never greeted. Seen under TCG's nested SVM in a VM with no device memory at all
    (vmc of test_an_exhausted_pool_overflows_to_disk, 2026-11-29): vCPU 0 inside KVM for 300 s, KVM emulating
    instructions and injecting page faults (about 15 000 of each per second), after the kernel had started. Nothing
    of the project runs in such a VM before init, so Host.start_vm boots it once more, printed."""


class VmHung(GuestError):
    """An L2 VM that arrived by migration does not answer once resumed (NestedVm.reattach),
    after its memory compared equal to the source's."""


def _drain(sock: socket.socket) -> None:
    """Drop bytes a previous VM of the slot left in the relay socket."""
    sock.settimeout(0.0)
    with contextlib.suppress(BlockingIOError, TimeoutError, OSError):
        while sock.recv(1 << 16):
            pass


class NestedVm:
    """An L2 VM: its agent and QMP through the host's relays; logs through the host's agent."""

    def __init__(self, host: Host, spec: VmSpec, slot: int) -> None:
        self.host = host
        self.spec = spec
        self.slot = slot
        self.workdir = host.vm.cfg.workdir / spec.name
        self.agent_sock = host.vm.relays[f"org.cxltrack.relay.agent.{slot}"]
        self.qmp_sock = host.vm.relays[f"org.cxltrack.relay.qmp.{slot}"]
        self.agent: AgentChannel | None = None
        self.qmp: Qmp | None = None
        self.boot_seconds: float | None = None
        self.pid: int | None = None
        self.stopped = False
        self._device_gpa: int | None = None
        self.resets_at_ready: int | None = None  # CPU resets logged when the agent was ready
        self.tier: TierRun | None = None  # the swap tier's chunks while the VM holds them
        self.tier_released: dict[str, str] | None = None  # the pool's answer to their release
        self.tier_fresh_nonzero: int | None = None  # SwapTier.check_fresh: non-zero pages seen
        self.tier_shortfall = 0  # chunks of SwapTier.chunks the pool had no room for
        self.tier_dm: str | None = None  # SwapTier overflow "lru": the guest's dm-writecache device
        self.tier_grown: list[TierRun] = []  # runs added while the VM ran (grow_tier)
        # QEMU objects of the tier's runs (memory-backend-file "tierN"): every one ever made
        # (release_tier revokes each; revoking again is a no-op), the next one's number, and
        # which of them still map the device's chunks (tier_to_ram takes them off it).
        self.tier_objects = 0
        self.tier_live: dict[str, TierRun] = {}
        self.tier_ports_used = 0
        self.tier_dev = "/dev/pmem0"  # the guest's block device of the current tier
        self.tier_plugged: dict[str, str] = {}  # guest block device -> its QEMU object (_plug_run)
        # The host's books on the runs from the device's bits (observe_tier): rounds so far,
        # and per object the pages of its run the guest still needs: page -> round written.
        self.tier_rounds = 0
        self.tier_pages: dict[str, dict[int, int]] = {}
        self.tier_on_disk: dict[str, str] = {}  # object -> its file on the host's disk (tier_run_to_disk)
        self.tier_priority: dict[str, int] = {}  # object -> the guest's swap priority of its area

    # -- command line ------------------------------------------------------------
    def qemu_args(self) -> list[str]:
        s = self.spec
        if s.accel not in ("kvm", "tcg"):
            raise ValueError(f"accel {s.accel!r}: kvm or tcg")
        cpu = ("host" if s.accel == "kvm" else "max") + ("" if s.paravirt else ",kvm=off")
        # No SVM in the VM: it runs no VMs of its own, and without it QEMU has no nested
        # state to migrate. With it, the host's KVM (itself nested on TCG) now and then
        # refused the state at the destination ("Failed to set nested state: Invalid
        # argument") and the destination QEMU exited after the switch-over.
        cpu += ",-svm"
        # No fast string moves: with FSRM (or ERMS) the VM's kernel copies with `rep movsb`,
        # which TCG (L0 runs this VM's code) executes a byte at a time, and on the device's
        # memory (the CXL window, a swap tier's pmem) every byte is then one I/O callback in
        # L0. Without them memcpy and copy_mc move 8 bytes per access: an L2 swap-in from a
        # tier took 153 ms/MiB with them and 42 without (docs/results.md, issue 15).
        cpu += ",-fsrm,-erms"
        # A guest reset reboots the VM (no -no-reboot): under nested SVM on TCG an L2 kernel
        # has now and then died before its console came up, and with -no-reboot its QEMU then
        # exited with status 0 and no trace. Now -d cpu_reset logs the CPU state at the reset,
        # start() reports a reboot before ready, and a reboot after ready fails the test.
        args = ["-accel", s.accel, "-cpu", cpu, "-M", "q35"]
        # Named threads ("CPU 0/KVM", the memory manager's): the diagnostics of a stuck VM
        # list them.
        args += ["-name", f"{s.name},debug-threads=on"]
        args += ["-smp", str(s.smp)]
        tier = self._tier_size()
        if s.device is None and not tier:
            args += ["-m", f"{s.memory // MiB}M"]
        elif s.device is None:
            # The tier's virtio-pmem device sits in the machine's device-memory area.
            args += ["-m", f"{s.memory // MiB}M,slots=2,maxmem={(s.memory + tier) // MiB + 2048}M"]
        else:
            # The device node is a cold-plugged DIMM on node 1, onlined movable by the VM's
            # kernel (memhp_default_state): as ordinary RAM, node 1 would hold the top of the
            # VM's memory, where the boot loader puts the initramfs and memblock its early
            # allocations, all at the device's emulated speed (an L2 boot then took minutes
            # and tripped the soft-lockup watchdog). Movable, it holds only user pages.
            d = s.device
            args += ["-m", f"{s.memory // MiB}M,slots=2,maxmem={(s.memory + d.size + tier) // MiB + 2048}M"]
            args += ["-object", f"memory-backend-ram,id=ram0,size={s.memory // MiB}M"]
            args += ["-numa", "node,nodeid=0,memdev=ram0", "-numa", "node,nodeid=1"]
            if d.mode == "devdax":
                if self.host.region != "devdax":
                    raise ValueError(f"the host's region is {self.host.region}, not devdax")
                backend = (
                    f"memory-backend-file,id=dev0,mem-path={self.host.dax},share=on,align=2M,"
                    f"size={d.size // MiB}M,offset={d.offset}"
                )
            elif d.mode == "ram":
                backend = f"memory-backend-ram,id=dev0,size={d.size // MiB}M"
            else:
                if self.host.region != "kmem" or self.host.node is None:
                    raise ValueError(f"the host's region is {self.host.region}, not kmem")
                if d.mode == "kmem-shm":
                    backend = f"memory-backend-file,id=dev0,mem-path={d.shm},share=on,size={d.size // MiB}M"
                else:
                    backend = f"memory-backend-ram,id=dev0,size={d.size // MiB}M"
                backend += f",host-nodes={self.host.node},policy=bind"
            args += ["-object", backend, "-device", "pc-dimm,id=devdimm,memdev=dev0,node=1"]
            if s.device_dirty_log:
                if d.mode != "devdax":
                    raise ValueError("device_dirty_log needs a devdax device node (a fixed DPA range)")
                log = "cxltrack-dirty-log,id=devlog0,memdev=dev0,tracker=/dev/cxltrack0"
                if s.device_dirty_log_dpa is not None:
                    log += f",dpa={s.device_dirty_log_dpa}"
                if s.device_dirty_log_unchecked:
                    log += ",x-dpa-unchecked=on"
                if s.device_dirty_log_zeroed:
                    log += ",zeroed=on"
                args += ["-object", log]
        blk = "virtio-blk-pci,drive=disk0,logical_block_size=4096,physical_block_size=4096"
        if s.swap_mapper_disk is not None:
            if not s.disk or s.device is None or s.device.mode == "ram":
                raise ValueError("swap_mapper_disk needs a disk and a device node on the device")
            mapper = f"cxltrack-swap-mapper,id=swap0,memdev=dev0,tracker=/dev/cxltrack0,disk={s.swap_mapper_disk}"
            if s.memory_manager is not None:
                if s.device.mode != "kmem":
                    raise ValueError("memory_manager needs a kmem device node (anonymous memory)")
                mapper += s.memory_manager.object_args(s.name, s.disk)
            args += ["-object", mapper]
            blk += ",swap-mapper=swap0"
        if s.disk:
            args += ["-drive", f"file={s.disk},if=none,id=disk0,format=raw", "-device", blk]
        if s.swap_tier is not None:
            args += self._tier_args(s.swap_tier)
        img = self.host.image.vm
        hotplug = "memhp_default_state=online_movable" if s.device is not None else ""
        # earlyprintk: a kernel that dies before its console driver starts still leaves its
        # last words on the console
        cmdline = " ".join(f"{img.append} earlyprintk=serial {hotplug} {s.append}".split())
        args += ["-kernel", f"{L2_DIR}/vmlinuz", "-initrd", f"{L2_DIR}/initrd", "-append", cmdline]
        if s.incoming:
            args += ["-incoming", s.incoming]
        return args + s.extra_args

    def _tier_size(self) -> int:
        if self.spec.swap_tier is None:
            return 0
        if self.tier is None and not self.tier_shortfall:
            raise ValueError(f"L2 VM {self.spec.name}: swap tier chunks not taken from the pool yet")
        return self.tier.size if self.tier is not None else 0

    def _tier_args(self, t: SwapTier) -> list[str]:
        run = self.tier
        if (run is None and not self.tier_shortfall) or self.host.dax is None:
            raise ValueError("a swap tier needs chunks from the pool and the host's devdax region")
        args = []
        for i in range(1, t.grow_ports + 1):
            args += ["-device", f"pcie-root-port,id=tierport{i},chassis={20 + i},slot={20 + i}"]
        if run is not None:
            args += [
                "-object",
                f"memory-backend-file,id=tier0,mem-path={self.host.dax},share=on,align=2M,"
                f"offset={run.offset},size={run.size // MiB}M",
                "-device",
                "virtio-pmem-pci,memdev=tier0,id=tierdev0",
            ]
        if t.disk_swap:
            args += [
                "-drive",
                f"file={self.swap_disk_path},if=none,id=swapdisk,format=raw",
                "-device",
                "virtio-blk-pci,drive=swapdisk,id=swapdev,serial=cxlt-swap,logical_block_size=4096,"
                "physical_block_size=4096",
            ]
        return args

    @property
    def swap_disk_path(self) -> str:
        return f"{RUN_DIR}/swapdisk-{self.spec.name}.img"

    def _take_tier(self) -> None:
        t = self.spec.swap_tier
        if t is None:
            return
        if self.host.dax is None:
            raise ValueError("a swap tier needs the host's devdax region")
        pool = self.host.pool or self.host.start_pool()
        try:
            self.tier = pool.grow(self.spec.name, t.chunks)
        except PoolError as exc:
            # An exhausted pool: with a disk to overflow to, start on what there is.
            m = re.search(r"no run of \d+ free chunks \(longest (\d+) of", str(exc))
            if m is None or not t.disk_swap:
                raise
            longest = int(m.group(1))
            self.tier = pool.grow(self.spec.name, longest) if longest else None
            self.tier_shortfall = t.chunks - longest
            print(
                f"[nested] L2 VM {self.spec.name}: the pool had no {t.chunks} free chunks in a run; "
                f"tier of {longest}, the rest of its swap to its disk",
                flush=True,
            )
        # QEMU object tier0 maps the first run (qemu_args); none without one
        self.tier_objects = 1 if self.tier is not None else 0
        self.tier_live = {"tier0": self.tier} if self.tier is not None else {}
        self.tier_pages = {}
        if self.tier is not None:
            self._open_books("tier0", self.tier)
            self.tier_priority = {"tier0": t.priority}
        if t.disk_swap:
            self.host.make_disk(self.swap_disk_path, t.disk_swap)

    def _swap_on(self) -> None:
        """mkswap + swapon of the tier's /dev/pmem0 at its priority, and of the disk swap area
        (the virtio-blk disk with serial cxlt-swap) below it."""
        t = self.spec.swap_tier
        if t is None or not t.swapon:
            return
        lru = t.overflow == "lru" and self.tier is not None
        if self.tier is not None:
            self._tier_swap_on(t, swapon=not lru)
        if t.disk_swap:
            find = (
                'd=; for b in /sys/block/vd*; do [ "$(cat $b/serial 2>/dev/null)" = cxlt-swap ] && '
                'd=/dev/${b##*/}; done; [ -n "$d" ] || { echo no cxlt-swap disk >&2; exit 1; }; '
            )
            if lru:
                high, low = t.lru_watermarks
                # "s": dm-writecache over the block device (virtio-pmem gives no synchronous DAX,
                # which its "p" mode needs). It commits its metadata with flush requests, which
                # virtio-pmem sends to the VM's QEMU, whose fsync of /dev/dax0.0 (a character
                # device) fails: EIO. The tier is volatile swap memory whose stores reach the
                # device as they are made, so the guest is told it has no write cache to flush.
                out = self.run(
                    "echo 'write through' > /sys/block/pmem0/queue/write_cache && "
                    f"modprobe dm_writecache && {find}w=$(cxlt-dmwc create {TIER_DM} s $d /dev/pmem0 {high} {low}) && "
                    f"mkswap $w >/dev/null && {{ cxlt-swapon -p {t.priority} $w || "
                    "{ dmesg | tail -5 >&2; exit 1; }; } && echo $w",
                    timeout=120,
                ).out.split()
                self.tier_dm = out[-1]
            else:
                self.run(f"{find}mkswap $d >/dev/null && cxlt-swapon -p {t.disk_priority} $d && echo $d", timeout=120)

    def tier_dm_status(self) -> dict[str, int]:
        """The dm-writecache target's counters (overflow "lru"; Documentation/admin-guide/
        device-mapper/writecache.rst): blocks, free, writeback (under write-back now), reads,
        read_hits, writes, ... as named in DM_STATUS_FIELDS."""
        words = self.run(f"cxlt-dmwc status {TIER_DM}").out.split()
        if not words or words[0] != "writecache" or len(words) < 1 + len(DM_STATUS_FIELDS):
            raise GuestError(f"L2 VM {self.spec.name}: cxlt-dmwc status: {' '.join(words)!r}")
        return dict(zip(DM_STATUS_FIELDS, (int(w) for w in words[1:]), strict=False))

    def tier_dm_remove(self) -> None:
        """Remove the dm-writecache device (after its swapoff): the tier's /dev/pmem0 is then
        unused and the chunks can go back (release_tier)."""
        if self.tier_dm is None:
            return
        if self.tier_dm in self.swaps():
            raise PoolError(f"L2 VM {self.spec.name} still swaps to {self.tier_dm}")
        self.run(f"cxlt-dmwc remove {TIER_DM}")
        self.tier_dm = None

    def tier_device_ready(self) -> None:
        """Load the guest's pmem drivers and wait (10 s at most) for the tier's /dev/pmem0."""
        self.run(
            "modprobe virtio_pmem && modprobe nd_pmem && i=0; while [ ! -b /dev/pmem0 ]; do "
            "i=$((i + 1)); [ $i -gt 100 ] && { echo no /dev/pmem0 >&2; exit 1; }; sleep 0.1; done",
            timeout=120,
        )

    def _tier_swap_on(self, t: SwapTier, swapon: bool = True) -> None:
        self.tier_device_ready()
        if t.check_fresh:
            out = self.run("cxlt-daxcount /dev/pmem0 0 $(blockdev --getsize64 /dev/pmem0)", timeout=300).out
            m = re.match(r"pages=(\d+) nonzero=(\d+) ", out)
            if not m or self.tier is None or int(m.group(1)) != self.tier.size // 4096:
                raise GuestError(f"L2 VM {self.spec.name}: cxlt-daxcount of /dev/pmem0: {out!r}")
            self.tier_fresh_nonzero = int(m.group(2))
        if swapon:
            self.run(f"mkswap /dev/pmem0 >/dev/null && cxlt-swapon -p {t.priority} /dev/pmem0", timeout=120)

    def swaps(self) -> dict[str, tuple[int, int, int]]:
        """The guest's /proc/swaps: device -> (size KiB, used KiB, priority)."""
        out = self.run("cat /proc/swaps").out.splitlines()[1:]
        return {f[0]: (int(f[2]), int(f[3]), int(f[4])) for f in (line.split() for line in out) if len(f) >= 5}

    def release_tier(self) -> dict[str, str]:
        """Give the tier's chunks back to the pool while the VM runs (MemFlex's shrink after its
        batch swap-in), once the guest has swapped off /dev/pmem0; the pool's answer (also in
        `tier_released`) comes after the device's SCRUB_DONE of every chunk. QEMU 10.0 cannot
        unplug a virtio-pmem device ("this virtio based memory devices cannot be unplugged"),
        and the guest keeps /dev/pmem0, so first the VM's QEMU revokes the backend's file
        (`x-revoked`, QEMU patch 0006: anonymous memory mapped over the range, the file closed,
        migration blocked): whatever the guest writes there afterwards stays in its own QEMU's
        memory, never in chunks the pool may give another VM. A failed revocation fails the
        release, and the chunks stay the VM's (docs/swap-design.md section 5)."""
        pool = self.host.pool
        if self.tier is None or pool is None or pool.dead:
            raise PoolError(f"L2 VM {self.spec.name} holds no tier chunks")
        pmem = [d for d in self.swaps() if d.startswith("/dev/pmem")]
        if pmem:
            raise PoolError(f"L2 VM {self.spec.name} still swaps to {' '.join(pmem)}")
        self.tier_dm_remove()
        if self.qmp is None:
            raise PoolError(f"L2 VM {self.spec.name}: no QMP monitor to revoke the tier with")
        for n in range(self.tier_objects):  # tier0 and every run plugged since
            self._revoke(f"tier{n}")
        answer = self._hand_back(pool)
        assert answer is not None
        return answer

    def grow_tier(self, chunks: int, priority: int | None = None) -> str:
        """Grow the running VM's tier by a run of `chunks` chunks from the pool (same owner): a
        virtio-pmem device on it hot-plugged into the next free root port (SwapTier.grow_ports),
        `mkswap` + swapon at `priority` (default: the tier's) in the guest. The guest's new
        block device."""
        t, pool = self.spec.swap_tier, self.host.pool
        if t is None or self.tier is None or pool is None or pool.dead or self.qmp is None:
            raise PoolError(f"L2 VM {self.spec.name} has no running tier to grow")
        if self.tier_dm is not None:
            raise PoolError(f"L2 VM {self.spec.name}: a dm-writecache tier does not grow")
        self._check_port()
        run = pool.grow_more(self.spec.name, chunks)
        self.tier_grown.append(run)  # the owner's now, released with the rest
        return self._plug_run(run, priority)

    def renew_tier(self, chunks: int) -> str:
        """A fresh tier for a VM whose tier was released while it ran (release_tier): a new
        owner and run from the pool, hot-plugged as grow_tier does (a root port of
        SwapTier.grow_ports), swapped to at the tier's priority; `tier_dev` is its device."""
        t, pool = self.spec.swap_tier, self.host.pool
        if t is None or self.tier is not None or pool is None or pool.dead or self.qmp is None:
            raise PoolError(f"L2 VM {self.spec.name}: renew_tier needs a released tier")
        self._check_port()
        self.tier = pool.grow(self.spec.name, chunks)
        self.tier_dev = self._plug_run(self.tier)
        return self.tier_dev

    def _check_port(self) -> None:
        t = self.spec.swap_tier
        assert t is not None
        if self.tier_ports_used >= t.grow_ports:
            raise PoolError(f"L2 VM {self.spec.name}: no free port to plug a tier run into ({t.grow_ports} given)")

    def _plug_run(self, run: TierRun, priority: int | None = None) -> str:
        """Hot-plug a virtio-pmem device on `run` into the next free root port; mkswap + swapon
        at `priority` (default: the tier's) in the guest; the guest's new block device."""
        t = self.spec.swap_tier
        assert t is not None and self.qmp is not None
        priority = t.priority if priority is None else priority
        before = set(self.run("ls /sys/block").out.split())
        n, port = self.tier_objects, self.tier_ports_used + 1
        self.tier_objects += 1
        self.tier_ports_used += 1
        self.qmp.command(
            "object-add",
            **{
                "qom-type": "memory-backend-file",
                "id": f"tier{n}",
                "mem-path": self.host.dax,
                "share": True,
                "align": 2 * MiB,
                "offset": run.offset,
                "size": run.size,
            },
        )
        self.tier_live[f"tier{n}"] = run
        self._open_books(f"tier{n}", run)
        self.tier_priority[f"tier{n}"] = priority
        self.qmp.command(
            "device_add", driver="virtio-pmem-pci", memdev=f"tier{n}", id=f"tierdev{n}", bus=f"tierport{port}"
        )
        known = " ".join(sorted(before))
        out = self.run(
            f"i=0; while :; do for b in $(ls /sys/block); do case ' {known} ' in *\" $b \"*) continue ;; esac; "
            "case $b in pmem*) echo /dev/$b; exit 0 ;; esac; done; i=$((i + 1)); "
            "[ $i -gt 300 ] && { echo no new pmem device >&2; dmesg | tail -20 >&2; exit 1; }; sleep 0.1; done",
            timeout=120,
        ).out.split()
        dev = out[-1]
        self.tier_plugged[dev] = f"tier{n}"
        self.run(f"mkswap {dev} >/dev/null && cxlt-swapon -p {priority} {dev}", timeout=120)
        return dev

    def shrink_tier(self, dev: str) -> dict[str, str]:
        """Give back one run the tier grew by (grow_tier), while the VM runs and keeps the rest:
        the guest's `swapoff` of its device `dev` (the pages on it come back into the guest's
        memory, or go to its other swap areas), then the VM's QEMU revokes the run's backend
        (`x-revoked`, as release_tier: what the guest writes to `dev` afterwards stays in its
        own QEMU's memory), then the pool's `shrink` releases and scrubs those chunks only. A
        failed swapoff or revocation leaves the chunks the VM's. The pool's answer."""
        pool = self.host.pool
        obj = self.tier_plugged.get(dev, "")
        run = self.tier_live.get(obj)
        if run is None or run not in self.tier_grown or pool is None or pool.dead or self.qmp is None:
            raise PoolError(f"L2 VM {self.spec.name}: {dev} is no run its tier grew by (release_tier gives back all)")
        res = self.run(f"swapoff {dev}", check=False, timeout=600)
        if not res.ok or dev in self.swaps():
            raise PoolError(f"L2 VM {self.spec.name}: swapoff {dev} failed, chunks kept: {res.err.strip()}")
        self._revoke(obj)
        del self.tier_live[obj], self.tier_plugged[dev]
        self.tier_grown.remove(run)
        return pool.shrink(self.spec.name, run)

    def _revoke(self, obj: str) -> None:
        """Take the tier object `obj`'s file away from the VM's QEMU (`x-revoked`, QEMU patch 0006;
        again is a no-op) and check that it is gone; PoolError, the chunks kept, otherwise."""
        assert self.qmp is not None
        try:
            self.qmp.command("qom-set", path=f"/objects/{obj}", property="x-revoked", value=True)
            revoked = self.qmp.command("qom-get", path=f"/objects/{obj}", property="x-revoked")
        except QmpError as exc:
            raise PoolError(f"L2 VM {self.spec.name}: {obj}'s revocation failed, chunks kept: {exc}") from exc
        if revoked is not True:
            raise PoolError(f"L2 VM {self.spec.name}: {obj} is not revoked (x-revoked={revoked!r}), chunks kept")

    def tier_to_ram(
        self,
        where: str | None = None,
        after_copy: Callable[[], None] | None = None,
        names: list[str] | None = None,
        keep: bool = False,
        held_copy: bool = False,
    ) -> TierCopy:
        """MemFlex's batch swap-in, driven by the host (docs/swap-design.md section 5): the pool
        has the device copy every chunk of the tier into L1's RAM by DMA (CHUNK_COPY, `copy`
        request: a file on hugetlbfs, Host.hugepages), each run's backend is revoked with that
        copy (`x-revoked-copy`, QEMU patch 0009: the copy mapped over the range, the devdax file
        closed): the guest's tier now reads at memory speed, and the chunks can go back to the
        pool (release_tier).

        The VM runs on during the copy: the pool clears the run's dirty bits before it and copies
        again every chunk written during a pass. A guest write after the last pass would be lost
        when the copy is mapped, so the vCPUs are then held (`x-revoke-hold`, QEMU patch 0010:
        the vCPUs only, not a stop of the VM), the pool copies again the chunks written since
        its last pass (`recopy`, the final pass), and each backend's revocation lets them go. The
        device's dirty bits of the run must still be clear after the revocation (nothing
        written after the final pass), else PoolError. A caller that stops the guest's writes to
        the tier first (its only swapping cgroup's memory.swap.max = 0) only makes the copy's
        passes fewer.

        `where`: the directory for the copies (Host.hugepages, which a caller that times this
        calls before; by default here). `after_copy`: called between the copy and the hold (a
        test's write into that window). `names`: these tier objects only (default: every run
        still on the device). `keep`: the copies' files stay (tier_run_to_disk), else their
        names go once QEMU maps them. `held_copy`: the vCPUs are held for the whole copy, not
        only its final pass (a run the guest keeps writing, whose passes would not settle)."""
        pool = self.host.pool
        if not self.tier_live or pool is None or pool.dead or self.qmp is None:
            raise PoolError(f"L2 VM {self.spec.name} has no tier on the device to take to RAM")
        live = list(self.tier_live.items()) if names is None else [(n, self.tier_live[n]) for n in names]
        if where is None:
            where = self.host.hugepages(sum(r.size for _, r in live))
        paths = {name: f"{where}/tiercopy-{self.spec.name}-{name}" for name, _ in live}
        steps: dict[str, float] = {}
        totals = {"ms": 0.0, "bytes": 0, "passes": 0, "recopied": 0}

        def timed(step: str, fn: Callable[[], Any]) -> Any:
            t0 = time.monotonic()
            try:
                return fn()
            finally:
                steps[step] = steps.get(step, 0.0) + time.monotonic() - t0

        def copy(name: str, run: TierRun, request: str = "copy") -> None:
            a = pool.ask(f"{request} {self.spec.name} {run.first} {run.count} {paths[name]}")
            totals["ms"] += float(a["ms"])
            if request == "copy":
                totals["bytes"] += int(a["bytes"])
                totals["passes"] = max(totals["passes"], int(a["passes"]))
            else:
                totals["recopied"] += int(a["chunks"])

        h1 = time.monotonic()
        if not held_copy:
            for name, run in live:
                timed("copy", functools.partial(copy, name, run))
            if after_copy is not None:
                after_copy()
        held = time.monotonic()
        try:
            for name, _ in live:
                self._hold(name, True)
            if held_copy:
                for name, run in live:
                    timed("copy", functools.partial(copy, name, run))
            for name, run in live:
                timed("final pass", functools.partial(copy, name, run, "recopy"))
            for name, _ in live:
                timed("remap", functools.partial(self._revoke_with_copy, name, paths[name]))
                del self.tier_live[name]
        except BaseException:
            # the VM goes on with what is not revoked yet (a revocation, failed or not, let its own go)
            for name, _ in live:
                with contextlib.suppress(Exception):
                    self._hold(name, False)
            raise
        h2 = time.monotonic()
        if not keep:  # QEMU's mapping keeps the pages (the VM's alone now); the names are not needed
            self.host.run(f"rm -f {' '.join(paths.values())}", check=False)
        written = 0
        for _, run in live:
            start, count = run.pages(12)
            out = self.host.run(f"cxltrack harvest dirty {start} {count} --format count", timeout=120).out
            written += int(out.split()[-1])
        print(
            f"[nested] {self.spec.name}: tier to RAM: {', '.join(f'{k} {v:.3f} s' for k, v in steps.items())}"
            f"; copy passes {totals['passes']}, vCPUs held {h2 - held:.3f} s, "
            f"chunks copied again {totals['recopied']}"
        )
        if written:
            raise PoolError(
                f"L2 VM {self.spec.name}: {written} pages of its tier were written after the pool's last copy pass"
            )
        return TierCopy(
            int(totals["bytes"]),
            totals["ms"] / 1000,
            steps.get("remap", 0.0),
            where,
            h2 - h1,
            h2 - held,
            int(totals["recopied"]),
        )

    def observe_tier(self) -> dict[str, RunBits]:
        """One round of the host's books on the tier's runs, from the device's bits alone (the
        guest says nothing): over each run still on the device a harvest with CLEAR of the
        accessed bits, then of the dirty bits (`cxltrack harvest`: the device's own bits; the
        driver hands them to every consumer view first, so no view loses them). A page written
        in the round holds a page the guest swapped out then (live, of this round). A page
        read and not written gave its page back: a swap-in from pmem, a synchronous device,
        skips the swap cache and frees the slot at once. (In this order a write between the two
        harvests counts as one; a read there counts in the next round.) What each run saw."""
        self.tier_rounds += 1
        seen: dict[str, RunBits] = {}
        for name, run in self.tier_live.items():
            start, count = run.pages(12)
            out = self.host.run(
                f"cxltrack harvest accessed {start} {count} --clear --format hex && "
                f"cxltrack harvest dirty {start} {count} --clear --format hex",
                timeout=120,
            ).out.split()
            accessed, dirty = (_bitmap_pages(h, count) for h in out[-2:])
            live = self.tier_pages.setdefault(name, {})
            for page in accessed - dirty:
                live.pop(page, None)
            for page in dirty:
                live[page] = self.tier_rounds
            seen[name] = RunBits(len(accessed), len(dirty), len(live))
        return seen

    def _open_books(self, name: str, run: TierRun) -> None:
        """Start observe_tier's books on tier object `name`'s run before the guest sees it: the
        run's accessed and dirty bits cleared (the pool's grant and the device's scrub leave
        them as they were), no page live."""
        start, count = run.pages(12)
        self.host.run(
            f"cxltrack harvest accessed {start} {count} --clear --format count >/dev/null && "
            f"cxltrack harvest dirty {start} {count} --clear --format count >/dev/null",
            timeout=120,
        )
        self.tier_pages[name] = {}

    def coldest_tier_run(self) -> str:
        """The tier object whose run MemFlex's hybrid swap-out sends to disk: the one whose
        pages the guest still needs were swapped out longest ago (the mean round of observe_tier
        they were written in); a run holding none of them goes first (nothing the guest needs
        leaves the device), the older run first among equals."""
        if not self.tier_live:
            raise PoolError(f"L2 VM {self.spec.name} has no tier run on the device")

        def age(name: str) -> tuple[float, int]:
            rounds = self.tier_pages.get(name, {}).values()
            return (sum(rounds) / len(rounds) if rounds else -1.0, int(name.removeprefix("tier")))

        return min(self.tier_live, key=age)

    def tier_run_to_disk(self, name: str) -> dict[str, str]:
        """MemFlex's hybrid swap-out, by the host: tier object `name`'s run leaves the device for
        a file on the host's disk (TIER_DISK_DIR, where the VMs' disk images are: L1's tmpfs in
        this harness). tier_to_ram's steps for this run alone: the device copies its chunks by
        DMA while the VM runs, the vCPUs are held for the final pass, the backend is revoked
        with the file (`x-revoked-copy`); a run the guest writes through every pass of the
        copy is copied again with the vCPUs held throughout. The guest keeps its swap area and
        reads those pages from the file from then on. Then the pool releases the chunks and
        waits for their scrub, so they can be granted again (grow_tier). The file goes when the
        VM's tier is given back. The pool's answer."""
        pool = self.host.pool
        run = self.tier_live.get(name)
        if run is None or pool is None or pool.dead:
            raise PoolError(f"L2 VM {self.spec.name}: {name} is no tier run on the device")
        try:
            self.tier_to_ram(where=TIER_DISK_DIR, names=[name], keep=True)
        except PoolError as exc:
            # the guest writes this run now (the one above it filled): copy it held
            if "written during each of" not in str(exc):
                raise
            self.tier_to_ram(where=TIER_DISK_DIR, names=[name], keep=True, held_copy=True)
        self.tier_on_disk[name] = f"{TIER_DISK_DIR}/tiercopy-{self.spec.name}-{name}"
        if run in self.tier_grown:
            self.tier_grown.remove(run)
        return pool.shrink(self.spec.name, run)

    def grow_tier_or_overflow(self, chunks: int, priority: int) -> tuple[str, str | None]:
        """Grow the tier by a run of `chunks` at swap `priority` (above the runs before it, so
        the guest puts its newest pages there). When the pool has no such run, MemFlex's hybrid
        overflow first: after one more round of observe_tier, the coldest run
        (coldest_tier_run) goes to the host's disk (tier_run_to_disk), and its chunks come back
        as the new run, whatever its size. (The guest's new device, the object sent to disk or
        None.)"""
        try:
            return self.grow_tier(chunks, priority), None
        except PoolError as exc:
            if "no run of" not in str(exc):
                raise
        t0 = time.monotonic()
        self.observe_tier()
        cold = self.coldest_tier_run()
        freed = self.tier_live[cold].count
        self.tier_run_to_disk(cold)
        t1 = time.monotonic()
        dev = self.grow_tier(freed, priority)
        print(
            f"[nested] {self.spec.name}: overflow: {cold} to disk in {t1 - t0:.2f} s, "
            f"its chunks back as {dev} (priority {priority}) in {time.monotonic() - t1:.2f} s",
            flush=True,
        )
        return dev, cold

    def _revoke_with_copy(self, name: str, path: str) -> None:
        assert self.qmp is not None
        self.qmp.command("qom-set", path=f"/objects/{name}", property="x-revoked-copy", value=path)

    def _hold(self, name: str, on: bool) -> None:
        """x-revoke-hold of tier backend `name`: the vCPUs held until its revocation (QEMU patch
        0010); False lets them go without one."""
        assert self.qmp is not None
        self.qmp.command("qom-set", path=f"/objects/{name}", property="x-revoke-hold", value=on)

    def _give_back_tier(self) -> None:
        """Release the tier's chunks (after the VM's QEMU exited); `tier_released` keeps the
        pool's answer. Nothing to do when the pool is gone (its chunks went with it)."""
        pool = self.host.pool
        held = self.tier is not None and pool is not None and not pool.dead and self.host.vm.alive()
        self._hand_back(pool if held else None)

    def _hand_back(self, pool: Pool | None) -> dict[str, str] | None:
        """Forget the VM's runs (the first and every one grown since) and, with `pool`, release
        them there; the pool's answer, also in `tier_released`."""
        self.tier, self.tier_grown, self.tier_live, self.tier_plugged = None, [], {}, {}
        if self.tier_on_disk:  # QEMU maps them, or is gone: the names only go
            self.host.run(f"rm -f {' '.join(self.tier_on_disk.values())}", check=False)
            self.tier_on_disk = {}
        if pool is not None:
            self.tier_released = pool.release(self.spec.name)
        return self.tier_released

    # -- life cycle --------------------------------------------------------------
    def start(self) -> NestedVm:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._take_tier()
        _drain(self.agent_sock)
        _drain(self.qmp_sock)
        argv = shlex.join(["cxlt-vm", "start", self.spec.name, str(self.slot), "--", *self.qemu_args()])
        (self.workdir / "qemu-args.txt").write_text(argv + "\n")
        t0 = time.monotonic()
        res = self.host.run(argv, timeout=120)
        self.pid = int(res.out.split()[-1])
        self.agent = AgentChannel(self.agent_sock, self.alive, self._watchdog)
        try:
            self.qmp = Qmp(self.qmp_sock, timeout=60)
            if self.spec.incoming is None:
                self.agent.wait_ready(self.spec.boot_timeout)
        except (OSError, GuestError, QmpError, TimeoutError) as exc:
            self.save_logs()
            hung = isinstance(exc, TimeoutError) and self._hung_before_init()
            raise (VmBootHung if hung else GuestError)(
                f"L2 VM {self.spec.name} did not become ready: {exc}\n{self.diagnostics()}"
            ) from exc
        self.boot_seconds = time.monotonic() - t0
        if self.spec.incoming is None:
            self._swap_on()
        # A migration target's start-up may still be logging its resets: count those as its own.
        self.resets_at_ready = (
            self.cpu_resets() if self.spec.incoming is None else START_RESETS_PER_VCPU * self.spec.smp
        )
        extra = self._beyond_start(self.resets_at_ready)
        if extra:
            # The VM is usable (it rebooted and came up), but say so and keep the evidence.
            self.save_logs()
            print(
                f"[nested] L2 VM {self.spec.name}: the guest was reset before it was ready ({extra} CPU "
                f"resets beyond start-up); its console and -d cpu_reset log are in {self.workdir}"
            )
        return self

    def cpu_resets(self) -> int:
        """CPU resets the VM's QEMU logged (-d cpu_reset)."""
        out = self.host.run(f"cxlt-vm resets {self.spec.name}", check=False).out.strip()
        return int(out) if out.isdigit() else 0

    def resets_after_start(self) -> int:
        """CPU resets beyond the machine's start: QEMU resets each x86 vCPU twice while the
        machine starts (when it creates the vCPU and at the first system reset, also for a
        migration target); every guest reset adds at least one per vCPU (two were seen: the
        firmware resets again on its way to the kernel)."""
        return self._beyond_start(self.cpu_resets())

    def _beyond_start(self, resets: int) -> int:
        return max(resets - START_RESETS_PER_VCPU * self.spec.smp, 0)

    def alive(self) -> bool:
        return not self.stopped and self.host.vm.alive()

    def _watchdog(self) -> None:
        """Ends a wait for the agent early when the VM's QEMU has exited in the host."""
        if self.pid is not None and not self.host.run(f"kill -0 {self.pid}", check=False).ok:
            raise GuestError(f"the QEMU of L2 VM {self.spec.name} (pid {self.pid}) has exited")

    def run(self, cmd: str, timeout: float | None = None, check: bool = True, stdin: bytes = b"") -> CommandResult:
        if self.agent is None:
            raise GuestError(f"L2 VM {self.spec.name} not started")
        t = self.spec.command_timeout if timeout is None else timeout
        try:
            res = self.agent.run(cmd, t, stdin)
        except GuestError as exc:
            # A guest reset mid-command shows here only as a lost answer (its agent greets
            # again, or says nothing): say it was a reset, so that the callers that run such a
            # case again (migration's repeat, the suite's GuestWedged rerun) see a VmReset.
            try:
                report = self._reset_report()
            except (GuestError, OSError):  # the host is going: the error says why, not this check
                report = None
            if report is not None:
                raise VmReset(f"{self._reset_what(report)}: {exc}\n{self.diagnostics()}", report) from exc
            raise GuestError(f"{exc}\n{self.diagnostics()}") from exc
        with open(self.workdir / "commands.log", "a") as f:
            f.write(f"$ {cmd}\n{res.describe()}\n\n")
        if check and not res.ok:
            raise GuestCommandError(res)
        return res

    def touch(self, pages: int, node: int = 1) -> list[int]:
        """Write `pages` fresh pages on NUMA `node` of the VM (cxlt-touch); their guest-physical
        addresses."""
        out = self.run(f"cxlt-touch {node} {pages}", timeout=300).out.splitlines()
        gpas = [int(line.split()[1], 16) for line in out if line.startswith("gpa ")]
        if not out or out[-1] != f"ok node {node} pages {pages}" or len(gpas) != pages:
            raise GuestError(f"cxlt-touch {node} {pages} in {self.spec.name}: {out[-3:]}")
        return gpas

    def throttle_swap_disk(self, iops: int, bps: int) -> None:
        """Limit the disk swap area (SwapTier.disk_swap) to `iops` requests and `bps` bytes per
        second, reads and writes together (QEMU's block_set_io_throttle; 0, 0: no limit): a
        disk that is not the host's RAM, for a swap-in compared with the tier's."""
        if self.qmp is None or self.spec.swap_tier is None or not self.spec.swap_tier.disk_swap:
            raise GuestError(f"L2 VM {self.spec.name} has no disk swap area to throttle")
        if iops < 0 or bps < 0:
            raise ValueError(f"disk rates {iops} requests/s, {bps} bytes/s")
        self.qmp.command(
            "block_set_io_throttle",
            id="/machine/peripheral/swapdev/virtio-backend",
            bps=bps,
            bps_rd=0,
            bps_wr=0,
            iops=iops,
            iops_rd=0,
            iops_wr=0,
        )

    def _vcpu_places(self) -> list[str]:
        """Where a VM that does not answer executes: its vCPU 0's RIP, CR2, CR3 and CPL, three times. One RIP over
        and over with CR2 moving is a page-fault loop; RIPs all over the kernel, a slow guest."""
        keys = ("RIP", "CR2", "CR3", "CPL")
        out: list[str] = []
        for i in range(3):
            if i:
                time.sleep(0.5)
            try:
                regs = self.hmp("info registers")
            except (OSError, GuestError, QmpError, TimeoutError) as exc:
                return [*out, f"(no answer: {exc})"]
            found = dict(re.findall(r"\b(RIP|CR2|CR3|CPL)=(\S+)", regs))
            out.append(" ".join(f"{k}={found.get(k, '?')}" for k in keys))
        # ... and the instructions there (an L2 stuck in KVM's emulation of one instruction:
        # which one, docs/harness.md)
        rip = found.get("RIP", "")  # the last sample's
        try:
            code = hmp_bytes(self.hmp("x/16xb $pc"))
            out.append(INSNS + " | ".join(decode(int(rip, 16) if re.fullmatch(r"[0-9a-fA-F]+", rip) else 0, code)))
        except (OSError, GuestError, QmpError, TimeoutError) as exc:
            out.append(f"(instructions not read: {exc})")
        return out

    def _run_state(self) -> str:
        """QEMU's run state of the VM (query-status), for the diagnostics."""
        if self.qmp is None:
            return "(no monitor)"
        try:
            return str(self.qmp.command("query-status").get("status", "?"))
        except (OSError, GuestError, QmpError, TimeoutError) as exc:
            return f"(no answer: {exc})"

    def hmp(self, line: str) -> str:
        if self.qmp is None:
            raise GuestError(f"L2 VM {self.spec.name} has no monitor")
        return str(self.qmp.command("human-monitor-command", **{"command-line": line}))

    @property
    def device_gpa(self) -> int:
        """Guest-physical start of the device node (its DIMM's address, from QMP)."""
        if self._device_gpa is None:
            assert self.qmp is not None
            for dev in self.qmp.command("query-memory-devices"):
                if dev.get("data", {}).get("id") == "devdimm":
                    self._device_gpa = int(dev["data"]["addr"])
                    break
            else:
                raise GuestError(f"L2 VM {self.spec.name} has no device DIMM")
        return self._device_gpa

    def ram_ranges(self) -> list[tuple[int, int]]:
        """(guest-physical start, size) of all the VM's RAM: node 0 from 0 (a q35 machine keeps
        RAM below 2 GiB low), then the device DIMM if there is one."""
        if self.spec.memory > 2048 * MiB:
            raise ValueError("more than 2 GiB of node-0 RAM is split around the PCI hole")
        ranges = [(0, self.spec.memory)]
        if self.spec.device is not None:
            ranges.append((self.device_gpa, self.spec.device.size))
        return ranges

    def dump(self, path: str) -> None:
        """Write the VM's RAM (ram_ranges order, concatenated) to `path` in the host (pmemsave)."""
        assert self.qmp is not None
        self.qmp.sock.settimeout(600)
        for i, (start, size) in enumerate(self.ram_ranges()):
            self.qmp.command("pmemsave", val=start, size=size, filename=f"{path}.{i}")
        parts = " ".join(f"{path}.{i}" for i in range(len(self.ram_ranges())))
        self.host.run(f"cat {parts} > {path} && rm -f {parts}", timeout=300)

    def device_dpas(self, gpas: list[int]) -> list[int]:
        """Device physical address of each guest-physical address of the VM's device node.

        devdax: linear (the node is /dev/dax0.0 from `offset`). kmem: the node is anonymous
        memory of the VM's QEMU process bound to the region's NUMA node; the host's page table
        of that process gives each page's host-physical address (cxlt-pagemap), and the
        region's place in host-physical memory gives the DPA."""
        d = self.spec.device
        if d is None or d.mode == "ram":
            raise ValueError(f"L2 VM {self.spec.name} has no device memory")
        base = self.device_gpa
        for g in gpas:
            if not base <= g < base + d.size:
                raise ValueError(f"guest-physical 0x{g:x} is not in the device node")
        dpa_base = self.host.dpa_base()
        if d.mode == "devdax":
            return [dpa_base + d.offset + (g - base) for g in gpas]
        out = self.hmp(f"gpa2hva 0x{base:x}")
        hva0 = int(out.split()[-1], 16)
        page = 4096
        vas = "".join(f"0x{hva0 + (g - base) // page * page:x}\n" for g in gpas)
        res = self.host.run(f"cxlt-pagemap {self.pid}", stdin=vas.encode())
        hpa0 = self.host.region_hpa()
        dpas = []
        for g, line in zip(gpas, res.out.splitlines(), strict=True):
            pa = line.split()[1]
            if pa == "-":
                raise GuestError(f"guest-physical 0x{g:x} has no host page")
            dpas.append(int(pa, 16) - hpa0 + dpa_base + g % page)
        return dpas

    def reattach(self, tries: int = 3) -> None:
        """Talk to the guest again after it moved here by migration. Its agent greeted the
        source long ago; a second greeting means the agent started again, as it does when the
        guest rebooted during the migration (seen under nested SVM on TCG; the source's reset
        check then fails the run). Greetings are skipped from now on, and a no-op is sent
        until one is answered, so that the run gets as far as that check."""
        if self.agent is None:
            return
        self.agent.greeting_may_repeat = True
        for attempt in range(1, tries + 1):
            self.agent.broken = None
            try:
                self.agent.run("true", 20)
                return
            except (GuestError, TimeoutError) as exc:
                if attempt == tries:
                    raise VmHung(f"L2 VM {self.spec.name}: no answer after the migration: {exc}") from exc

    def _hung_before_init(self) -> bool:
        """VmBootHung's condition: QEMU alive, and its console without a kernel report or a line of the init."""
        if self.pid is None or not self.host.run(f"kill -0 {self.pid}", check=False).ok:
            return False
        console = self.console_text()
        return not first_report(console) and not any(ln.startswith("init:") for ln in console.splitlines())

    def console_text(self) -> str:
        return self.host.run(f"cxlt-vm console {self.spec.name}", check=False).out

    def diagnostics(self, lines: int = 40) -> str:
        if not self.host.vm.alive():
            return "(the host is gone)"
        console = self.console_text()
        con = console.splitlines()[-lines:]
        log = self.host.run(f"cxlt-vm log {self.spec.name}", check=False).out.splitlines()[-lines:]
        debug = self.host.run(f"cxlt-vm debug {self.spec.name}", check=False).out
        # Where a VM that stopped answering waits: its QEMU's threads in the host's kernel
        # (a vCPU inside KVM_RUN, a userfaultfd fault, a memory manager's ioctl) and what the
        # host's kernel said last (hung tasks, KVM warnings).
        threads = self.host.run(f"cxlt-vm threads {self.spec.name}", check=False).out.splitlines()
        # A vCPU thread that runs (R) but never lets the guest answer: what it does in KVM (its
        # counters; trace events only with CXLTRACK_KVM_TRACE=1: enabling them patches the host
        # kernel's text on every CPU, and under TCG a host triple-faulted doing it once, in the
        # fresh-clone make test of 2026-11-28).
        events = " --events" if os.environ.get("CXLTRACK_KVM_TRACE") == "1" else ""
        # The manager is read before and after the 2 s of KVM counters and the vCPU samples:
        # what moved in between tells a slow guest from one that exits on a page for ever.
        t0 = time.monotonic()
        before = self._manager_dict()
        kvm = self.host.run(f"cxlt-vm kvmtrace {self.spec.name}{events}", check=False, timeout=60).out.splitlines()
        # ... and its free memory per node (the device node holds the VMs' device memory: a node
        # that ran out fails their allocations).
        dmesg = self.host.run(
            "dmesg | tail -n 30; grep -h -E 'MemFree|MemUsed' /sys/devices/system/node/node*/meminfo", check=False
        ).out
        places = self._vcpu_places()
        after = self._manager_dict()
        manager = " ".join(f"{n}={v}" for n, v in after.items()) if isinstance(after, dict) else after
        # First, because a CI excerpt shows the head of a failure: the kernel's own report,
        # then what the VM did while it was looked at, in one line.
        report = first_report(console)
        summary = stall_line(
            self.spec.name,
            self._run_state(),
            threads,
            kvm,
            before if isinstance(before, dict) else None,
            after if isinstance(after, dict) else None,
            places,
            time.monotonic() - t0,
        )
        return (
            (f"--- L2 {self.spec.name} console: first kernel report ---\n" + "\n".join(report) + "\n" if report else "")
            + summary
            + "\n"
            + f"--- L2 {self.spec.name} qemu.log (tail) ---\n"
            + "\n".join(log)
            + f"\n--- L2 {self.spec.name} -d cpu_reset,guest_errors log ({self.cpu_resets()} CPU resets, "
            f"{self.resets_at_ready if self.resets_at_ready is not None else '?'} when ready), tail ---\n"
            + "\n".join(debug.splitlines()[-lines // 2 :])
            + f"\n--- L2 {self.spec.name} console (tail) ---\n"
            + "\n".join(con)
            + f"\n--- L2 {self.spec.name} QEMU threads in the host ---\n"
            + "\n".join(threads[: lines * 4])
            + f"\n--- L2 {self.spec.name} in the host's KVM ---\n"
            + "\n".join(kvm[: lines * 3])
            + f"\n--- L2 {self.spec.name} vCPU 0, sampled 3 times 0.5 s apart (QMP info registers) ---\n"
            + "\n".join(places)
            + (f"\n--- L2 {self.spec.name} memory manager (swap0) ---\n" + manager if manager else "")
            + "\n--- host dmesg (tail) ---\n"
            + dmesg
        )

    def manager_counters(self, names: Iterable[str] | None = None) -> dict[str, int]:
        """The memory manager's (/objects/swap0) integer properties `names` over QMP (QEMU
        answers while its guest does not); None: every integer property it has."""
        if self.qmp is None or self.spec.memory_manager is None:
            raise GuestError(f"L2 VM {self.spec.name} has no memory manager")
        if names is None:
            props = self.qmp.command("qom-list", path="/objects/swap0")
            names = [p["name"] for p in props if str(p.get("type", "")).startswith(("uint", "int"))]
        return {n: int(self.qmp.command("qom-get", path="/objects/swap0", property=n)) for n in names}

    def _manager_dict(self) -> dict[str, int] | str:
        """manager_counters() for the diagnostics: the counters, or why there are none ('' without
        a manager)."""
        if self.qmp is None or self.spec.memory_manager is None:
            return ""
        try:
            return self.manager_counters()
        except Exception as exc:  # a diagnostic must not hide the failure it explains
            return f"(not read: {exc})"

    def save_logs(self) -> None:
        """Copy the VM's console, QEMU log and the end of its -d log from the host into its workdir."""
        if not self.host.vm.alive():
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        for what, file in (("console", "console.log"), ("log", "qemu.log"), ("debug", "debug.log")):
            res = self.host.run(f"cxlt-vm {what} {self.spec.name}", check=False)
            (self.workdir / file).write_bytes(res.stdout)

    def _reset_report(self) -> list[str] | None:
        """None unless the VM was reset after it was ready; then its console's first kernel
        report (kernlog.first_report), empty for a reset its kernel said nothing about."""
        ready = self.resets_at_ready
        if self.stopped or ready is None or not self.host.vm.alive() or self.cpu_resets() <= ready:
            return None
        return first_report(self.console_text())

    def silent_reset(self) -> str | None:
        """Why this running VM is lost to the platform, or None: it was reset after it was ready
        with nothing on its console (a triple fault, see VmReset). For a failure whose own
        error says only that the agent went away (a reset in the middle of a command)."""
        report = self._reset_report()
        return self._reset_what(report) if report == [] else None

    def _reset_what(self, report: list[str]) -> str:
        """What a reset after ready was, given its console's first kernel report (empty: silent)."""
        return f"L2 VM {self.spec.name} was reset while in use{'' if report else SILENT}"

    def shutdown(self) -> None:
        if self.stopped:
            return
        rebooted = None
        report = self._reset_report()
        if report is not None:
            self.save_logs()
            rebooted = f"{self._reset_what(report)}\n{self.diagnostics()}"
        if self.qmp is not None:
            with contextlib.suppress(OSError, QmpError, ValueError):
                self.qmp.sock.settimeout(5)
                self.qmp.command("quit")
        if self.host.vm.alive():
            self.host.run(f"cxlt-vm stop {self.spec.name}", check=False, timeout=60)
        self.stopped = True
        self.host.release(self)
        released: PoolError | None = None
        try:
            self._give_back_tier()
        except PoolError as exc:
            released = exc
        if rebooted is not None:
            raise VmReset(rebooted, report or [])
        if released is not None:
            raise released


class HostWedged(GuestError):
    """The host (L1) stopped answering because the platform lost one of its CPUs (its kernel
    reported a CPU stuck for minutes, or QEMU sees a vCPU that can never take an interrupt
    again; harness/lockup.py, harness/vcpu.py): the run says nothing about the code under
    test. The nested suite runs such a test once more on a fresh host (mk/common.mk)."""


class HostKernelReport(GuestError):
    """A test failed and its host's (L1's) kernel had reported a warning, oops or panic on its
    console: the first report leads the failure, the test's own error is chained to it. Not
    repeated: what a host kernel says is the code under test's until shown otherwise. One
    report has been: the "corrupted stack end" panic in an L2 QEMU's vCPU thread, which
    modules byte for byte Debian's KVM lose hosts to as well (kernlog.vcpu_stack_end_panic);
    Host.wedge_report() counts it as a lost host."""


class Host:
    """The L1 host: a Vm booted from the host image, with the tracker, its region and KVM.
    While it runs, a LockupWatch reads its console: when its kernel reports a CPU stuck for
    minutes, the host is stopped at once (`wedged` says why) instead of every wait on it or
    its VMs running into its timeout."""

    def __init__(self, vm: Vm, image: HostImage, region: str | None) -> None:
        self.vm = vm
        self.image = image
        self.region = region
        self.dax: str | None = None
        self.node: int | None = None
        self.vms: dict[int, NestedVm] = {}
        self.pool: Pool | None = None  # the swap tier's pool manager (start_pool)
        self.stuck: str | None = None  # a CPU reported stuck (the host was then stopped)
        self.wedged: str | None = None  # ... and lost to the platform (HostWedged)
        self.watch = LockupWatch(vm.console_log, self._lost).start()

    def _record(self, report: str) -> None:
        """A CPU reported stuck: `stuck` says so, and `wedged` too unless the CPU is stuck in
        the project's own modules (a bug, not a loss to the platform: the test then fails with
        its own error). `wedged` first: the caller's thread reads `stuck` first."""
        stuck = f"the host's kernel reports {report}"
        self.wedged = None if in_own_module(report) else stuck
        self.stuck = stuck

    def _lost(self, report: str) -> None:
        """LockupWatch's callback (its thread): stop L0's QEMU, which ends every wait on it."""
        self._record(report)
        self.vm.kill(f"stopped: {self.stuck}")

    def wedge_report(self) -> str | None:
        """Why the host cannot answer any more, if the platform lost it: a CPU reported stuck
        on its console outside the project's modules, a vCPU QEMU sees wedged (checked from
        the caller's thread), L0's QEMU aborted in its TCG core or logged a triple fault of a
        host whose kernel said nothing (vm.machine_lost_to_platform), or the host's first kernel
        report is the "corrupted stack end" panic in a vCPU thread (kernlog.vcpu_stack_end_panic)."""
        if self.stuck is None:
            report = self.watch.poll()
            if report is not None:
                self._record(report)
        if self.stuck is None and self.vm.alive():
            stuck = self.vm.stuck_vcpus()
            if stuck:
                self.wedged = "; ".join(s.describe() for s in stuck)
        if self.wedged is None and self.stuck is None:
            # a host gone silently: the agent's and QMP's sockets closed under the test
            # (CI of b415674: "agent channel unusable: [Errno 32] Broken pipe")
            console = self.vm.console_text()
            self.wedged = machine_lost_to_platform(
                self.vm.qemu_log_text(), self.vm.debug_log_text(), bool(first_report(console))
            )
            # or gone with that panic (CI of 9e1c3c3 failed test_vm_killed_mid_eviction on it)
            panic = vcpu_stack_end_panic(console)
            if self.wedged is None and panic is not None:
                self.wedged = (
                    f"the host's kernel: {panic}, in an L2 QEMU's vCPU thread (seen with KVM built from "
                    "Debian's unmodified source too; cause open: docs/harness.md)"
                )
        return self.wedged

    @classmethod
    def config(
        cls,
        qemu: Path,
        image: HostImage,
        topology: Topology,
        workdir: Path,
        append: str = "",
        memory: str = "3G",
    ) -> VmConfig:
        topo = topology.copy()
        topo.memory = memory
        return VmConfig(
            qemu=qemu,
            image=image.host,
            topology=topo,
            workdir=workdir,
            append=append,
            # svm + npt for the host's KVM (in "max"); otherwise as every TCG guest.
            cpu=TCG_CPU,
            relays=relay_names(),
            boot_timeout=300,
            command_timeout=120,
        )

    def setup(self, kvm: bool = True, kvm_args: str = "nested=1") -> Host:
        """Load cxltrack.ko, create the region (devdax or kmem) and give its map to the tracker,
        load kvm_amd (the project's patched KVM: modprobe prefers its extra/ modules), mount
        cgroup v2."""
        self.run("modprobe cxltrack && test -c /dev/cxltrack0")
        if self.region is not None:
            # track: the region's HPA -> DPA map for the tracker's kernel users (the patched KVM)
            self.run(f"cxl-region create {self.region} && cxl-region track", timeout=120)
            if self.region == "devdax":
                self.dax = "/dev/dax0.0"
                self.run(f"test -c {self.dax}")
            else:
                out = self.run("cxl-region show").out
                node = [w.split("=", 1)[1] for w in out.split() if w.startswith("target_node=")]
                if not node or not node[0].isdigit():
                    raise GuestError(f"no NUMA node for the kmem region: {out}")
                self.node = int(node[0])
        if kvm:
            which = os.environ.get("CXLTRACK_HOST_KVM", "")
            if which == "stock":
                # Debian's own KVM modules instead of the project's patched ones, to tell a fault
                # of the patch from the platform's (docs/harness.md); no device dirty log then
                insmod_stock_kvm(self.run, kvm_args)
            else:
                if which:
                    # a directory of L0 with kvm.ko and kvm-amd.ko built otherwise (e.g. the
                    # unpatched source through build-kvm's own kbuild), in place of the image's
                    for m in ("kvm.ko", "kvm-amd.ko"):
                        self.run(f'cat > "/lib/modules/$(uname -r)/extra/{m}"', stdin=(Path(which) / m).read_bytes())
                    self.run("depmod -a")
                self.run(f"modprobe kvm_amd {kvm_args}")
            self.run("test -c /dev/kvm")
        self.run(MOUNT_CGROUP2)
        self.run(f"mkdir -p {RUN_DIR}")
        return self

    def run(self, cmd: str, timeout: float | None = None, check: bool = True, stdin: bytes = b"") -> CommandResult:
        return self.vm.run(cmd, timeout=timeout, check=check, stdin=stdin)

    def dpa_base(self) -> int:
        """DPA of the region's first byte (1-way region: the dpa_resource of its one target,
        an endpoint decoder)."""
        out = self.run(
            'set -- /sys/bus/cxl/devices/region*; [ $# -eq 1 ] && [ -e "$1" ] || exit 3; '
            'ep=$(cat "$1/target0"); cat "/sys/bus/cxl/devices/$ep/dpa_resource"'
        ).out.split()
        if len(out) != 1:
            raise GuestError(f"expected the DPA of the region's endpoint decoder, got {out}")
        return int(out[0], 0)

    def region_hpa(self) -> int:
        """Host-physical address of the region's first byte (in the host)."""
        out = self.run("cat /sys/bus/cxl/devices/region*/resource").out.split()
        if len(out) != 1:
            raise GuestError(f"expected one CXL region, found {out}")
        return int(out[0], 0)

    def device_pages(self) -> int:
        return int(self.run("cat /sys/class/cxltrack/cxltrack0/pages").out)

    def harvest_dirty(self, start: int, count: int, clear: bool = True) -> set[int]:
        """Device pages of [start, start + count) (multiples of 64) the tracker has seen
        written, harvested (and by default cleared) by the cxltrack CLI in the host."""
        if start % 64 or count % 64:
            raise ValueError(f"harvest [{start}, +{count}): not multiples of 64 pages")
        flags = " --clear" if clear else ""
        out = self.run(f"cxltrack harvest dirty {start} {count}{flags} --format list", timeout=300).out
        return {int(w, 0) for w in out.split()}

    def zero(self, offset: int, size: int) -> str:
        """Zero `size` bytes of the region from `offset` on with the device's scrub and clear
        their dirty bits (`cxltrack zero`): from then on a dirty bit there means written since
        zeroed. Whole chunks; returns the command's line."""
        shift = self.page_shift()
        first = (self.dpa_base() + offset) >> shift
        return self.run(f"cxltrack zero {first} {size >> shift}", timeout=300).out.strip()

    def page_shift(self) -> int:
        return int(self.run("cat /sys/class/cxltrack/cxltrack0/page_shift").out)

    def chunk_bytes(self) -> int:
        return 1 << int(self.run("cat /sys/class/cxltrack/cxltrack0/chunk_shift").out)

    def hugepages(self, size: int) -> str:
        """A directory in RAM for `size` bytes of copies that a VM's QEMU will map: hugetlbfs
        (/dev/hugepages) with that many more 2 MiB pages reserved, so that the L2 guest's
        first touch of the copy costs one nested page fault per 2 MiB, not per 4 KiB; /dev/shm
        if the host cannot reserve them (said on stdout)."""
        need = -(-size // (2 * MiB))
        out = self.run(
            "grep -q ' /dev/hugepages hugetlbfs' /proc/mounts || { mkdir -p /dev/hugepages && "
            "mount -t hugetlbfs -o pagesize=2M none /dev/hugepages; } || exit 3; "
            f"t=$(cat /proc/sys/vm/nr_hugepages); echo $((t + {need})) > /proc/sys/vm/nr_hugepages; "
            "grep -E '^HugePages_(Total|Free)' /proc/meminfo",
            check=False,
        )
        free = re.search(r"HugePages_Free:\s+(\d+)", out.out)
        if out.status == 0 and free and int(free.group(1)) >= need:
            return "/dev/hugepages"
        print(f"[nested] no {need} huge pages for the tier's copy ({out.out.strip()} {out.err.strip()}): /dev/shm")
        return "/dev/shm"

    def start_pool(self, offset: int = 0, size: int | None = None) -> Pool:
        """Start the swap tier's pool manager over the chunks that lie whole in bytes
        [offset, offset + size) of /dev/dax0.0 (default: all of it). A VM with a swap tier
        starts one with the defaults if none runs."""
        if self.dax is None:
            raise ValueError("the pool needs the host's devdax region")
        if self.pool is not None and not self.pool.dead:
            raise ValueError("a pool manager runs already")
        dax_size = int(self.run("cat /sys/bus/dax/devices/dax0.0/size").out)
        size = dax_size - offset if size is None else size
        if offset < 0 or size <= 0 or offset + size > dax_size:
            raise ValueError(f"pool range {offset}+{size} outside /dev/dax0.0 ({dax_size} bytes)")
        cb = self.chunk_bytes()
        start = self.dpa_base() + offset
        first = -(-start // cb)
        end = (start + size) // cb
        if end <= first:
            raise ValueError(f"pool range {offset}+{size} holds no whole chunk of {cb} bytes")
        self.pool = Pool(self, first, end - first).start()
        return self.pool

    def make_disk(self, path: str, size: int, pattern: bool = False) -> str:
        """A raw disk image of `size` bytes in the host (tmpfs). With `pattern`, each 4 KiB block
        holds its block number in its first 8 bytes (decimal, padded), the rest zero."""
        self.run(f"mkdir -p $(dirname {shlex.quote(path)}) && truncate -s {size} {shlex.quote(path)}")
        if pattern:
            self.run(
                f"i=0; while [ $i -lt {size // 4096} ]; do printf '%08d' $i | "
                f"dd of={shlex.quote(path)} bs=4096 seek=$i conv=notrunc 2>/dev/null; i=$((i + 1)); done",
                timeout=600,
            )
        return path

    def start_vm(self, spec: VmSpec) -> NestedVm:
        if any(v.spec.name == spec.name for v in self.vms.values()):
            raise ValueError(f"a VM named {spec.name} is running")
        free = [n for n in range(VM_SLOTS) if n not in self.vms]
        if not free:
            raise GuestError(f"all {VM_SLOTS} VM slots of the host are in use")
        try:
            return self._boot(spec, free[0])
        except VmBootHung as exc:
            print(
                f"[nested] L2 VM {spec.name}: its kernel hung before init ({str(exc).splitlines()[0]}); "
                "booting it once more (the hung boot's logs: <vm>-hung-boot)",
                flush=True,
            )
            self._keep_hung_boot(self.vm.cfg.workdir / spec.name)
        return self._boot(spec, free[0])

    def _boot(self, spec: VmSpec, slot: int) -> NestedVm:
        """Start `spec`'s VM in `slot`; a VM that failed to start is shut down and forgotten."""
        vm = NestedVm(self, spec, slot)
        self.vms[vm.slot] = vm
        try:
            return vm.start()
        except BaseException:
            with contextlib.suppress(GuestError, OSError):
                vm.shutdown()
            self.vms.pop(vm.slot, None)
            raise

    @staticmethod
    def _keep_hung_boot(workdir: Path) -> None:
        """Move the hung boot's logs aside: the next boot of the VM writes the same directory."""
        keep = workdir.with_name(workdir.name + "-hung-boot")
        shutil.rmtree(keep, ignore_errors=True)
        if workdir.exists():
            workdir.rename(keep)

    def release(self, vm: NestedVm) -> None:
        if self.vms.get(vm.slot) is vm:
            del self.vms[vm.slot]

    def shutdown(self, save_logs: bool = False) -> None:
        for vm in list(self.vms.values()):
            if save_logs:
                with contextlib.suppress(GuestError, OSError):
                    vm.save_logs()
            with contextlib.suppress(GuestError, OSError):
                vm.shutdown()
        self.watch.stop()
        self.vm.shutdown()


def boot_host(
    qemu: Path,
    image: HostImage,
    topology: Topology,
    workdir: Path,
    region: str | None = "devdax",
    kvm: bool = True,
    memory: str = "3G",
) -> Host:
    # CXLTRACK_HOST_APPEND: extra kernel arguments for every host, for debugging (e.g.
    # page_poison=1: the host's kernel checks every freed page for writes when it is reused).
    append = os.environ.get("CXLTRACK_HOST_APPEND", "")
    cfg = Host.config(qemu, image, topology, workdir, append=append, memory=memory)
    # CXLTRACK_HOST_TCG=single: the host's vCPUs in one TCG thread (VmConfig.tcg_single_thread),
    # to tell a multi-threaded TCG race from the code under test (docs/harness.md).
    cfg.tcg_single_thread = os.environ.get("CXLTRACK_HOST_TCG") == "single"
    vm = Vm(cfg)
    vm.start()
    host = Host(vm, image, region)
    try:
        return host.setup(kvm=kvm)
    except BaseException:
        host.shutdown()
        raise


def load_host_image(manifest: Path) -> HostImage:
    return HostImage.from_json(manifest.read_text())


def env_host_image() -> Path:
    return Path(os.environ.get("CXLTRACK_HOST_IMAGE", "out/guest/host.json"))
