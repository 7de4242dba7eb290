# SPDX-License-Identifier: Apache-2.0
"""Boot a guest under QEMU, talk to its agent, always shut it down.

    with Vm(VmConfig(qemu=..., image=..., topology=cxl_type3_topology(), workdir=...)) as vm:
        print(vm.run("uname -r").out)

QEMU's stdout/stderr go to <workdir>/qemu.log, the guest console to
<workdir>/console.log and every agent command with its output to
<workdir>/commands.log. QEMU gets PR_SET_PDEATHSIG so it dies with the process
that started it, even when that one is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Self, TextIO

from .agent import AgentChannel, CommandResult, GuestCommandError, GuestError, Stream
from .image import AGENT_PORT, GuestImage
from .qmp import Qmp, QmpError
from .topology import Topology
from .vcpu import VcpuState, probe

# The CPU of a guest under TCG: hypervisor=off (the CXL region's commit needs the CPU cache
# flush of bare metal); no FSRM/ERMS, because with them the guest's kernel and glibc copy with
# `rep movsb`, which TCG runs a byte at a time, and on the device's memory (the CXL window,
# an I/O region in L0) every byte is an I/O callback: `dd` of 16 MiB of tmpfs pages on the
# kmem node to /dev/null took 3.75 s with them and 0.46 s without (2026-11-25).
TCG_CPU = "max,hypervisor=off,-fsrm,-erms"
_live: weakref.WeakSet[Vm] = weakref.WeakSet()


def _kill_all() -> None:
    for vm in list(_live):
        vm.shutdown()


atexit.register(_kill_all)


def host_has_hw_virt() -> bool:
    """True only with real VMX/SVM and a usable /dev/kvm (the paravirtual PVM /dev/kvm
    found on some hosts, without those flags, crashes normal kernels)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    words = set(flags.split())
    return bool(words & {"vmx", "svm"}) and os.access("/dev/kvm", os.R_OK | os.W_OK)


def default_datadirs() -> list[Path]:
    """Extra `-L` firmware dirs from $CXLTRACK_QEMU_DATADIRS (':'-separated). None by default:
    the project's QEMU is relocatable and finds its own share/qemu; a system dir such as
    /usr/share/qemu could hold firmware of another QEMU version."""
    env = os.environ.get("CXLTRACK_QEMU_DATADIRS", "")
    return [Path(p) for p in env.split(":") if p]


