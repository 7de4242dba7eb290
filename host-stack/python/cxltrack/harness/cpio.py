# SPDX-License-Identifier: Apache-2.0
"""A minimal, deterministic writer of "newc" cpio archives (the initramfs format)."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass
class Entry:
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


@dataclass
class Archive:
    """Path (no leading '/') → entry. Parent directories are added automatically."""

    entries: dict[str, Entry] = field(default_factory=dict)

    def _parents(self, path: str) -> None:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.entries:
                self.entries[d] = Entry(stat.S_IFDIR | 0o755)

    def dir(self, path: str, mode: int = 0o755) -> None:
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = Entry(stat.S_IFDIR | mode)

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = Entry(stat.S_IFREG | mode, data)

    def symlink(self, path: str, target: str) -> None:
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = Entry(stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, path: str, major: int, minor: int, mode: int = 0o600) -> None:
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = Entry(stat.S_IFCHR | mode, b"", (major, minor))

    def write(self, out: BinaryIO) -> None:
        ino = 1

        def record(name: str, e: Entry) -> None:
            nonlocal ino
            namebytes = name.encode() + b"\0"
            fields = [
                ino,
                e.mode,
                0,
                0,
                2 if stat.S_ISDIR(e.mode) else 1,
                0,
                len(e.data),
                0,
                0,
                e.rdev[0],
                e.rdev[1],
                len(namebytes),
                0,
            ]
            hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
            out.write(hdr + namebytes)
            out.write(b"\0" * (-(len(hdr) + len(namebytes)) % 4))
            out.write(e.data)
            out.write(b"\0" * (-len(e.data) % 4))
            ino += 1

        for name in sorted(self.entries):
            record(name, self.entries[name])
        record("TRAILER!!!", Entry(0))
