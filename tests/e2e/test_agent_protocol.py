# SPDX-License-Identifier: Apache-2.0
"""The agent's framing, exit codes, stdin and timeouts, fast: the static agent runs on a
host pty (raw mode) instead of a guest's virtio-serial port. No VM needed.
(tests/e2e/test_agent_stdin.py pushes large stdin through a real virtio-serial port.)"""

from __future__ import annotations

import hashlib
import os
import pty
import resource
import select
import signal
import subprocess
import time
import tty
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cxltrack.harness import agent
from cxltrack.harness.agent import CHUNK, DAT_HDR, REQ_HDR, AgentChannel, GuestError
from cxltrack.harness.pins import out_dir

AGENT = out_dir() / "guest" / "bin" / "cxltrack-agent"


class PtyStream:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.timeout: float | None = None

    def settimeout(self, value: float | None, /) -> None:
        self.timeout = value

    def recv(self, bufsize: int, /) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], self.timeout)
        if not ready:
            raise TimeoutError
        try:
            return os.read(self.fd, bufsize)
        except OSError:  # EIO: the agent closed the pty
            return b""

    def sendall(self, data: bytes, /) -> None:
        while data:
            data = data[os.write(self.fd, data) :]

    def close(self) -> None:
        os.close(self.fd)


class InFlightMeter(PtyStream):
    """Counts the bytes the host has sent since it last heard from the agent."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.unanswered = 0
        self.most_unanswered = 0

    def recv(self, bufsize: int, /) -> bytes:
        data = super().recv(bufsize)
        if data:
            self.unanswered = 0
        return data

    def sendall(self, data: bytes, /) -> None:
        self.unanswered += len(data)
        self.most_unanswered = max(self.most_unanswered, self.unanswered)
        super().sendall(data)


def start_agent(tmp: Path, preexec: Callable[[], None] | None = None) -> tuple[AgentChannel, Callable[[], None]]:
    if not AGENT.exists():
        pytest.fail(f"{AGENT} missing: run `make guest-tools`", pytrace=False)
    master, slave = pty.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    env = dict(os.environ, CXLTRACK_AGENT_TMP=str(tmp))
    proc = subprocess.Popen([str(AGENT), os.ttyname(slave)], env=env, stdin=subprocess.DEVNULL, preexec_fn=preexec)
    chan = AgentChannel(InFlightMeter(master), lambda: proc.poll() is None)

    def stop() -> None:
        proc.kill()
        proc.wait()
        chan.sock.close()

    try:
        assert chan.wait_ready(10).startswith("ready ")
    except BaseException:
        os.close(slave)
        stop()
        raise
    # Only now: with no slave fd open at all, reading the master gives EIO.
    os.close(slave)
    return chan, stop


@pytest.fixture
def channel(tmp_path: Path) -> Iterator[AgentChannel]:
    chan, stop = start_agent(tmp_path)
    try:
        yield chan
    finally:
        stop()


def test_status_stdout_stderr_are_separate(channel: AgentChannel) -> None:
    res = channel.run("printf 'a\\nb'; printf err >&2; exit 42", timeout=10)
    assert (res.status, res.stdout, res.stderr, res.timed_out) == (42, b"a\nb", b"err", False)
    assert channel.run("kill -TERM $$", timeout=10).status == 128 + 15


def test_binary_stdin_and_large_output(channel: AgentChannel) -> None:
    blob = os.urandom(300_000)
    assert channel.run("cat", timeout=20, stdin=blob).stdout == blob
    assert len(channel.run("head -c 2000000 /dev/zero", timeout=20).stdout) == 2_000_000


def test_commands_get_the_default_sigpipe(channel: AgentChannel) -> None:
    """The agent ignores SIGPIPE itself; its commands must not inherit that (an ignored signal
    stays ignored across exec), or a writer into a pipe whose reader quit loops on EPIPE and
    the command hangs (busybox's `yes | dd count=1` did)."""
    status = channel.run("grep SigIgn /proc/self/status", timeout=10).stdout.split()
    assert status[0] == b"SigIgn:", status
    assert not int(status[1], 16) & 1 << (signal.SIGPIPE - 1), status


def test_timeout_kills_process_group_and_channel_survives(channel: AgentChannel) -> None:
    res = channel.run("echo before; sleep 20 & sleep 20; echo never", timeout=0.5)
    assert res.timed_out and res.stdout == b"before\n"
    assert channel.run("echo after", timeout=10).stdout == b"after\n"


def test_dead_agent_is_reported_not_hung(channel: AgentChannel) -> None:
    with pytest.raises(GuestError):
        channel.run("kill -KILL $PPID; sleep 5", timeout=2)
    with pytest.raises(GuestError, match="unusable"):
        channel.run("true", timeout=2)


def test_large_stdin_arrives_exactly_and_in_acked_chunks(channel: AgentChannel) -> None:
    """The host never has more than one chunk (plus its header) unanswered on the wire; protocol 1
    sent header, command and all of stdin in one write, relying on the transport's flow control."""
    meter = channel.sock
    assert isinstance(meter, InFlightMeter)
    for size in (0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 5_000_003):
        blob = os.urandom(size)
        res = channel.run("sha256sum", timeout=30, stdin=blob)
        assert res.out.split()[0] == hashlib.sha256(blob).hexdigest(), f"{size} bytes of stdin"
    assert channel.run("cat", timeout=30, stdin=blob).stdout == blob
    assert meter.most_unanswered <= max(DAT_HDR.size + CHUNK, REQ_HDR.size + len("sha256sum"))


def test_agent_that_cannot_store_stdin_answers_instead_of_acking(tmp_path: Path) -> None:
    """A write error in the middle of stdin: the agent answers (status 126, reason on stderr)
    instead of acking, the host sends no more chunks, and the channel stays in step."""
    limit = 5 * CHUNK + 100

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    chan, stop = start_agent(tmp_path, small_files)
    try:
        res = chan.run("cat", timeout=10, stdin=os.urandom(20 * CHUNK))
        assert res.status == 126 and b"cannot write the stdin file" in res.stderr, res.describe()
        assert res.stdout == b""
        assert chan.run("wc -c", timeout=10, stdin=b"x" * (limit - 1)).out.split() == [str(limit - 1)]
    finally:
        stop()


class StallingAgent:
    """A scripted agent that acks `acks` frames, then goes silent."""

    def __init__(self, acks: int) -> None:
        self.acks = acks
        self.sent: list[bytes] = []
        self.pending = b""
        self.timeout: float | None = None

    def settimeout(self, value: float | None, /) -> None:
        self.timeout = value

    def sendall(self, data: bytes, /) -> None:
        self.sent.append(data)
        rid = int.from_bytes(data[4:8], "little")
        if len(self.sent) <= self.acks:
            received = 0 if len(self.sent) == 1 else (len(self.sent) - 1) * CHUNK
            self.pending += agent.ACK_MAGIC + agent.ACK_BODY.pack(rid, len(self.sent) - 1, received)

    def recv(self, bufsize: int, /) -> bytes:
        if not self.pending:
            raise TimeoutError
        data, self.pending = self.pending[:bufsize], self.pending[bufsize:]
        return data

    def close(self) -> None:
        pass


def test_stalled_stdin_is_reported_with_the_chunk_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent, "ACK_TIMEOUT_S", 0.3)
    stream = StallingAgent(acks=3)  # the go-ahead and the acks of chunks 1 and 2
    chan = AgentChannel(stream, lambda: True)
    with pytest.raises(GuestError) as err:
        chan.run("cat", timeout=5, stdin=bytes(10 * CHUNK))
    msg = str(err.value)
    assert f"no ack of stdin chunk 3 of 10 (bytes {2 * CHUNK}..{3 * CHUNK - 1} of {10 * CHUNK})" in msg, msg
    assert msg.startswith("guest command 'cat': ") and msg.endswith("from the guest agent within 0.3 s"), msg
    assert len(stream.sent) == 4  # request, chunks 1-3: nothing more after the missing ack
    with pytest.raises(GuestError, match="unusable"):
        chan.run("true", timeout=1)


