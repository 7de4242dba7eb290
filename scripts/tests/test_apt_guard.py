# SPDX-License-Identifier: Apache-2.0
"""The set-up scripts never install a package through a private APT configuration.

A private APT_CONFIG (trixie lists, an empty status file) that leaks into
`apt-get install` replaces the machine's libc with another release's. These
tests run the real scripts with stub `apt-get`/`dpkg-query`/`sudo` on PATH that
log every call with the APT_CONFIG it saw, so nothing is installed or fetched.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
APT_ENSURE = TOP / "scripts" / "apt-ensure"
BUILD_QEMU = TOP / "qemu-cxl-model" / "build-qemu"

# apt-get stub: one log line per call, "<APT_CONFIG or -> | <args>"; for the
# download commands it creates the files build-qemu checks for afterwards.
APT_GET_STUB = r"""#!/bin/bash
echo "${APT_CONFIG:--} | $*" >>"$STUB_LOG"
case " $* " in
*" source "*)
	for a in "$@"; do
		case "$a" in qemu=*) v=${a#qemu=}; v=${v#*:}; : >"qemu_$v.dsc" ;; esac
	done ;;
*" download "*)
	for a in "$@"; do
		case "$a" in *=*) : >"${a%%=*}_stub_all.deb" ;; esac
	done ;;
esac
exit 0
"""
# Every package looks missing, so apt-ensure always reaches `apt-get install`.
DPKG_QUERY_STUB = "#!/bin/sh\nexit 1\n"
SUDO_STUB = '#!/bin/sh\nexec "$@"\n'


def _stubs(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "stub-bin"
    bin_dir.mkdir()
    for name, text in (("apt-get", APT_GET_STUB), ("dpkg-query", DPKG_QUERY_STUB), ("sudo", SUDO_STUB)):
        f = bin_dir / name
        f.write_text(text)
        f.chmod(f.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = {k: v for k, v in os.environ.items() if k != "APT_CONFIG"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    env["STUB_LOG"] = str(tmp / "apt.log")
    env["CXLTRACK_CACHE"] = str(tmp / "cache")
    return env


def _calls(tmp: Path) -> list[tuple[str, list[str]]]:
    log = tmp / "apt.log"
    if not log.exists():
        return []
    calls = []
    for line in log.read_text().splitlines():
        conf, _, args = line.partition(" | ")
        calls.append((conf, args.split()))
    return calls


def test_apt_ensure_refuses_a_private_apt_config(tmp_path: Path) -> None:
    env = _stubs(tmp_path)
    env["APT_CONFIG"] = str(tmp_path / "private-apt.conf")
    r = subprocess.run([str(APT_ENSURE), "hello"], env=env, capture_output=True, text=True)
    assert r.returncode != 0, "apt-ensure ran with APT_CONFIG set"
    assert "refusing" in r.stderr and "APT_CONFIG" in r.stderr, r.stderr
    assert "called by" in r.stderr, "the refusal must name the caller"
    assert _calls(tmp_path) == [], f"apt-get was called: {_calls(tmp_path)}"


def test_apt_ensure_installs_through_the_system_config(tmp_path: Path) -> None:
    """The stubs themselves work: without APT_CONFIG the install is reached."""
    env = _stubs(tmp_path)
    r = subprocess.run([str(APT_ENSURE), "hello"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    installs = [c for c in _calls(tmp_path) if "install" in c[1]]
    assert installs and installs[0][0] == "-" and "hello" in installs[0][1], _calls(tmp_path)


@pytest.mark.skipif(not BUILD_QEMU.exists(), reason="no qemu-cxl-model/build-qemu")
def test_build_qemu_apt_steps_never_install_with_the_private_config(tmp_path: Path) -> None:
    env = _stubs(tmp_path)
    r = subprocess.run([str(BUILD_QEMU), "--fetch"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    calls = _calls(tmp_path)
    installs = [c for c in calls if "install" in c[1]]
    downloads = [c for c in calls if {"source", "download"} & set(c[1])]
    assert installs, f"build-qemu installed no host tools: {calls}"
    assert downloads, f"build-qemu downloaded nothing: {calls}"
    for conf, args in installs:
        assert conf == "-", f"apt-get {' '.join(args)} ran with APT_CONFIG={conf}"
    private = str(tmp_path / "cache")
    for conf, args in downloads:
        assert conf.startswith(private), f"apt-get {' '.join(args)} did not use the private config ({conf})"
    # The host tools come first: nothing is fetched before the machine can unpack it.
    assert calls.index(installs[0]) < calls.index(downloads[0]), calls
