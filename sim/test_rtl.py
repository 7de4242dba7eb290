# SPDX-License-Identifier: Apache-2.0
"""The RTL regression: every cocotb bench on the small configuration: the benches of the whole
core (sim/tb/test_*.py, listed in BENCHES) and the block benches (sim/tb/blocks/test_*.py, found
by their `BLOCK = "<Name>"` line), each on every simulator given with `--sim` (`make test-rtl`:
Verilator and Icarus, at the same iteration counts; Icarus is ~2-3x slower on these benches)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import design, sims
from rtlsim import BLOCKS_DIR, SIM_DIR, block, board, rtl_dir, run_checked

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
BLOCK_BENCH_DIR = SIM_DIR / "tb" / "blocks"
BLOCK_CONFIG = "small"
BOARD_BENCH_DIR = SIM_DIR / "tb" / "board"
# The board wrapper's benches run on Verilator only: cocotbext-pcie's Python model dominates their
# time, and the core inside is the one the core benches run on both simulators.
BOARD_SIMS = ("verilator",)


def block_benches() -> dict[str, str]:
    """bench module -> block it tests, from the `BLOCK = "<Name>"` assignment of each
    sim/tb/blocks/test_*.py (read without importing cocotb)."""
    found: dict[str, str] = {}
    for path in sorted(BLOCK_BENCH_DIR.glob("test_*.py")):
        names = [
            node.value.value
            for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "BLOCK" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ]
        assert len(names) == 1, f'{path}: needs exactly one `BLOCK = "<Name>"` line'
        found[path.stem] = names[0]
    return found


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sim_bench" in metafunc.fixturenames:
        pairs = [(sim, b) for sim in sims(metafunc.config) for b in BENCHES]
        metafunc.parametrize("sim_bench", pairs, ids=[f"{s}-{b}" for s, b in pairs])
    if "sim_block_bench" in metafunc.fixturenames:
        blocks = block_benches()
        triples = [(sim, b, blocks[b]) for sim in sims(metafunc.config) for b in blocks]
        metafunc.parametrize("sim_block_bench", triples, ids=[f"{s}-{blk}-{b}" for s, b, blk in triples])
    if "sim_board_bench" in metafunc.fixturenames:
        benches = sorted(p.stem for p in BOARD_BENCH_DIR.glob("test_*.py"))
        pairs = [(sim, b) for sim in sims(metafunc.config) if sim in BOARD_SIMS for b in benches]
        metafunc.parametrize("sim_board_bench", pairs, ids=[f"{s}-board-{b}" for s, b in pairs])


def test_bench(sim_bench: tuple[str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, bench = sim_bench
    _, bdir = design(sim, built)
    run_checked(sim, bdir, bench)


def test_block_bench(sim_block_bench: tuple[str, str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, bench, name = sim_block_bench
    d = block(name, BLOCK_CONFIG)
    _, bdir = design(sim, built, d)
    run_checked(sim, bdir, bench, design=d)


def test_board_bench(sim_board_bench: tuple[str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, bench = sim_board_bench
    d = board()
    _, bdir = design(sim, built, d)
    run_checked(sim, bdir, bench, design=d)


def test_every_block_has_a_bench() -> None:
    """The blocks cxltrack.Blocks emitted (`make rtl-blocks`) and the block benches match one to one."""
    emitted = {json.loads(p.read_text())["block"] for p in BLOCKS_DIR.glob(f"*-{BLOCK_CONFIG}/block.json")}
    benched = set(block_benches().values())
    assert emitted, f"no block under {BLOCKS_DIR}: run `make rtl-blocks`"
    assert emitted <= benched, f"blocks without a bench in sim/tb/blocks/: {sorted(emitted - benched)}"
    assert benched <= emitted, f"benches of blocks that cxltrack.Blocks did not emit: {sorted(benched - emitted)}"


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


def test_board_lint_wall() -> None:
    """verilator --lint-only -Wall on the board wrapper with the core inside (waivers: sim/verilator.vlt,
    sim/verilator-board.vlt)."""
    d = board().src_dir
    files = [d / f for f in (d / "filelist.f").read_text().split()]
    proc = subprocess.run(
        [
            "verilator",
            "--lint-only",
            "-Wall",
            "--top-module",
            "CxlTrackBoard",
            str(SIM_DIR / "verilator.vlt"),
            str(SIM_DIR / "verilator-board.vlt"),
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
