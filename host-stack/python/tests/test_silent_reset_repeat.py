# SPDX-License-Identifier: Apache-2.0
"""A VM workload run spoiled by a silent L2 reset (a triple fault: the platform) is run again
with a fresh VM, at most RESET_RUNS times in all; a reset after a kernel report, any other
failure, and the last run's failure are the caller's at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cxltrack.harness.agent import GuestError
from cxltrack.harness.nested import RESET_RUNS, VmReset, repeat_on_silent_reset, silent_vm_reset


def runs(*failures: Exception | None) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    @repeat_on_silent_reset("workload")
    def run() -> str:
        calls.append(len(calls) + 1)
        exc = failures[len(calls) - 1]
        if exc is not None:
            raise exc
        return f"done in run {len(calls)}"

    return calls, run


def reset_in_cleanup() -> Exception:
    """What a workload raises when its VM's shutdown (in a finally) found the silent reset
    after the workload's own command failed: the VmReset, its context the command's error."""
    try:
        try:
            raise GuestError("agent went away")
        finally:
            raise VmReset("L2 VM vm0 was reset while in use with nothing on its console")
    except VmReset as exc:
        return exc


def test_silent_resets_are_repeated_with_a_fresh_vm(capsys: pytest.CaptureFixture[str]) -> None:
    wrapped = GuestError("poll failed")
    wrapped.__cause__ = VmReset("reset mid-command")
    calls, run = runs(reset_in_cleanup(), wrapped, None)
    assert run() == "done in run 3" and calls == [1, 2, 3]
    out = capsys.readouterr().out
    assert "during run 1" in out and "during run 2" in out and "fresh VM" in out


def test_the_last_run_a_spoken_reset_and_other_errors_are_the_callers() -> None:
    calls, run = runs(*[VmReset("silent")] * RESET_RUNS)
    with pytest.raises(VmReset):
        run()
    assert len(calls) == RESET_RUNS
    oops = VmReset("reset after an oops", ["BUG: unable to handle page fault"])
    assert silent_vm_reset(oops) is None
    calls, run = runs(oops, None)
    with pytest.raises(VmReset):
        run()
    assert calls == [1]
    calls, run = runs(GuestError("wrong bytes"), None)
    with pytest.raises(GuestError, match="wrong bytes"):
        run()
    assert calls == [1]