def timeout_scale() -> float:
    """How much longer than written every guest command and boot may take: CXLTRACK_TIMEOUT_SCALE
    (default 1), for a slow guest kernel (the debug build of `make test-driver-debug`)."""
    raw = os.environ.get("CXLTRACK_TIMEOUT_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        raise ValueError(f"CXLTRACK_TIMEOUT_SCALE={raw!r}: a number >= 1") from None
    if not scale >= 1:
        raise ValueError(f"CXLTRACK_TIMEOUT_SCALE={raw!r}: a number >= 1")
    return scale


class GuestWedged(GuestError):
    """The agent did not answer and a vCPU is wedged (see harness/vcpu.py): the VM is lost."""


def found_wedged(exc: BaseException) -> bool:
    """`exc` is, or was caused by, a GuestWedged: the agent's wait ended because the watchdog
    saw a vCPU wedged twice 1 s apart. That verdict stands: asking again later may not repeat
    it (the HMP queries behind a sighting can kick a halted vCPU, or the host may be running a
    starved thread at that moment), and a test lost to the platform must say so."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, GuestWedged):
            return True
        seen = seen.__cause__
    return False


# Assertions in QEMU's own TCG core (no code of this project's series) seen to abort a guest's
# boot under load: a race between a vCPU's TLB entry and a memory map replaced meanwhile.
UPSTREAM_ABORTS = (re.compile(r"\S*physmem\.c:\d+: iotlb_to_section: Assertion .* failed\."),)


def upstream_abort(qemu_log: str) -> str | None:
    """The line of QEMU's log that says it aborted in its TCG core (UPSTREAM_ABORTS), if any."""
    for pattern in UPSTREAM_ABORTS:
        m = pattern.search(qemu_log)
        if m:
            return m.group(0)
    return None


# What QEMU's -d cpu_reset log says when a guest triple-faults outside SVM's guest mode (target/
# i386/tcg/excp_helper.c); with -no-reboot QEMU then exits, and its sockets close under the harness.
TRIPLE_FAULT = "Triple fault"
CPU_RESET = "CPU Reset"  # the head of each register dump -d cpu_reset writes


def machine_lost_to_platform(qemu_log: str, debug_log: str, kernel_report: bool) -> str | None:
    """Why a machine that stopped answering mid-test was lost to the emulator, or None: QEMU aborted in its
    TCG core (UPSTREAM_ABORTS), or the guest triple-faulted while its kernel said nothing on the console
    (`kernel_report` False). A triple fault after a kernel report (a panic, an oops) is that report's."""
    abort = upstream_abort(qemu_log)
    if abort is not None:
        return f"QEMU aborted: {abort} (the platform: a race in QEMU's TCG core)"
    if TRIPLE_FAULT in debug_log and not kernel_report:
        return (
            "the guest triple-faulted with nothing on its console (nested SVM under TCG; cause open: docs/harness.md)"
        )
    return None


def boot_patch_trap(console: str) -> str | None:
    """The kernel's `Oops: int3` line if its console shows one before it ran its init: a vCPU hit the
    breakpoint another vCPU left at a site it was patching (jump labels, e.g. at "sched_clock: Marking
    stable") and the int3 handler no longer knew it. TCG does not make a cross-modified instruction visible to
    the other vCPUs the way the hardware the kernel's text_poke_bp() relies on does; nothing of the project
    runs in the kernel before its init (the fresh-machine run of 2a91574 lost a nested host so, at 2.6 s)."""
    for line in console.splitlines():
        if "Run /init as init process" in line:
            return None
        if "Oops: int3" in line:
            return line.strip()
    return None


def _remove_stale_tmp() -> None:
    """Remove socket dirs left by harness processes that were killed."""
    for d in Path(tempfile.gettempdir()).glob("cxlt-vm-*-*"):
        pid = d.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)


def _pdeathsig() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class VmConfig:
    qemu: Path
    image: GuestImage
    topology: Topology
    workdir: Path
    append: str = ""
    accel: str | None = None  # None: kvm with real VMX/SVM, else tcg
    # With TCG, run all vCPUs in one host thread (-accel tcg,thread=single) instead of one
    # thread each. Multi-threaded TCG (QEMU 10.0, two x86 vCPUs) was seen to wedge a vCPU: halted
    # with an interrupt in service that never got its EOI, after which it takes no interrupt at
    # all (harness/vcpu.py) - 3 times in ~6,900 vector-replay requests on the tracker VM, 0 times
    # in 15,040 single-threaded. Single-threaded TCG interleaves the vCPUs in time slices, so
    # guest code races far less finely: only for VMs whose tests do not depend on that.
    tcg_single_thread: bool = False
    cpu: str | None = None
    datadirs: list[Path] = field(default_factory=default_datadirs)
    boot_timeout: float = 180.0
    command_timeout: float = 60.0
    extra_args: list[str] = field(default_factory=list)
    # Names of further virtio-serial ports, each joined to a Unix socket of the harness
    # (Vm.relays[name]): a nested host relays them to the agents and monitors of its VMs.
    relays: tuple[str, ...] = ()


