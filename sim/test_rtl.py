# SPDX-License-Identifier: Apache-2.0
"""The RTL regression: every cocotb bench on the small configuration. Verilator runs all of
them; Icarus (`--sim icarus`) the subset in ICARUS_BENCHES (it is ~5x slower)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import design, sims
from rtlsim import SIM_DIR, rtl_dir, run_checked

BENCHES = [
    "test_vectors",
    "test_regs",
    "test_tracking",
    "test_harvest",
    "test_bat",
    "test_slots",
    "test_chunks",
    "test_events",
    "test_errors",
    "test_random",
    "test_races",
]
ICARUS_BENCHES = {"test_vectors", "test_regs", "test_errors", "test_races", "test_slots"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sim_bench" in metafunc.fixturenames:
        pairs = [(sim, b) for sim in sims(metafunc.config) for b in BENCHES if sim != "icarus" or b in ICARUS_BENCHES]
        metafunc.parametrize("sim_bench", pairs, ids=[f"{s}-{b}" for s, b in pairs])


def test_bench(sim_bench: tuple[str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, bench = sim_bench
    _, bdir = design(sim, built)
    run_checked(sim, bdir, bench)


def test_lint_wall() -> None:
    """verilator --lint-only -Wall is clean (waivers in sim/verilator.vlt cover firtool temporaries)."""
    d = rtl_dir("small")
    files = [d / f for f in (d / "filelist.f").read_text().split()]
    proc = subprocess.run(
        [
            "verilator",
            "--lint-only",
            "-Wall",
            "--top-module",
            "CxlTrackCore",
            str(SIM_DIR / "verilator.vlt"),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_python_lint() -> None:
    """ruff and mypy --strict over the benches."""
    for cmd in (
        ["ruff", "check", "--quiet", "."],
        ["ruff", "format", "--check", "--quiet", "."],
        ["mypy", "--strict", "--ignore-missing-imports", "--explicit-package-bases", "--no-error-summary", "."],
    ):
        proc = subprocess.run(
            cmd,
            cwd=SIM_DIR,
            capture_output=True,
            text=True,
            env={**os.environ, "MYPYPATH": str(SIM_DIR.parent / "host-stack" / "python")},
        )
        assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
