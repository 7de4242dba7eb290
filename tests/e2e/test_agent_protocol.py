# SPDX-License-Identifier: Apache-2.0
"""The agent's framing, exit codes, stdin and timeouts, fast: the static agent runs on a
host pty (raw mode) instead of a guest's virtio-serial port. No VM needed."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxltrack.harness.agent import AgentChannel, GuestError
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


@pytest.fixture
def channel(tmp_path: Path) -> Iterator[AgentChannel]:
    if not AGENT.exists():
        pytest.fail(f"{AGENT} missing: run `make guest-tools`", pytrace=False)
    master, slave = pty.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    env = dict(os.environ, CXLTRACK_AGENT_TMP=str(tmp_path))
    proc = subprocess.Popen([str(AGENT), os.ttyname(slave)], env=env, stdin=subprocess.DEVNULL)
    chan = AgentChannel(PtyStream(master), lambda: proc.poll() is None)
    try:
        assert chan.wait_ready(10).startswith("ready ")
        # Only now: with no slave fd open at all, reading the master gives EIO.
        os.close(slave)
        slave = -1
        yield chan
    finally:
        if slave >= 0:
            os.close(slave)
        proc.kill()
        proc.wait()
        chan.sock.close()


def test_status_stdout_stderr_are_separate(channel: AgentChannel) -> None:
    res = channel.run("printf 'a\\nb'; printf err >&2; exit 42", timeout=10)
    assert (res.status, res.stdout, res.stderr, res.timed_out) == (42, b"a\nb", b"err", False)
    assert channel.run("kill -TERM $$", timeout=10).status == 128 + 15


def test_binary_stdin_and_large_output(channel: AgentChannel) -> None:
    blob = os.urandom(300_000)
    assert channel.run("cat", timeout=20, stdin=blob).stdout == blob
    assert len(channel.run("head -c 2000000 /dev/zero", timeout=20).stdout) == 2_000_000


def test_timeout_kills_process_group_and_channel_survives(channel: AgentChannel) -> None:
    res = channel.run("echo before; sleep 20 & sleep 20; echo never", timeout=0.5)
    assert res.timed_out and res.stdout == b"before\n"
    assert channel.run("echo after", timeout=10).stdout == b"after\n"


def test_dead_agent_is_reported_not_hung(channel: AgentChannel) -> None:
    with pytest.raises(GuestError):
        channel.run("kill -KILL $PPID; sleep 5", timeout=2)
    with pytest.raises(GuestError, match="unusable"):
        channel.run("true", timeout=2)
