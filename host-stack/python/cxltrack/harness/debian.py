# SPDX-License-Identifier: Apache-2.0
"""Download and extract Debian packages with a private APT configuration.

The system's APT configuration is never changed: lists, cache and a source
list live under <cache>/apt, and packages are extracted with `dpkg-deb -x`
into cache directories instead of being installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .pins import cache_dir

MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SUITES = ("bookworm", "bookworm-backports", "trixie")
LISTS_MAX_AGE_S = 7 * 24 * 3600


def log(msg: str) -> None:
    print(f"[guest] {msg}", file=sys.stderr, flush=True)


class PrivateApt:
    """apt-get with its own sources, lists and cache under <cache>/apt."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "apt"
        self.conf = self.root / "etc" / "apt.conf"
        self.debs = self.root / "debs"

    def _setup(self) -> None:
        etc = self.root / "etc"
        for d in (etc, self.root / "lists" / "partial", self.root / "cache" / "archives" / "partial", self.debs):
            d.mkdir(parents=True, exist_ok=True)
        sources = "".join(f"deb [signed-by={KEYRING}] {MIRROR} {s} main\n" for s in SUITES)
        (etc / "sources.list").write_text(sources)
        status = self.root / "status"
        status.touch()
        self.conf.write_text(
            f'Dir::Etc::sourcelist "{etc / "sources.list"}";\n'
            'Dir::Etc::sourceparts "/dev/null";\n'
            'Dir::Etc::preferencesparts "/dev/null";\n'
            f'Dir::State::lists "{self.root / "lists"}";\n'
            f'Dir::State::status "{status}";\n'
            f'Dir::Cache "{self.root / "cache"}";\n'
            'APT::Sandbox::User "root";\n'
            'Acquire::Languages "none";\n'
        )

    def _run(self, args: list[str], cwd: Path | None = None) -> None:
        env = dict(os.environ, APT_CONFIG=str(self.conf), DEBIAN_FRONTEND="noninteractive")
        subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)

    def update(self, force: bool = False) -> None:
        self._setup()
        stamp = self.root / "lists" / ".updated"
        if not force and stamp.exists() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE_S:
            return
        log(f"apt-get update (private lists under {self.root})")
        self._run(["apt-get", "update", "-qq"])
        stamp.touch()

    def candidate(self, name: str, suite: str) -> str:
        """`name=version` of package `name` in `suite`."""
        self.update()
        env = dict(os.environ, APT_CONFIG=str(self.conf))
        out = subprocess.run(
            ["apt-cache", "show", f"{name}/{suite}"], env=env, check=True, capture_output=True, text=True
        ).stdout
        for line in out.splitlines():
            if line.startswith("Version: "):
                return f"{name}={line.split()[1]}"
        raise RuntimeError(f"no {name} in {suite}")

    def download(self, pkgs: list[str]) -> list[Path]:
        """Download `name=version` packages (kept under <cache>/apt/debs); return the .deb paths."""
        wanted: dict[str, Path] = {}
        for spec in pkgs:
            name, _, ver = spec.partition("=")
            # apt-get download names files name_version_arch.deb with ':' escaped as %3a.
            found = sorted(self.debs.glob(f"{name}_{ver.replace(':', '%3a')}_*.deb"))
            if found:
                wanted[spec] = found[0]
        missing = [p for p in pkgs if p not in wanted]
        if missing:
            self.update()
            log("downloading " + " ".join(missing))
            try:
                self._run(["apt-get", "download", "-q", *missing], cwd=self.debs)
            except subprocess.CalledProcessError:
                self.update(force=True)
                self._run(["apt-get", "download", "-q", *missing], cwd=self.debs)
            for spec in missing:
                name, _, ver = spec.partition("=")
                found = sorted(self.debs.glob(f"{name}_{ver.replace(':', '%3a')}_*.deb"))
                if not found:
                    raise RuntimeError(f"apt-get download did not produce {spec}")
                wanted[spec] = found[0]
        return [wanted[p] for p in pkgs]


def extract(debs: list[Path], dest: Path) -> Path:
    """Extract packages into `dest` (atomically: built aside, then renamed); skip if present."""
    ready = dest / ".extracted"
    if ready.exists():
        return dest
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for deb in debs:
        log(f"extracting {deb.name}")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
    (tmp / ".extracted").write_text("".join(f"{d.name}\n" for d in debs))
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest
