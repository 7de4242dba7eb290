# SPDX-License-Identifier: Apache-2.0
"""The exported series holds exactly what the build compiles.

qemu-cxl-model/src/ holds the files the series adds; patches/ only change
upstream files; export-series folds the sources into the patch inject.list
names. These tests check the fold, and that a source the list forgot, or a
list entry naming no patch, stops the export instead of being left out.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
MODEL = TOP / "qemu-cxl-model"


def _copy_model(tmp: Path) -> Path:
    """A scratch copy of the repo parts export-series reads (it is run from there)."""
    root = tmp / "repo"
    shutil.copytree(MODEL, root / "qemu-cxl-model", ignore=shutil.ignore_patterns("tests", "__pycache__"))
    for line in (MODEL / "inject.list").read_text().splitlines():
        words = line.split()
        if words and not words[0].startswith("#") and not words[0].startswith("qemu-cxl-model/"):
            (root / words[0]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(TOP / words[0], root / words[0])  # files from elsewhere in the repo
    shutil.copytree(TOP / "scripts", root / "scripts", ignore=shutil.ignore_patterns("tests", "__pycache__"))
    shutil.copy(TOP / "requirements.txt", root / "requirements.txt")
    return root


def _export(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "qemu-cxl-model" / "export-series"), str(out)], capture_output=True, text=True, timeout=600
    )


def _added_file(patch: Path, path: str) -> str:
    """The content a patch adds as the new file `path`."""
    lines = patch.read_text().splitlines()
    start = lines.index(f"+++ b/{path}") + 2  # skip the @@ line
    body = []
    for line in lines[start:]:
        if line.startswith("diff --git") or line == "-- ":
            break
        assert line.startswith("+"), line
        body.append(line[1:])
    return "\n".join(body) + "\n"


def test_exported_series_adds_every_source(tmp_path: Path) -> None:
    r = _export(_copy_model(tmp_path), tmp_path / "series")
    assert r.returncode == 0, r.stderr
    patches = sorted((tmp_path / "series").glob("*.patch"))
    committed = sorted(p.name for p in (MODEL / "patches").glob("*.patch"))
    assert [p.name for p in patches] == committed
    for line in (MODEL / "inject.list").read_text().splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#") or len(fields) < 3:
            continue
        src, dst, num = fields
        (patch,) = [p for p in patches if p.name.startswith(num + "-")]
        assert _added_file(patch, dst) == (TOP / src).read_text(), f"{dst} in {patch.name} differs from {src}"


def test_unlisted_source_stops_the_export(tmp_path: Path) -> None:
    root = _copy_model(tmp_path)
    (root / "qemu-cxl-model" / "src" / "hw" / "mem" / "forgotten.c").write_text("/* not in inject.list */\n")
    r = _export(root, tmp_path / "series")
    assert r.returncode != 0 and "forgotten.c is not listed" in r.stderr, r.stderr


def test_entry_naming_no_patch_stops_the_export(tmp_path: Path) -> None:
    root = _copy_model(tmp_path)
    lst = root / "qemu-cxl-model" / "inject.list"
    lst.write_text(lst.read_text().replace("hw/mem/cxltrack.c 0002", "hw/mem/cxltrack.c 0099"))
    r = _export(root, tmp_path / "series")
    assert r.returncode != 0 and "no patch 0099" in r.stderr, r.stderr
