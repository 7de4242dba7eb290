# SPDX-License-Identifier: Apache-2.0
"""Launch the patched QEMU and talk to it over QMP and the qtest protocol.

QEMU connects to sockets this module listens on (as libqtest does), so there
is no race between QEMU creating a socket and the test connecting to it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from cxltrack.config import DeviceConfig
from cxltrack.harness.qmp import Qmp
from cxltrack.harness.topology import cxl_type3_topology
from cxltrack.harness.tracker import tracker_topology

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent
BUILD = MODEL / "build-qemu"


def qemu_bin() -> str:
    env = os.environ.get("CXLTRACK_QEMU")
    if env:
        return env
    out = subprocess.run([str(BUILD)], check=True, stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def fw_args() -> list[str]:
    """-L for a QEMU that has no share/qemu next to it (a development build)."""
    fw = os.environ.get("CXLTRACK_QEMU_FIRMWARE")
    return ["-L", fw] if fw else []


def cxl_args(tracker: bool = True, cfg: DeviceConfig | None = None, extra_tracker: str = "") -> list[str]:
    """QEMU arguments of the harness's CXL topology (harness/topology.py: one pxb-cxl host
    bridge, one root port, a volatile cxl-type3 `cxl-vmem0` and a 4 GiB fixed window), with
    the tracker `tracker0` as function 1 (configured as `cfg`, or QEMU's defaults) unless
    `tracker` is false. `extra_tracker` (",prop=value...") is appended to the tracker's
    -device option, for tests of the device's own checks."""
    if not tracker:
        return cxl_type3_topology().args()
    args = tracker_topology(cfg).args()
    i = next(i for i, a in enumerate(args) if a.startswith("cxltrack,"))
    args[i] += extra_tracker
    return args


class Qemu:
    """One QEMU process with QMP, and optionally qtest (accel=qtest)."""

    def __init__(self, args: list[str], qtest: bool = False, timeout: float = 30.0):
        self.dir = tempfile.TemporaryDirectory(prefix="cxlt-qemu-")
        d = Path(self.dir.name)
        self.stderr_path = d / "stderr"
        listeners = {}
        for name in ["qmp"] + (["qtest"] if qtest else []):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(d / name))
            s.listen(1)
            s.settimeout(timeout)
            listeners[name] = s
        cmd = [
            qemu_bin(),
            "-nodefaults",
            "-nographic",
            "-display",
            "none",
            "-chardev",
            f"socket,id=qmp,path={d / 'qmp'}",
            "-mon",
            "chardev=qmp,mode=control",
        ]
        cmd += fw_args()
        if qtest:
            cmd += ["-qtest", f"unix:{d / 'qtest'}", "-qtest-log", "/dev/null", "-accel", "qtest"]
        cmd += args
        self.cmdline = cmd
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            self.qtest_sock = None
            if qtest:
                self.qtest_sock, _ = listeners["qtest"].accept()
                self.qtest_sock.settimeout(timeout)
                self.qbuf = b""
            qs, _ = listeners["qmp"].accept()
            qs.settimeout(timeout)
            self.qmp = Qmp(qs, timeout=timeout)
        except (OSError, EOFError, RuntimeError, ValueError):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"QEMU did not start: {self.stderr()}") from None
        finally:
            for s in listeners.values():
                s.close()

    def unexpected_stderr(self) -> str:
        """stderr without lines known to be harmless (an ASan build's notice)."""
        return "".join(
            line for line in self.stderr().splitlines(keepends=True) if "ASan doesn't fully support" not in line
        )

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    # -- qtest protocol ----------------------------------------------------
    def qt(self, line: str) -> str:
        assert self.qtest_sock is not None
        self.qtest_sock.sendall(line.encode() + b"\n")
        while True:
            while b"\n" not in self.qbuf:
                chunk = self.qtest_sock.recv(65536)
                if not chunk:
                    raise EOFError(f"qtest closed after {line!r}; stderr: {self.stderr()}")
                self.qbuf += chunk
            reply, self.qbuf = self.qbuf.split(b"\n", 1)
            text = reply.decode()
            if text.startswith("IRQ"):
                continue  # asynchronous interrupt notifications
            if not text.startswith("OK"):
                raise RuntimeError(f"qtest {line!r}: {text}")
            return text[2:].strip()

    def readl(self, addr: int) -> int:
        return int(self.qt(f"readl 0x{addr:x}"), 16)

    def writel(self, addr: int, val: int) -> None:
        self.qt(f"writel 0x{addr:x} 0x{val & 0xFFFFFFFF:x}")

    def readq(self, addr: int) -> int:
        return int(self.qt(f"readq 0x{addr:x}"), 16)

    def writeq(self, addr: int, val: int) -> None:
        self.qt(f"writeq 0x{addr:x} 0x{val & 0xFFFFFFFFFFFFFFFF:x}")

    def readb(self, addr: int) -> int:
        return int(self.qt(f"readb 0x{addr:x}"), 16)

    def writeb(self, addr: int, val: int) -> None:
        self.qt(f"writeb 0x{addr:x} 0x{val & 0xFF:x}")

    def readw(self, addr: int) -> int:
        return int(self.qt(f"readw 0x{addr:x}"), 16)

    def writew(self, addr: int, val: int) -> None:
        self.qt(f"writew 0x{addr:x} 0x{val & 0xFFFF:x}")

    def read(self, addr: int, size: int) -> bytes:
        return bytes.fromhex(self.qt(f"read 0x{addr:x} 0x{size:x}")[2:])

    def write(self, addr: int, data: bytes) -> None:
        self.qt(f"write 0x{addr:x} 0x{len(data):x} 0x{data.hex()}")

    def memset(self, addr: int, size: int, val: int) -> None:
        self.qt(f"memset 0x{addr:x} 0x{size:x} 0x{val:x}")

    def outl(self, port: int, val: int) -> None:
        self.qt(f"outl 0x{port:x} 0x{val:x}")

    def inl(self, port: int) -> int:
        return int(self.qt(f"inl 0x{port:x}"), 16)

    def clock_step(self, ns: int | None = None) -> int:
        return int(self.qt("clock_step" + (f" {ns}" if ns is not None else "")))

    # -- teardown ------------------------------------------------------------
    def close(self) -> int:
        """Quit QEMU and return its exit status (negative: killed by signal)."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, EOFError, RuntimeError):
                self.qmp.command("quit")
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for s in (self.qtest_sock, self.qmp.sock):
            if s is not None:
                s.close()
        rc = self.proc.returncode
        return rc

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        self.dir.cleanup()


def wait_until(pred, timeout: float = 10.0, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
