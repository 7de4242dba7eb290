# SPDX-License-Identifier: Apache-2.0
"""A minimal QMP client (JSON over a Unix socket) for shutting QEMU down and
for tests that poke the machine."""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any


class QmpError(RuntimeError):
    pass


class Qmp:
    def __init__(self, sock: socket.socket, timeout: float = 10.0) -> None:
        self.sock = sock
        self.sock.settimeout(timeout)
        self.buf = b""
        self.events: list[dict[str, Any]] = []
        greeting = self._read()
        if "QMP" not in greeting:
            raise QmpError(f"unexpected QMP greeting {greeting}")
        self.command("qmp_capabilities")

    def _read(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise QmpError("QMP connection closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        msg: dict[str, Any] = json.loads(line)
        return msg

    def command(self, name: str, **args: Any) -> Any:
        req: dict[str, Any] = {"execute": name}
        if args:
            req["arguments"] = args
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        while True:
            msg = self._read()
            if "event" in msg:
                self.events.append(msg)
                continue
            if "error" in msg:
                raise QmpError(f"{name}: {msg['error']}")
            return msg.get("return")

    def hmp(self, line: str) -> str:
        """A human monitor command's text output."""
        return str(self.command("human-monitor-command", **{"command-line": line}))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
