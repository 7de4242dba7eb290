# SPDX-License-Identifier: Apache-2.0
"""A migration's printed line is its result again (MigrationResult.parse), and
`bench-migrate --from-log` rebuilds the results and the last line from such lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cxltrack.experiments import migrate
from cxltrack.harness.migration import MigrationResult


def result(mode: str, wp: int, sent: int, equal: int = 81920) -> MigrationResult:
    return MigrationResult(
        dirty_log=mode,
        pages_compared=81920,
        pages_equal=equal,
        differ=[],
        pages_sent=sent,
        zero_pages=53000,
        bytes_sent=137000000,
        rounds=5,
        total_ms=50000,
        downtime_ms=60,
        kvm={"pf_fast": 450, "syncs": 118},
        client={"harvests": 5, "dirty-pages": 4096} if mode == "qemu" else {},
        wp_faults=wp,
        attempts=2,
    )


def test_a_line_parses_back_to_its_result() -> None:
    for r in (result("stock", 4096, 33440), result("qemu", 0, 33411)):
        back = MigrationResult.parse(r.line())
        assert back == r and back.line() == r.line()
    with pytest.raises(ValueError, match="not a migration line"):
        MigrationResult.parse("harvest cost per GiB logged: commands=8.0")


def test_from_log_rebuilds_the_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "bench.log"
    runs = [result("stock", 4096, 33440), result("device", 0, 33467), result("qemu", 0, 33411)]
    log.write_text(
        "harvest cost per GiB logged (dirty, clear): commands=8.0\n" + "".join(r.line() + "\n" for r in runs)
    )
    assert migrate.main(["--from-log", str(log), "--out", str(tmp_path / "out")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "wp_faults_stock=4096 wp_faults_device=0 pages_ratio=1.001 ok=245760", last
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["dirty_log"] for r in doc["runs"]] == ["stock", "device", "qemu"]
    assert (tmp_path / "out" / "migrate.png").stat().st_size > 0
    # A copy that differed makes the bench fail.
    log.write_text("".join(r.line() + "\n" for r in [*runs[:2], result("qemu", 0, 33411, equal=80000)]))
    assert migrate.main(["--from-log", str(log), "--out", str(tmp_path / "out2")]) == 1


def test_from_log_needs_every_dirty_log(tmp_path: Path) -> None:
    log = tmp_path / "bench.log"
    log.write_text(result("stock", 4096, 33440).line() + "\n")
    with pytest.raises(SystemExit):
        migrate.main(["--from-log", str(log), "--out", str(tmp_path / "out")])
