# SPDX-License-Identifier: Apache-2.0
"""The RTL regression: every cocotb bench on the small configuration, found by one rule: the benches of
the whole core are sim/tb/test_*.py, the block benches sim/tb/blocks/test_*.py (each names its block
in a `BLOCK = "<Name>"` line), the board wrapper's sim/tb/board/test_*.py (Verilator only), the
harvest engine's sim/tb/harvest/test_*.py (HarvestBench, default configuration), the harvest engine with its
per-page tables in device DRAM, sim/tb/dram/test_*.py (DramHarvestBench, config/dram1t.toml, Verilator only), and
the whole core at that size, sim/tb/dramcore/test_*.py (CxlTrackCore, config/dram1t.toml, Verilator only).
Each runs on every simulator given with `--sim` (`make test-rtl`: Verilator and Icarus, at the same iteration counts;
Icarus is ~2-3x slower on these benches); `--bench NAME` (`make test-rtl BENCH=NAME`) runs one
bench, core, block or board."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import design, sims
from rtlsim import BLOCKS_DIR, SIM_DIR, block, board, dram, dram_core, harvest, rtl_dir, run_checked

CORE_BENCH_DIR = SIM_DIR / "tb"
BLOCK_BENCH_DIR = CORE_BENCH_DIR / "blocks"
BLOCK_CONFIG = "small"
BOARD_BENCH_DIR = SIM_DIR / "tb" / "board"
# The board wrapper's benches run on Verilator only: cocotbext-pcie's Python model dominates their
# time, and the core inside is the one the core benches run on both simulators.
BOARD_SIMS = ("verilator",)
# The harvest engine alone (HarvestBench) at the default configuration: sim/tb/harvest/test_*.py, on every simulator.
HARVEST_BENCH_DIR = SIM_DIR / "tb" / "harvest"
HARVEST_DESIGNS = ("default", "default-packed")  # the core's form of the tables, and the packed one (bench-harvest)
# The command engine with its per-page tables in device DRAM at 1 TiB (DramHarvestBench): sim/tb/dram/test_*.py, on
# Verilator only (its engine runs on a latch-gated clock; the engine itself is the one the harvest benches run on both)
DRAM_BENCH_DIR = SIM_DIR / "tb" / "dram"
DRAM_SIMS = ("verilator",)
# The whole core at 1 TiB with its tables in DRAM: sim/tb/dramcore/test_*.py, Verilator only (the same gated clock)
DRAM_CORE_BENCH_DIR = SIM_DIR / "tb" / "dramcore"


def dram_benches() -> list[str]:
    """The benches of the DRAM-table harvest top: every sim/tb/dram/test_*.py."""
    return [p.stem for p in sorted(DRAM_BENCH_DIR.glob("test_*.py"))]


def dram_core_benches() -> list[str]:
    """The benches of the whole core at 1 TiB with its tables in DRAM: every sim/tb/dramcore/test_*.py."""
    return [p.stem for p in sorted(DRAM_CORE_BENCH_DIR.glob("test_*.py"))]


def core_benches() -> list[str]:
    """The benches of the whole core: every sim/tb/test_*.py."""
    return [p.stem for p in sorted(CORE_BENCH_DIR.glob("test_*.py"))]


def harvest_benches() -> list[str]:
    """The benches of the harvest engine alone: every sim/tb/harvest/test_*.py."""
    return [p.stem for p in sorted(HARVEST_BENCH_DIR.glob("test_*.py"))]


def board_benches() -> list[str]:
    """The benches of the board wrapper: every sim/tb/board/test_*.py."""
    return [p.stem for p in sorted(BOARD_BENCH_DIR.glob("test_*.py"))]


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


def chosen(config: pytest.Config, benches: list[str]) -> list[str]:
    """The benches `--bench` names (all when it is not given); an unknown name is an error."""
    names: list[str] | None = config.getoption("bench")
    if not names:
        return benches
    known = (
        set(core_benches())
        | set(block_benches())
        | set(board_benches())
        | set(harvest_benches())
        | set(dram_benches())
        | set(dram_core_benches())
    )
    unknown = [n for n in names if n not in known]
    if unknown:
        raise pytest.UsageError(f"--bench {', '.join(unknown)}: no such bench (known: {', '.join(sorted(known))})")
    return [b for b in benches if b in names]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sim_bench" in metafunc.fixturenames:
        pairs = [(sim, b) for sim in sims(metafunc.config) for b in chosen(metafunc.config, core_benches())]
        metafunc.parametrize("sim_bench", pairs, ids=[f"{s}-{b}" for s, b in pairs])
    if "sim_block_bench" in metafunc.fixturenames:
        blocks = block_benches()
        names = chosen(metafunc.config, list(blocks))
        triples = [(sim, b, blocks[b]) for sim in sims(metafunc.config) for b in names]
        metafunc.parametrize("sim_block_bench", triples, ids=[f"{s}-{blk}-{b}" for s, b, blk in triples])
    if "sim_harvest_bench" in metafunc.fixturenames:
        hb = [
            (sim, d, b)
            for sim in sims(metafunc.config)
            for d in HARVEST_DESIGNS
            for b in chosen(metafunc.config, harvest_benches())
        ]
        metafunc.parametrize("sim_harvest_bench", hb, ids=[f"{s}-harvest-{d}-{b}" for s, d, b in hb])
    if "sim_dram_bench" in metafunc.fixturenames:
        benches = chosen(metafunc.config, dram_benches())
        pairs = [(sim, b) for sim in sims(metafunc.config) if sim in DRAM_SIMS for b in benches]
        metafunc.parametrize("sim_dram_bench", pairs, ids=[f"{s}-dram-{b}" for s, b in pairs])
    if "sim_dram_core_bench" in metafunc.fixturenames:
        benches = chosen(metafunc.config, dram_core_benches())
        pairs = [(sim, b) for sim in sims(metafunc.config) if sim in DRAM_SIMS for b in benches]
        metafunc.parametrize("sim_dram_core_bench", pairs, ids=[f"{s}-dramcore-{b}" for s, b in pairs])
    if "sim_board_bench" in metafunc.fixturenames:
        benches = chosen(metafunc.config, board_benches())
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


def test_harvest_bench(sim_harvest_bench: tuple[str, str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, which, bench = sim_harvest_bench
    d = harvest(which)
    _, bdir = design(sim, built, d)
    run_checked(sim, bdir, bench, design=d)


def test_dram_bench(sim_dram_bench: tuple[str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, bench = sim_dram_bench
    d = dram()
    _, bdir = design(sim, built, d)
    run_checked(sim, bdir, bench, design=d)


def test_dram_core_bench(sim_dram_core_bench: tuple[str, str], built: dict[tuple[str, str], Path]) -> None:
    sim, bench = sim_dram_core_bench
    d = dram_core()
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
