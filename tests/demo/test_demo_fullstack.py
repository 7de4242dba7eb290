# SPDX-License-Identifier: Apache-2.0
"""`make demo`'s full-stack scenario, small: it must finish with every data
check passed, a clean guest kernel log, and leave its JSON and PNG."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cxltrack.demo import fullstack


def test_fullstack_demo_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qemu = os.environ.get("CXLTRACK_QEMU")
    image = os.environ.get("CXLTRACK_GUEST_IMAGE")
    assert qemu and image, "run through `make test-demo`, which builds QEMU and the guest image"
    rc = fullstack.main(["--qemu", qemu, "--image", image, "--pages", "256", "--rounds", "4", "--out", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    result = json.loads((tmp_path / "demo.json").read_text())
    pc = result["precopy"]
    assert pc["mismatched_pages"] == 0 and pc["rounds"][0] == 256 and pc["sent"] == sum(pc["rounds"])
    assert pc["sent"] < pc["naive"] and pc["wp_faults"] == 0
    # the baseline, a write-protect dirty log in the same run: exact too, one fault per page
    # it reports after round 0 (at least)
    wp = result["precopy_wp"]
    assert wp["mismatched_pages"] == 0 and wp["rounds"][0] == 256 and wp["sent"] == sum(wp["rounds"])
    assert wp["wp_faults"] >= sum(wp["rounds"][1:]) > 0
    sm = result["swap_mapper"]
    assert sm["wrong_answers"] == 0 and sm["discarded_clean"] + sm["needed_swap_write"] == sm["associated"]
    assert sm["needed_swap_write"] == sm["rewritten"]
    assert result["false_reads"]["wrong_bytes"] == 0 and result["false_reads"]["full_slot_event"] is True
    assert (tmp_path / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "saved by the dirty log" in out.out
