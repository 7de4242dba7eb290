# SPDX-License-Identifier: Apache-2.0
"""The pinned Debian guest kernel: fetched with a private APT config and
extracted (not installed) into the cache, with its headers made usable for
out-of-tree modules (`make -C <headers> M=...`)."""

from __future__ import annotations

import lzma
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from .debian import PrivateApt, extract, log
from .pins import GuestPins, cache_dir, guest_pins


@dataclass(frozen=True)
class KernelTree:
    root: Path
    release: str

    @property
    def vmlinuz(self) -> Path:
        return self.root / "boot" / f"vmlinuz-{self.release}"

    @property
    def config(self) -> Path:
        return self.root / "boot" / f"config-{self.release}"

    @property
    def modules(self) -> Path:
        return self.root / "lib" / "modules" / self.release

    @property
    def headers(self) -> Path:
        """The directory for `make -C <headers> M=<dir> modules`."""
        return self.root / "usr" / "src" / f"linux-headers-{self.release}"


def kernel_dir(pins: GuestPins) -> Path:
    safe = re.sub(r"[^A-Za-z0-9.+_-]", "_", pins.kernel_pkgver)
    return cache_dir() / "guest-kernel" / f"{pins.kernel_release}_{safe}"


def _fix_headers(tree: KernelTree, pins: GuestPins) -> None:
    """Point the amd64 headers' Makefile and the build/source links at the extracted tree."""
    mk = tree.headers / "Makefile"
    text = mk.read_text()
    common = tree.root / "usr" / "src" / f"linux-headers-{pins.kernel_abi}-common"
    fixed = re.sub(
        r"^include /usr/src/(\S+)$", lambda m: f"include {tree.root}/usr/src/{m.group(1)}", text, flags=re.MULTILINE
    )
    if fixed != text:
        mk.write_text(fixed)
    for name, target in (("build", tree.headers), ("source", common)):
        link = tree.modules / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


# A kernel tree built elsewhere, laid out like an extracted one with its release in a file
# `release` (driver/scripts/build-debug-kernel: the debug build for one run of the driver suites).
KERNEL_TREE_ENV = "CXLTRACK_GUEST_KERNEL"


def ensure_kernel(pins: GuestPins | None = None) -> KernelTree:
    other = os.environ.get(KERNEL_TREE_ENV)
    if other:
        root = Path(other)
        try:
            return KernelTree(root, (root / "release").read_text().strip())
        except OSError as exc:
            raise FileNotFoundError(f"{KERNEL_TREE_ENV}={other}: not a built kernel tree ({exc})") from exc
    pins = pins or guest_pins()
    dest = kernel_dir(pins)
    tree = KernelTree(dest, pins.kernel_release)
    if (dest / ".extracted").exists():
        return tree
    apt = PrivateApt()
    debs = apt.download(pins.kernel_packages)
    extract(debs, dest)
    _fix_headers(tree, pins)
    log(f"kernel {pins.kernel_release} ready in {dest}")
    return tree


# --- module metadata -------------------------------------------------------


def read_module(path: Path) -> bytes:
    """The bytes of a kernel module, decompressing .ko.xz."""
    data = path.read_bytes()
    return lzma.decompress(data) if path.name.endswith(".xz") else data


def modinfo(elf: bytes) -> dict[str, list[str]]:
    """The key=value pairs of a module's .modinfo ELF section."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 object")
    (e_shoff,) = struct.unpack_from("<Q", elf, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def section(i: int) -> tuple[int, int, int]:
        name, _type, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", elf, e_shoff + i * e_shentsize)
        return name, off, size

    _, stroff, _ = section(e_shstrndx)
    info: dict[str, list[str]] = {}
    for i in range(e_shnum):
        name, off, size = section(i)
        end = elf.index(b"\0", stroff + name)
        if elf[stroff + name : end] != b".modinfo":
            continue
        for item in elf[off : off + size].split(b"\0"):
            if b"=" in item:
                k, _, v = item.decode(errors="replace").partition("=")
                info.setdefault(k, []).append(v)
    return info


def module_index(modules: Path) -> dict[str, Path]:
    """Module name (with '_') → file, for every module below lib/modules/<release>/kernel."""
    index: dict[str, Path] = {}
    for p in (modules / "kernel").rglob("*.ko*"):
        name = p.name.split(".ko")[0].replace("-", "_")
        index[name] = p
    return index


def resolve_modules(modules: Path, wanted: list[str]) -> dict[str, bytes]:
    """The named modules plus everything they depend on (from each module's `depends=`),
    decompressed; built-in modules are skipped. Key: path relative to lib/modules/<release>."""
    builtin = {
        Path(line).name.split(".ko")[0].replace("-", "_") for line in (modules / "modules.builtin").read_text().split()
    }
    index = module_index(modules)
    out: dict[str, bytes] = {}
    todo = [w.replace("-", "_") for w in wanted]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in builtin:
            continue
        if name not in index:
            raise KeyError(f"guest kernel has no module {name!r}")
        path = index[name]
        elf = read_module(path)
        rel = str(path.relative_to(modules))
        rel = rel.removesuffix(".xz")
        out[rel] = elf
        for dep in modinfo(elf).get("depends", []):
            # `depends=` spells names as the files do (dm_writecache depends on "dm-mod").
            todo += [d.replace("-", "_") for d in dep.split(",") if d]
    return out
