# SPDX-License-Identifier: Apache-2.0
"""The model demo runs, and its own end-to-end checks catch a lost dirty bit."""

from __future__ import annotations

import pytest

from cxltrack.demo import model_scenario
from cxltrack.model.tables import Bitmap


def test_demo_runs_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    assert model_scenario.main(["--pages", "512", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "destination == source after final round   yes" in out or "yes (all pages compared)" in out
    assert "0 wrong" in out


def test_demo_detects_a_lost_dirty_bit(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = Bitmap.take_word

    def lossy(self: Bitmap, word: int, clear: bool) -> int:
        value = real(self, word, clear)
        return value & ~1  # drop page 0 of every word: a broken harvest

    monkeypatch.setattr(Bitmap, "take_word", lossy)
    assert model_scenario.main(["--pages", "512", "--seed", "3"]) == 1
    assert "lost dirty bit" in capsys.readouterr().err


def test_demo_rejects_bad_arguments() -> None:
    with pytest.raises(SystemExit) as exc:
        model_scenario.main(["--pages", "100"])
    assert exc.value.code == 2
