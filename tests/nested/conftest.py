# SPDX-License-Identifier: Apache-2.0
"""Nested-virtualisation tests: the emulated CXL machine (L0, the project's QEMU with the
cxltrack device) boots a hypervisor host (L1) whose VMs (L2) keep a NUMA node on the device.
Fixtures come from cxltrack.harness.pytest_plugin (`boot_host`, `host`, `nested_vm`)."""

from __future__ import annotations

import pytest

pytest_plugins = ["cxltrack.harness.pytest_plugin"]


# (test, what, seconds) of every L2 VM a test timed, printed at the end of the run.
_L2_BOOTS: list[tuple[str, str, float]] = []
# The result line of every migration, printed at the end of the run (attempts=N > 1: a VM was
# reset during the first runs, which were done again; docs/harness.md).
_MIGRATIONS: list[str] = []
# The swap tier's measured lines (test_nested_swap_tier.py), printed at the end of the run.
_SWAP_TIER: list[str] = []


@pytest.fixture(scope="session")
def swap_tier_lines() -> list[str]:
    return _SWAP_TIER


@pytest.fixture(scope="session")
def migrations() -> list[str]:
    return _MIGRATIONS


@pytest.fixture(scope="session")
def l2_boots() -> list[tuple[str, str, float]]:
    return _L2_BOOTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for test, what, secs in _L2_BOOTS:
        terminalreporter.write_line(f"nested boot-to-ready: {test} {what}: {secs:.1f} s")
    for line in _MIGRATIONS:
        terminalreporter.write_line(f"nested {line}")
    for line in _SWAP_TIER:
        terminalreporter.write_line(f"nested swap tier: {line}")
