# SPDX-License-Identifier: Apache-2.0
"""Project paths and the pinned guest versions (read from config/guest-kernel.mk)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

TOP = Path(__file__).resolve().parents[4]
PINS_FILE = TOP / "config" / "guest-kernel.mk"


def cache_dir() -> Path:
    """The project cache ($CXLTRACK_CACHE, default ~/.cache/cxltrack)."""
    env = os.environ.get("CXLTRACK_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "cxltrack"


def out_dir() -> Path:
    return TOP / "out"


def read_make_vars(path: Path) -> dict[str, str]:
    """Parse the simple `NAME := value` / `NAME = value` lines of a make fragment."""
    result: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:?=\s*(.*?)\s*$", line)
        if m:
            result[m.group(1)] = m.group(2)
    return result


@dataclass(frozen=True)
class GuestPins:
    kernel_abi: str
    kernel_flavour: str
    kernel_pkgver: str
    kernel_suite: str
    busybox_pkgver: str
    busybox_suite: str
    userland_suite: str
    userland_bins: tuple[str, ...]
    userland_pkgs: tuple[str, ...]

    @property
    def kernel_release(self) -> str:
        """`uname -r` of the guest, e.g. 6.12.95+deb12-amd64."""
        return f"{self.kernel_abi}-{self.kernel_flavour}"

    @property
    def kernel_packages(self) -> list[str]:
        """`name=version` of every kernel package to fetch."""
        names = [
            f"linux-image-{self.kernel_release}",
            f"linux-headers-{self.kernel_release}",
            f"linux-headers-{self.kernel_abi}-common",
            f"linux-kbuild-{self.kernel_abi}",
        ]
        return [f"{n}={self.kernel_pkgver}" for n in names]


def guest_pins(path: Path = PINS_FILE) -> GuestPins:
    v = read_make_vars(path)
    return GuestPins(
        kernel_abi=v["GUEST_KERNEL_ABI"],
        kernel_flavour=v["GUEST_KERNEL_FLAVOUR"],
        kernel_pkgver=v["GUEST_KERNEL_PKGVER"],
        kernel_suite=v["GUEST_KERNEL_SUITE"],
        busybox_pkgver=v["GUEST_BUSYBOX_PKGVER"],
        busybox_suite=v["GUEST_BUSYBOX_SUITE"],
        userland_suite=v["GUEST_USERLAND_SUITE"],
        userland_bins=tuple(v["GUEST_USERLAND_BINS"].split()),
        userland_pkgs=tuple(v["GUEST_USERLAND_PKGS"].split()),
    )