def test_watchdog_ends_a_wait_for_a_guest_that_cannot_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent, "WATCH_EVERY_S", 0.1)
    calls: list[float] = []

    def watchdog() -> None:
        calls.append(time.monotonic())
        if len(calls) == 3:
            raise GuestError("vCPU 0 wedged")

    chan = AgentChannel(StallingAgent(acks=0), lambda: True, watchdog)
    t0 = time.monotonic()
    with pytest.raises(GuestError, match="vCPU 0 wedged"):
        chan.run("sleep 100", timeout=100)
    assert time.monotonic() - t0 < 5 and len(calls) == 3


class RegreetingAgent(StallingAgent):
    """A scripted agent restarted by the guest's init just as a request came: the new agent's
    greeting (response id 0) arrives first, then the answer to the request."""

    def __init__(self) -> None:
        super().__init__(acks=0)

    def sendall(self, data: bytes, /) -> None:
        self.sent.append(data)
        rid = int.from_bytes(data[4:8], "little")
        for r, out in ((0, b"ready 1.00\n"), (rid, b"answer\n")):
            self.pending += agent.RSP_MAGIC + agent.RSP_BODY.pack(r, 0, 0, len(out), 0) + out


def test_a_repeated_greeting_is_skipped_only_where_it_may_come() -> None:
    """After a migration the guest's agent may restart and greet again: a channel told so
    (NestedVm.reattach) skips the greeting; any other channel reports it as the protocol
    error it is."""
    strict = AgentChannel(RegreetingAgent(), lambda: True)
    with pytest.raises(GuestError, match="response id 0 for request 1"):
        strict.run("echo answer", timeout=1)
    tolerant = AgentChannel(RegreetingAgent(), lambda: True)
    tolerant.greeting_may_repeat = True
    assert tolerant.run("echo answer", timeout=1).stdout == b"answer\n"
