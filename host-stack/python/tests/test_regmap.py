# SPDX-License-Identifier: Apache-2.0
"""The register map's generated forms are fresh and consistent."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cxltrack import regs

TOP = Path(__file__).resolve().parents[3]


def test_generated_files_are_fresh() -> None:
    gen = TOP / "regmap" / "regmap_gen.py"
    proc = subprocess.run([sys.executable, str(gen), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_registers_do_not_overlap_and_fields_fit() -> None:
    offsets = [r.offset for r in regs.REGISTERS.values()]
    assert len(offsets) == len(set(offsets))
    assert all(o % 4 == 0 and o < regs.RESULT for o in offsets)
    for r in regs.REGISTERS.values():
        used = 0
        for f in r.fields:
            assert f.lsb + f.width <= 32, (r.name, f.name)
            assert not used & f.mask, (r.name, f.name)
            used |= f.mask
    assert regs.SLOT + regs.SLOT_COUNT * regs.SLOT_STRIDE == regs.BAR_SIZE
    assert regs.RESULT + regs.RESULT_SIZE <= regs.SLOT


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_c_header_compiles_standalone_and_agrees(tmp_path: Path) -> None:
    src = tmp_path / "t.c"
    checks = "\n".join(f'_Static_assert(CXLT_{r.name} == {r.offset:#x}, "{r.name}");' for r in regs.REGISTERS.values())
    checks += f'\n_Static_assert(CXLT_OP_SLOT_MERGE == {int(regs.Op.SLOT_MERGE)}, "op");'
    checks += f'\n_Static_assert(CXLT_SLOT_N(3) == {regs.SLOT + 3 * regs.SLOT_STRIDE:#x}, "slot");'
    src.write_text(f'#include "cxltrack_regs.h"\n{checks}\nint main(void) {{ return 0; }}\n')
    inc = TOP / "regmap" / "generated"
    subprocess.run(
        ["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I", str(inc), "-o", str(tmp_path / "t"), str(src)],
        check=True,
    )


def _gen_with(tmp_path: Path, old: str, new: str) -> subprocess.CompletedProcess[str]:
    rdl = (TOP / "regmap" / "cxltrack.rdl").read_text()
    assert old in rdl, old
    path = tmp_path / "cxltrack.rdl"
    path.write_text(rdl.replace(old, new))
    gen = TOP / "regmap" / "regmap_gen.py"
    return subprocess.run([sys.executable, str(gen), "--check", "--rdl", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("harvest_max_bitmap_pages = 32768;", "harvest_max_bitmap_pages = 32769;", "HARVEST_MAX_BITMAP_PAGES"),
        ("harvest_max_hotness_pages = 4096;", "harvest_max_hotness_pages = 4097;", "HARVEST_MAX_HOTNESS_PAGES"),
        ("cfg_slots = cxlt_range_s'{min: 1, max: 16};", "cfg_slots = cxlt_range_s'{min: 1, max: 17};", "cfg_slots"),
        ("cfg_hot_bits = cxlt_range_s'{min: 1, max: 8};", "cfg_hot_bits = cxlt_range_s'{min: 9, max: 8};", "min 9"),
    ],
)
def test_a_limit_that_contradicts_the_map_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    """A limit beyond its register field or window (or an empty range) stops the generator with a message."""
    proc = _gen_with(tmp_path, old, new)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_a_changed_limit_makes_every_generated_form_stale(tmp_path: Path) -> None:
    """`make check-generated` sees a limit changed in the RDL in every form (C, Python, Scala, Markdown)."""
    proc = _gen_with(tmp_path, "max_owner = 0xFFFF;", "max_owner = 0x7FFF;")
    assert proc.returncode == 1
    for rel in ("cxltrack_regs.h", "regs.py", "Regs.scala", "registers.md"):
        assert f"{rel} is stale" in proc.stderr, rel


def test_limits_and_ranges_agree_across_forms() -> None:
    """The Python form's limits are the ones the model and configuration loader use."""
    from cxltrack import config
    from cxltrack.model import commands, slots

    assert commands.MAX_OWNER == regs.MAX_OWNER
    assert commands.MAX_BITMAP == regs.HARVEST_MAX_BITMAP_PAGES == 8 * regs.RESULT_SIZE
    assert commands.MAX_HOTNESS == regs.HARVEST_MAX_HOTNESS_PAGES == regs.RESULT_SIZE
    assert slots.SLOT_BYTES == regs.SLOT_SIZE
    assert config._RANGES is regs.CONFIG_RANGES
    header = (TOP / "regmap" / "generated" / "cxltrack_regs.h").read_text()
    for name, (lo, hi) in regs.CONFIG_RANGES.items():
        assert f"#define CXLT_CFG_{name.upper()}_MIN {lo:#x}ULL" in header
        assert f"#define CXLT_CFG_{name.upper()}_MAX {hi:#x}ULL" in header
    assert f"#define CXLT_MAX_OWNER {regs.MAX_OWNER:#x}" in header
