# SPDX-License-Identifier: Apache-2.0
"""Dynamically linked Debian tools for the initramfs guest (ndctl's `cxl`, `daxctl`).

The packages named in config/guest-kernel.mk are resolved to their versions in
the given suite once, downloaded with the private APT config and extracted into
<cache>/guest-userland/<key>; then only the files the binaries need (their ELF
DT_NEEDED closure and the dynamic loader) go into the image.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from .debian import PrivateApt, extract, log
from .pins import GuestPins, cache_dir

LIBDIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib64", "lib64")


def _sections(elf: bytes) -> dict[str, tuple[int, int]]:
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 file")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    out: dict[str, tuple[int, int]] = {}
    for name, _t, _f, _a, off, size in hdrs:
        end = elf.index(b"\0", stroff + name)
        out[elf[stroff + name : end].decode()] = (off, size)
    return out


def elf_needed(elf: bytes) -> list[str]:
    """The DT_NEEDED sonames of an ELF64 executable or library."""
    secs = _sections(elf)
    if ".dynamic" not in secs:
        return []
    dyn_off, dyn_size = secs[".dynamic"]
    str_off, _ = secs[".dynstr"]
    needed = []
    for i in range(0, dyn_size, 16):
        tag, val = struct.unpack_from("<qQ", elf, dyn_off + i)
        if tag == 0:
            break
        if tag == 1:
            end = elf.index(b"\0", str_off + val)
            needed.append(elf[str_off + val : end].decode())
    return needed


def elf_interp(elf: bytes) -> str | None:
    secs = _sections(elf)
    if ".interp" not in secs:
        return None
    off, size = secs[".interp"]
    return elf[off : off + size].rstrip(b"\0").decode()


def ensure_userland(pins: GuestPins) -> Path:
    key = hashlib.sha256(repr((pins.userland_suite, pins.userland_pkgs)).encode()).hexdigest()[:16]
    dest = cache_dir() / "guest-userland" / key
    if not (dest / ".extracted").exists():
        apt = PrivateApt()
        specs = [apt.candidate(p, pins.userland_suite) for p in pins.userland_pkgs]
        extract(apt.download(specs), dest)
    return dest


def userland_files(root: Path, bins: tuple[str, ...]) -> dict[str, bytes]:
    """Image path → content for `bins` and everything they load, from an extracted tree."""
    files: dict[str, bytes] = {}
    todo: list[tuple[str, bytes]] = []
    for b in bins:
        data = (root / b.lstrip("/")).resolve().read_bytes()
        files[b.lstrip("/")] = data
        todo.append((b, data))
    seen: set[str] = set()
    while todo:
        name, data = todo.pop()
        interp = elf_interp(data)
        if interp and interp.lstrip("/") not in files:
            files[interp.lstrip("/")] = _find(root, Path(interp).name, name).read_bytes()
        for so in elf_needed(data):
            if so in seen:
                continue
            seen.add(so)
            lib = _find(root, so, name).read_bytes()
            files[f"usr/lib/x86_64-linux-gnu/{so}"] = lib
            todo.append((so, lib))
    return files


def _find(root: Path, soname: str, needed_by: str) -> Path:
    for d in LIBDIRS:
        p = root / d / soname
        if p.exists():
            return p.resolve()
    raise FileNotFoundError(
        f"{soname} (needed by {needed_by}) is in none of the userland packages; add its package to GUEST_USERLAND_PKGS"
    )


def userland_key(root: Path) -> str:
    return (root / ".extracted").read_text()


def describe(root: Path) -> None:
    log(f"userland from {root}: {userland_key(root).split()}")