class Vm:
    def __init__(self, cfg: VmConfig) -> None:
        self.cfg = cfg
        self.proc: subprocess.Popen[bytes] | None = None
        self.agent: AgentChannel | None = None
        self.qmp: Qmp | None = None
        self.boot_seconds: float | None = None
        self.guest_uptime_at_ready: float | None = None
        self.resets_at_ready: int | None = None  # CPU resets QEMU had logged when the agent was ready
        self._tmp: Path | None = None
        self._qemu_log: IO[bytes] | None = None
        self._transcript: TextIO | None = None
        self.relays: dict[str, socket.socket] = {}

    # -- paths -------------------------------------------------------------
    @property
    def debug_log(self) -> Path:
        return self.cfg.workdir / "debug.log"

    def cpu_resets(self) -> int:
        """CPU resets QEMU logged (-d cpu_reset): a few per vCPU while the machine starts, more
        after a guest reset (resets_at_ready is the count at boot)."""
        return self.debug_log_text().count(CPU_RESET)

    def debug_log_text(self) -> str:
        try:
            return self.debug_log.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def console_log(self) -> Path:
        return self.cfg.workdir / "console.log"

    @property
    def qemu_log(self) -> Path:
        return self.cfg.workdir / "qemu.log"

    @property
    def commands_log(self) -> Path:
        return self.cfg.workdir / "commands.log"

    def console_text(self) -> str:
        try:
            return self.console_log.read_text(errors="replace")
        except OSError:
            return ""

    def qemu_log_text(self) -> str:
        try:
            return self.qemu_log.read_text(errors="replace")
        except OSError:
            return ""

    # -- command line --------------------------------------------------------
    def command_line(self, agent_sock: Path, qmp_sock: Path, relay_socks: tuple[Path, ...] = ()) -> list[str]:
        cfg = self.cfg
        accel = cfg.accel or ("kvm" if host_has_hw_virt() else "tcg")
        cpu = cfg.cpu or ("host,hypervisor=off" if accel == "kvm" else TCG_CPU)
        if accel == "tcg" and cfg.tcg_single_thread:
            accel = "tcg,thread=single"
        args = [str(cfg.qemu)]
        for d in cfg.datadirs:
            args += ["-L", str(d)]
        args += [
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
            # CPU state at each reset: a guest that triple-faults ends QEMU silently (-no-reboot)
            "-d",
            "cpu_reset",
            "-D",
            str(self.debug_log),
            "-accel",
            accel,
            "-cpu",
            cpu,
            *cfg.topology.args(),
            "-chardev",
            f"file,id=con,path={self.console_log}",
            "-serial",
            "chardev:con",
            "-device",
            "virtio-serial-pci,id=vser0,bus=pcie.0",
            "-chardev",
            f"socket,id=agent,path={agent_sock}",
            "-device",
            f"virtserialport,bus=vser0.0,chardev=agent,name={AGENT_PORT}",
            "-chardev",
            f"socket,id=qmp,path={qmp_sock}",
            "-mon",
            "chardev=qmp,mode=control",
        ]
        for i, (name, sock) in enumerate(zip(cfg.relays, relay_socks, strict=True)):
            args += [
                "-chardev",
                f"socket,id=relay{i},path={sock}",
                "-device",
                f"virtserialport,bus=vser0.0,chardev=relay{i},name={name}",
            ]
        args += [
            *cfg.image.qemu_args(cfg.append),
            *cfg.extra_args,
        ]
        return args

    # -- life cycle ----------------------------------------------------------
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def answering(self) -> bool:
        """QEMU lives and the agent's channel still works. A wedged guest broke it (the command
        that found it so failed with the reason): a fixture's teardown leaves such a VM alone,
        since its own error in teardown would keep the test from running again."""
        return self.alive() and self.agent is not None and self.agent.broken is None

    def start(self) -> Self:
        cfg = self.cfg
        cfg.workdir.mkdir(parents=True, exist_ok=True)
        for p in (self.console_log, self.qemu_log, self.commands_log):
            p.unlink(missing_ok=True)
        # Unix socket paths must be short: keep them in /tmp, not in workdir.
        _remove_stale_tmp()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"cxlt-vm-{os.getpid()}-"))
        agent_path, qmp_path = self._tmp / "agent.sock", self._tmp / "qmp.sock"
        relay_paths = tuple(self._tmp / f"relay{i}.sock" for i in range(len(cfg.relays)))
        listeners = []
        for p in (agent_path, qmp_path, *relay_paths):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(p))
            s.listen(1)
            s.settimeout(0.25)
            listeners.append(s)
        argv = self.command_line(agent_path, qmp_path, relay_paths)
        qlog = open(self.qemu_log, "wb")  # noqa: SIM115 - lives as long as the VM
        self._qemu_log = qlog
        qlog.write(("# " + " ".join(argv) + "\n").encode())
        qlog.flush()
        self._transcript = open(self.commands_log, "w")  # noqa: SIM115 - lives as long as the VM
        _live.add(self)
        t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT, preexec_fn=_pdeathsig
            )
            conns = [self._accept(s, t0 + 30) for s in listeners]
            self.relays = dict(zip(cfg.relays, conns[2:], strict=True))
            try:
                self.qmp = Qmp(conns[1])
            except (OSError, QmpError) as exc:
                time.sleep(0.5)
                raise GuestError(f"QMP handshake failed: {exc}\n{self._diagnostics()}") from exc
            self.agent = AgentChannel(conns[0], self.alive, self._watchdog)
            try:
                ready = self.agent.wait_ready(cfg.boot_timeout * timeout_scale())
            except (TimeoutError, GuestError) as exc:
                lost = self._boot_lost_to_platform()
                if lost is not None:
                    # repeated once by the pytest plugin, as a lost machine is
                    raise GuestWedged(f"{lost}\n{self._diagnostics()}") from exc
                cls = GuestWedged if found_wedged(exc) else GuestError
                raise cls(f"guest did not become ready: {exc}\n{self._diagnostics()}") from exc
            self.boot_seconds = time.monotonic() - t0
            self.resets_at_ready = self.cpu_resets()
            parts = ready.split()
            if len(parts) == 2:
                self.guest_uptime_at_ready = float(parts[1])
        except BaseException:
            self.shutdown()
            raise
        finally:
            for s in listeners:
                s.close()
        return self

    def _accept(self, listener: socket.socket, deadline: float) -> socket.socket:
        while time.monotonic() < deadline:
            if not self.alive():
                raise GuestError(f"QEMU exited during start-up\n{self._diagnostics()}")
            try:
                conn, _ = listener.accept()
                return conn
            except TimeoutError:
                continue
        raise GuestError(f"QEMU did not connect its sockets\n{self._diagnostics()}")

    def _boot_lost_to_platform(self) -> str | None:
        """Why a boot that never became ready was lost to the emulator, not the code under test: QEMU aborted in
        its TCG core, or the kernel trapped on its own text patching before its init; None otherwise."""
        abort = upstream_abort(self.qemu_log_text())
        if abort is not None:
            return f"QEMU aborted while the guest booted: {abort} (the platform: a race in QEMU's TCG core)"
        trap = boot_patch_trap(self.console_text())
        if trap is not None:
            return (
                f"the guest's kernel trapped on its own text patching while it booted: {trap} (the platform: "
                "TCG's cross-modifying code)"
            )
        return None

    def _diagnostics(self, lines: int = 40) -> str:
        rc = None if self.proc is None else self.proc.poll()
        q = self.qemu_log_text().splitlines()[-lines:]
        c = self.console_text().splitlines()[-lines:]
        debug = self.debug_log_text()  # read once for the resets and the triple fault
        vcpus = ""
        if rc is None and self.qmp is not None:
            try:
                vcpus = "--- vCPUs ---\n" + "\n".join(s.describe() for s in self.vcpu_states()) + "\n"
            except (GuestError, QmpError, OSError, ValueError) as exc:
                vcpus = f"--- vCPUs ---\n(state unavailable: {exc})\n"
        return (
            f"QEMU {'running' if rc is None else f'exit status {rc}'}, {debug.count(CPU_RESET)} CPU resets logged "
            f"({self.resets_at_ready if self.resets_at_ready is not None else '?'} when the guest was ready)"
            f"{', a triple fault logged' if TRIPLE_FAULT in debug else ''}; "
            f"logs in {self.cfg.workdir}\n"
            + vcpus
            + "--- qemu.log (tail) ---\n"
            + "\n".join(q)
            + "\n--- console.log (tail) ---\n"
            + "\n".join(c)
        )

    # -- vCPU state ------------------------------------------------------------
    def vcpu_states(self) -> list[VcpuState]:
        """Every vCPU's state as QEMU sees it (halted, interrupts, local APIC); see harness/vcpu.py."""
        qmp = self.qmp
        if qmp is None or not self.alive():
            raise GuestError("VM not running")

        return probe(qmp.hmp)

    def _wedged(self) -> list[VcpuState]:
        try:
            return [s for s in self.vcpu_states() if s.wedged or s.lost_wakeup]
        except (GuestError, QmpError, OSError, ValueError):
            return []

    def stuck_vcpus(self) -> list[VcpuState]:
        """The wedged vCPUs, each seen wedged twice 1 s apart (the two HMP queries behind one
        sighting are not one snapshot: a CPU just taking an interrupt could look wedged once),
        or seen halted twice 1 s apart with the same interrupts in service and one it should
        take pending (a lost wakeup, VcpuState.lost_wakeup)."""
        first = self._wedged()
        if not first:
            return []
        time.sleep(1.0)
        again = {(s.index, tuple(s.isr), s.wedged) for s in self._wedged()}
        stuck = [s for s in first if (s.index, tuple(s.isr), s.wedged) in again]
        # A halted vCPU whose thread the host has not run yet (a loaded machine starves QEMU's
        # threads for seconds) looks the same as a lost wakeup; only a thread asleep is one.
        asleep = self.vcpu_threads_asleep() if any(not s.wedged for s in stuck) else {}
        return [s for s in stuck if s.wedged or asleep.get(s.index, False)]

    def vcpu_threads_asleep(self) -> dict[int, bool]:
        """vCPU index -> its QEMU thread is asleep now (state S or D in /proc, not runnable);
        empty when QEMU cannot say (query-cpus-fast's thread ids)."""
        qmp, proc = self.qmp, self.proc
        if qmp is None or proc is None:
            return {}
        try:
            cpus = qmp.command("query-cpus-fast")
            out: dict[int, bool] = {}
            for c in cpus:
                stat = Path(f"/proc/{proc.pid}/task/{c['thread-id']}/stat").read_text()
                out[int(c["cpu-index"])] = stat.rsplit(")", 1)[1].split()[0] in ("S", "D")
            return out
        except (QmpError, OSError, ValueError, KeyError, IndexError):
            return {}

    def _watchdog(self) -> None:
        """Ends a wait for the agent early when a vCPU is wedged: it would never answer."""
        stuck = self.stuck_vcpus()
        if stuck:
            raise GuestWedged("the guest cannot answer any more:\n" + "\n".join(s.describe() for s in stuck))

    def kill(self, why: str) -> None:
        """SIGKILL QEMU now, from any thread (`why` goes to qemu.log); shutdown() still releases
        the rest. For a guest that can never answer again: every socket to it closes at once."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            self._note(f"killed: {why}")
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            # A QEMU with gigabytes of guest memory takes a moment to die after SIGKILL: wait
            # for it, so that alive() is False once kill() returned (the lockup watch's callers
            # look right after the wait on the guest ended).
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop QEMU (QMP quit, then SIGTERM, then SIGKILL) and release everything. Idempotent."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                if self.qmp is not None:
                    self.qmp.sock.settimeout(2)
                    self.qmp.command("quit")
            except (OSError, ValueError, RuntimeError) as exc:  # QEMU may already be gone
                self._note(f"QMP quit failed: {exc}")
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(sig)
                try:
                    proc.wait(timeout=timeout if sig is None else 5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        closers: list[Qmp | Stream | IO[bytes] | TextIO | None] = [
            self.qmp,
            self.agent.sock if self.agent else None,
            self._qemu_log,
            self._transcript,
            *self.relays.values(),
        ]
        for closer in closers:
            try:
                if closer is not None:
                    closer.close()
            except OSError as exc:
                self._note(f"close failed: {exc}")
        self.qmp = None
        self.relays = {}
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        _live.discard(self)

    def _note(self, msg: str) -> None:
        try:
            with open(self.qemu_log, "a") as f:
                f.write(f"# harness: {msg}\n")
        except OSError:
            return

    def __enter__(self) -> Self:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- commands ------------------------------------------------------------
    def run(self, cmd: str, timeout: float | None = None, check: bool = True, stdin: bytes = b"") -> CommandResult:
        """Run `cmd` with /bin/sh in the guest. With check (default), a non-zero exit or a
        timeout raises GuestCommandError whose message holds the guest's stdout and stderr."""
        if self.agent is None:
            raise GuestError("VM not started")
        t = (self.cfg.command_timeout if timeout is None else timeout) * timeout_scale()
        tr = self._transcript
        try:
            res = self.agent.run(cmd, t, stdin)
        except GuestError as exc:
            if tr is not None:
                tr.write(f"$ {cmd}\n!! {exc}\n")
                tr.flush()
            cls = GuestWedged if found_wedged(exc) or (self.alive() and self.stuck_vcpus()) else GuestError
            raise cls(f"{exc}\n{self._diagnostics()}") from exc
        if tr is not None:
            tr.write(f"$ {cmd}\n{res.describe()}\n\n")
            tr.flush()
        if check and not res.ok:
            raise GuestCommandError(res)
        return res

    def save_dmesg(self) -> None:
        """Write the guest kernel log to <workdir>/dmesg.log if the guest still answers."""
        if self.agent is None or self.agent.broken or not self.alive():
            return
        try:
            res = self.agent.run("dmesg", 10)
        except GuestError:
            return
        (self.cfg.workdir / "dmesg.log").write_bytes(res.stdout)

    def write_file(self, path: str, data: bytes, mode: str = "644") -> None:
        """Create a guest file from bytes (through the agent's stdin; keep it to a few MiB)."""
        q = shlex.quote(path)
        self.run(f"cat > {q} && chmod {shlex.quote(mode)} {q}", stdin=data)

    # -- hooks for the tracker (not implemented here) ----------------------
    def pci_devices(self) -> list[dict[str, str]]:
        """PCI functions seen by the guest: bdf, vendor, device, class, driver."""
        out = self.run(
            "for d in /sys/bus/pci/devices/*; do "
            "printf '%s %s %s %s %s\\n' ${d##*/} $(cat $d/vendor $d/device $d/class) "
            "$(basename $(readlink $d/driver 2>/dev/null) 2>/dev/null || echo -); done"
        ).out
        keys = ("bdf", "vendor", "device", "class", "driver")
        return [dict(zip(keys, line.split(), strict=False)) for line in out.splitlines() if line.strip()]

    def pci_bar_path(self, vendor: str, device: str, bar: int = 0) -> str:
        """sysfs path of BAR `bar` of the first guest PCI function vendor:device, for a guest
        user-space tool to mmap (the cxltrack tracker will be read this way)."""
        for d in self.pci_devices():
            if d["vendor"] == vendor and d["device"] == device:
                return f"/sys/bus/pci/devices/{d['bdf']}/resource{bar}"
        raise GuestError(f"no PCI function {vendor}:{device} in the guest")
