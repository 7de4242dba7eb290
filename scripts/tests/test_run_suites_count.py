# SPDX-License-Identifier: Apache-2.0
"""scripts/run-suites counts each test once from its JUnit XML (and keeps why each failed): a test
pytest-rerunfailures ran again (an empty <testcase> per earlier run), a failed call with an error in
its teardown (two entries), and the properties and captured output that are not results."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

TOP = Path(__file__).resolve().parents[2]

XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="t" name="plain"><properties><property name="boot" value="3.1"/></properties></testcase>
  <testcase classname="t" name="rerun_then_pass"><system-out>first run</system-out></testcase>
  <testcase classname="t" name="rerun_then_pass"/>
  <testcase classname="t" name="rerun_then_fail"/>
  <testcase classname="t" name="rerun_then_fail"><failure message="HostWedged: again"/></testcase>
  <testcase classname="t" name="fail_and_teardown"><failure message="AssertionError"/></testcase>
  <testcase classname="t" name="fail_and_teardown"><error message="teardown"/></testcase>
  <testcase classname="t" name="skip"><skipped message="why"/></testcase>
</testsuite></testsuites>
"""


def run_suites() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("run_suites", str(TOP / "scripts" / "run-suites"))
    spec = importlib.util.spec_from_loader("run_suites", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_each_test_counts_once_and_reruns_are_counted(tmp_path: Path) -> None:
    xml = tmp_path / "suite.xml"
    xml.write_text(XML)
    passed, failed, skipped, reruns, names = run_suites().count(xml)
    assert (passed, failed, skipped, reruns) == (2, 2, 1, 2)
    # each failed name carries the head of its first failure's message, indented under it
    assert names == ["t::rerun_then_fail\n      HostWedged: again", "t::fail_and_teardown\n      AssertionError"]


def test_a_failure_reason_is_its_message_head(tmp_path: Path) -> None:
    """A long multi-line message (an RTL bench's, with its cocotb tests and seeds) keeps its first lines, cut."""
    message = "AssertionError: test_races: 1 of 6 failed\n\n  race_summary: round 3\n" + "x" * 500 + "\n" * 3
    message += "\n".join(f"  SEED race.{i} {i}" for i in range(20))
    lines = run_suites().reason(message).splitlines()
    assert lines[0] == "      AssertionError: test_races: 1 of 6 failed"
    assert lines[1] == "        race_summary: round 3"
    assert len(lines) == 8 and len(lines[2]) == 6 + 240
