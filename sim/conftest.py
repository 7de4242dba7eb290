# SPDX-License-Identifier: Apache-2.0
"""pytest side of the RTL benches: builds each (simulator, config) once per session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rtlsim import build_dir, build_sim


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--sim", action="append", default=None, help="verilator and/or icarus")


def sims(config: pytest.Config) -> list[str]:
    chosen: list[str] | None = config.getoption("sim")
    return chosen or os.environ.get("SIM", "verilator").split(",")


@pytest.fixture(scope="session")
def built() -> dict[tuple[str, str], Path]:
    return {}


def design(sim: str, built: dict[tuple[str, str], Path]) -> tuple[str, Path]:
    key = (sim, "small")
    if key not in built:
        built[key] = build_sim(sim, "small")
    return sim, built[key]


__all__ = ["build_dir", "design", "sims"]
