# SPDX-License-Identifier: Apache-2.0
"""Host side of the guest agent protocol (see host-stack/guest-tools/cxltrack-agent.c).

Protocol 2; all integers little-endian u32:

    request : "CXQ2" id timeout_ms cmd_len stdin_len | cmd      (cmd_len <= CHUNK)
    ack     : "CXA2" id next_seq received                       (guest -> host)
    chunk   : "CXD2" id seq len | data                          (len <= CHUNK)
    response: "CXR2" id status timed_out out_len err_len | stdout | stderr

stdin is sent one chunk at a time: the agent acks the request when it is ready for
stdin (next_seq 0) and every chunk once it has read it and stored it; the host sends
the next chunk only after that ack. At most one chunk is ever in flight, so the
virtio-serial port's receive buffers never fill and the transfer never waits on
QEMU's chardev flow control; a stall is reported as the missing ack of a named chunk
within ACK_TIMEOUT_S rather than as a request that never answers. Where an ack is
due the agent may send the response instead (it could not take the request, e.g.
the stdin file could not be written); the host then sends no more of it.
The agent greets with a response of id 0.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

PROTOCOL = 2
REQ_MAGIC = b"CXQ2"
ACK_MAGIC = b"CXA2"
DAT_MAGIC = b"CXD2"
RSP_MAGIC = b"CXR2"
# Magics of protocol 1 (one unbounded write of header, command and stdin; no acks).
OLD_MAGICS = (b"CXQ1", b"CXR1")
REQ_HDR = struct.Struct("<4sIIII")
DAT_HDR = struct.Struct("<4sIII")
ACK_BODY = struct.Struct("<III")  # after the magic
RSP_BODY = struct.Struct("<IiIII")  # after the magic
# Bytes of stdin per chunk, and the longest command; the agent's CHUNK_MAX must be at least this.
CHUNK = 32 << 10
MAX_CMD = CHUNK
# How long the host waits for each ack (the agent only reads a chunk and writes it to a file).
ACK_TIMEOUT_S = 30.0
# The host waits this much longer than the guest-side timeout before it gives up on the VM.
HOST_GRACE_S = 15.0
# While a wait lasts longer than this, the channel's watchdog (if any) checks the guest this often.
WATCH_EVERY_S = 5.0
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


@dataclass
class _Ack:
    rid: int
    next_seq: int
    received: int


@dataclass
class _Response:
    rid: int
    status: int
    timed_out: bool
    out: bytes
    err: bytes


def _describe(frame: _Ack | _Response) -> str:
    if isinstance(frame, _Ack):
        return f"ack (request {frame.rid}, next chunk {frame.next_seq}, {frame.received} bytes received)"
    return f"response to request {frame.rid} (status {frame.status})"


class AgentChannel:
    """Framed request/response over the virtio-serial port's Unix socket."""

    def __init__(self, sock: Stream, alive: Callable[[], bool], watchdog: Callable[[], None] | None = None) -> None:
        """`alive`: False once QEMU has exited. `watchdog`: called every WATCH_EVERY_S of a long
        wait; raises GuestError when the guest can no longer answer (the wait then ends early)."""
        self.sock = sock
        self.alive = alive
        self.watchdog = watchdog
        self.next_id = 1
        self.buf = b""
        self.broken: str | None = None
        self._next_watch = 0.0
        # After a migration the guest's init may restart the agent (its port's host side went
        # away and came back), and the new agent greets again: skip such greetings.
        self.greeting_may_repeat = False

    def _recv_exact(self, n: int, deadline: float, what: str, limit: float) -> bytes:
        while len(self.buf) < n:
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(f"no {what} from the guest agent within {limit:g} s")
            if not self.alive():
                raise GuestError(f"QEMU exited while waiting for {what}")
            if self.watchdog is not None and now >= self._next_watch:
                self._next_watch = now + WATCH_EVERY_S
                self.watchdog()
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

    def _frame(self, limit: float, what: str) -> _Ack | _Response:
        """The agent's next frame (an ack or a response), waiting at most `limit` seconds."""
        deadline = time.monotonic() + limit
        self._next_watch = time.monotonic() + WATCH_EVERY_S
        magic = self._recv_exact(4, deadline, what, limit)
        if magic == ACK_MAGIC:
            return _Ack(*ACK_BODY.unpack(self._recv_exact(ACK_BODY.size, deadline, what, limit)))
        if magic == RSP_MAGIC:
            rid, status, timed_out, out_len, err_len = RSP_BODY.unpack(
                self._recv_exact(RSP_BODY.size, deadline, what, limit)
            )
            out = self._recv_exact(out_len, deadline, what, limit)
            err = self._recv_exact(err_len, deadline, what, limit)
            return _Response(rid, status, bool(timed_out), out, err)
        if magic in OLD_MAGICS:
            raise GuestError(
                f"the guest agent speaks an older protocol (magic {magic!r}), the host protocol {PROTOCOL}: "
                "rebuild the guest image (make guest)"
            )
        raise GuestError(f"bad frame magic {magic!r} from the guest agent while waiting for {what}")

    def _send(self, data: bytes, what: str) -> None:
        # Never more than one chunk: the agent has asked for it, so this does not block for long.
        self.sock.settimeout(ACK_TIMEOUT_S)
        try:
            self.sock.sendall(data)
        except TimeoutError:
            raise TimeoutError(f"could not send {what} to the guest agent within {ACK_TIMEOUT_S:g} s") from None

    def wait_ready(self, timeout: float) -> str:
        frame = self._frame(timeout, "ready greeting")
        if not isinstance(frame, _Response) or frame.rid != 0:
            raise GuestError(f"expected the agent's greeting, got {_describe(frame)}")
        return frame.out.decode(errors="replace").strip()

    def _send_stdin(self, rid: int, stdin: bytes) -> _Response | None:
        """Send stdin chunk by chunk, each after the agent's ack of the previous one. Returns
        None once the agent has acked all of it, or the response it sent instead of an ack."""
        total = len(stdin)
        chunks = -(-total // CHUNK)
        seq = 0
        while True:
            if seq == 0:
                what = f"go-ahead for stdin ({total} bytes in {chunks} chunk(s) of up to {CHUNK})"
            else:
                lo, hi = (seq - 1) * CHUNK, min(seq * CHUNK, total) - 1
                what = f"ack of stdin chunk {seq} of {chunks} (bytes {lo}..{hi} of {total})"
            frame = self._frame(ACK_TIMEOUT_S, what)
            if isinstance(frame, _Response):
                return frame
            if (frame.rid, frame.next_seq, frame.received) != (rid, seq, min(seq * CHUNK, total)):
                raise GuestError(f"unexpected {_describe(frame)} while waiting for the {what} of request {rid}")
            if seq == chunks:
                return None
            data = stdin[seq * CHUNK : (seq + 1) * CHUNK]
            self._send(DAT_HDR.pack(DAT_MAGIC, rid, seq, len(data)) + data, f"stdin chunk {seq + 1} of {chunks}")
            seq += 1

    def run(self, cmd: str, timeout: float, stdin: bytes = b"") -> CommandResult:
        if self.broken:
            raise GuestError(f"agent channel unusable: {self.broken}")
        data = cmd.encode()
        if len(data) > MAX_CMD:
            raise ValueError(f"command of {len(data)} bytes is longer than the agent takes ({MAX_CMD}); use stdin")
        rid = self.next_id
        self.next_id += 1
        t0 = time.monotonic()
        try:
            self._send(REQ_HDR.pack(REQ_MAGIC, rid, int(timeout * 1000), len(data), len(stdin)) + data, "the request")
            res = self._send_stdin(rid, stdin) if stdin else None
            if res is None:
                # The guest-side timeout starts now: stdin is all in the guest.
                limit = timeout + HOST_GRACE_S
                what = f"result (guest-side timeout {timeout:g} s + {HOST_GRACE_S:g} s grace)"
                res_frame = self._frame(limit, what)
                while self.greeting_may_repeat and isinstance(res_frame, _Response) and res_frame.rid == 0:
                    res_frame = self._frame(limit, what)
                if not isinstance(res_frame, _Response):
                    raise GuestError(f"unexpected {_describe(res_frame)} while waiting for the result of request {rid}")
                res = res_frame
            if res.rid != rid:
                raise GuestError(f"response id {res.rid} for request {rid}")
        except (OSError, GuestError) as exc:
            self.broken = str(exc)
            raise GuestError(f"guest command {cmd!r}: {exc}") from exc
        return CommandResult(cmd, res.status, res.out, res.err, res.timed_out, time.monotonic() - t0)
