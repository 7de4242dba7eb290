# SPDX-License-Identifier: Apache-2.0
"""A migration run that the nested platform spoiled (a VM reset, a migrated VM that does not
answer) is run again, at most RESET_ATTEMPTS times in all; any other failure, and the last
run's, is the caller's."""

from __future__ import annotations

import pytest

from cxltrack.harness.agent import GuestError
from cxltrack.harness.migration import RESET_ATTEMPTS, MigrationResult, _repeat_on_vm_reset
from cxltrack.harness.nested import VmHung, VmReset


def runs(*failures: Exception | None) -> tuple[list[int], object]:
    calls: list[int] = []

    def run() -> MigrationResult:
        calls.append(len(calls) + 1)
        exc = failures[len(calls) - 1]
        if exc is not None:
            raise exc
        return MigrationResult("stock", 1, 1, [], 1, 0, 0, 2, 1, 1)

    return calls, _repeat_on_vm_reset(run)


def test_reset_and_hung_runs_are_repeated() -> None:
    calls, run = runs(VmReset("reset"), VmHung("no answer"), None)
    r = run()  # type: ignore[operator]
    assert r.attempts == 3 and calls == [1, 2, 3]


def test_the_last_attempt_fails_and_other_errors_are_not_repeated() -> None:
    calls, run = runs(*[VmHung("no answer")] * RESET_ATTEMPTS)
    with pytest.raises(VmHung):
        run()  # type: ignore[operator]
    assert len(calls) == RESET_ATTEMPTS
    calls, run = runs(GuestError("compare failed"), None)
    with pytest.raises(GuestError):
        run()  # type: ignore[operator]
    assert calls == [1]
