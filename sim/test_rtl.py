# SPDX-License-Identifier: Apache-2.0
"""The RTL regression: every cocotb bench on the small configuration (Verilator by default;
`SIM=icarus` or `--sim icarus` for Icarus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlsim import run_checked

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


@pytest.mark.parametrize("bench", BENCHES)
def test_bench(design: tuple[str, Path], bench: str) -> None:
    sim, bdir = design
    run_checked(sim, bdir, bench)
