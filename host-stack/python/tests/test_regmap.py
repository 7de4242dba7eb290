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
