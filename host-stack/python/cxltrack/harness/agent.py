# SPDX-License-Identifier: Apache-2.0
"""Host side of the guest agent protocol (see host-stack/guest-tools/cxltrack-agent.c).

    request : "CXQ1" id timeout_ms cmd_len stdin_len | cmd | stdin
    response: "CXR1" id status timed_out out_len err_len | stdout | stderr

All integers are little-endian u32; the agent greets with a response of id 0.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

REQ_MAGIC = b"CXQ1"
RSP_MAGIC = b"CXR1"
RSP_HDR = struct.Struct("<4sIiIII")
REQ_HDR = struct.Struct("<4sIIII")
# The host waits this much longer than the guest-side timeout before it gives up on the VM.
HOST_GRACE_S = 15.0
MAX_SHOWN = 6000


def _tail(data: bytes, limit: int = MAX_SHOWN) -> str:
    text = data.decode(errors="replace")
    if len(text) > limit:
        text = f"[... {len(text) - limit} characters cut ...]\n" + text[-limit:]
    return text


@dataclass
class CommandResult:
    cmd: str
    status: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    seconds: float

    @property
    def out(self) -> str:
        return self.stdout.decode(errors="replace")

    @property
    def err(self) -> str:
        return self.stderr.decode(errors="replace")

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.timed_out

    def describe(self) -> str:
        state = "timed out (killed)" if self.timed_out else f"exited with status {self.status}"

        def block(name: str, data: bytes) -> str:
            text = _tail(data)
            return f"--- guest {name} ---\n{text}" + ("" if not text or text.endswith("\n") else "\n")

        return (
            f"guest command {self.cmd!r} {state} after {self.seconds:.1f} s\n"
            + block("stdout", self.stdout)
            + block("stderr", self.stderr)
            + "--- end ---"
        )


class GuestError(RuntimeError):
    """The guest or the channel to it failed (not a command's own failure)."""


class GuestCommandError(GuestError):
    """A guest command exited non-zero or timed out; the message carries its output."""

    def __init__(self, result: CommandResult) -> None:
        super().__init__(result.describe())
        self.result = result


class Stream(Protocol):
    """What the channel needs of its transport (a socket.socket, or a pty adapter in tests)."""

    def settimeout(self, value: float | None, /) -> None: ...
    def recv(self, bufsize: int, /) -> bytes: ...
    def sendall(self, data: bytes, /) -> None: ...
    def close(self) -> None: ...


class AgentChannel:
    """Framed request/response over the virtio-serial port's Unix socket."""

    def __init__(self, sock: Stream, alive: Callable[[], bool]) -> None:
        self.sock = sock
        self.alive = alive
        self.next_id = 1
        self.buf = b""
        self.broken: str | None = None

    def _recv_exact(self, n: int, deadline: float, what: str) -> bytes:
        while len(self.buf) < n:
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(f"no {what} from the guest agent in time")
            if not self.alive():
                raise GuestError(f"QEMU exited while waiting for {what}")
            self.sock.settimeout(min(0.25, deadline - now))
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            if not chunk:
                raise GuestError(f"agent channel closed while waiting for {what}")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _response(self, deadline: float, what: str) -> tuple[int, int, bool, bytes, bytes]:
        magic, rid, status, timed_out, out_len, err_len = RSP_HDR.unpack(self._recv_exact(RSP_HDR.size, deadline, what))
        if magic != RSP_MAGIC:
            raise GuestError(f"bad response magic {magic!r} from the guest agent")
        out = self._recv_exact(out_len, deadline, what)
        err = self._recv_exact(err_len, deadline, what)
        return rid, status, bool(timed_out), out, err

    def wait_ready(self, timeout: float) -> str:
        rid, _, _, out, _ = self._response(time.monotonic() + timeout, "ready greeting")
        if rid != 0:
            raise GuestError(f"expected the agent's greeting, got response {rid}")
        return out.decode(errors="replace").strip()

    def run(self, cmd: str, timeout: float, stdin: bytes = b"") -> CommandResult:
        if self.broken:
            raise GuestError(f"agent channel unusable: {self.broken}")
        rid = self.next_id
        self.next_id += 1
        data = cmd.encode()
        t0 = time.monotonic()
        try:
            self.sock.settimeout(30)
            self.sock.sendall(REQ_HDR.pack(REQ_MAGIC, rid, int(timeout * 1000), len(data), len(stdin)) + data + stdin)
            got, status, timed_out, out, err = self._response(t0 + timeout + HOST_GRACE_S, f"the result of {cmd!r}")
        except (OSError, GuestError) as exc:
            self.broken = str(exc)
            raise GuestError(f"guest command {cmd!r}: {exc}") from exc
        if got != rid:
            self.broken = f"response id {got} for request {rid}"
            raise GuestError(self.broken)
        return CommandResult(cmd, status, out, err, timed_out, time.monotonic() - t0)
