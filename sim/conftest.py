# SPDX-License-Identifier: Apache-2.0
"""pytest side of the RTL benches: builds each (simulator, design) once per session. The benches
run under pytest-xdist (`make test-rtl`: one worker per core, each bench one single-threaded
simulator process); a file lock lets one worker build a design while the others that need it
wait, then find it up to date."""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rtlsim import Design, build_dir, build_sim, core


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--sim", action="append", default=None, help="verilator and/or icarus")
    parser.addoption("--bench", action="append", default=None, help="run only this bench (e.g. test_slot_buffer)")


def sims(config: pytest.Config) -> list[str]:
    chosen: list[str] | None = config.getoption("sim")
    return chosen or os.environ.get("SIM", "verilator").split(",")


@pytest.fixture(scope="session")
def built() -> dict[tuple[str, str], Path]:
    return {}


def design(sim: str, built: dict[tuple[str, str], Path], which: Design | None = None) -> tuple[str, Path]:
    """The simulator build of a design (default: the whole core on config/small.toml), built
    at its first use in the session."""
    d = which or core()
    key = (sim, d.name)
    if key not in built:
        lock = build_dir(sim, d).with_suffix(".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            built[key] = build_sim(sim, d)
    return sim, built[key]


__all__ = ["build_dir", "design", "sims"]
