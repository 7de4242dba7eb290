# SPDX-License-Identifier: Apache-2.0
"""The switches `make test-driver-debug` uses: a kernel tree built elsewhere
(CXLTRACK_GUEST_KERNEL) and longer guest timeouts (CXLTRACK_TIMEOUT_SCALE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cxltrack.harness.kernel import KERNEL_TREE_ENV, ensure_kernel
from cxltrack.harness.vm import timeout_scale


def test_a_built_kernel_tree_replaces_the_pinned_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "release").write_text("6.12.95-cxlt-debug\n")
    monkeypatch.setenv(KERNEL_TREE_ENV, str(tmp_path))
    tree = ensure_kernel()
    assert tree.release == "6.12.95-cxlt-debug"
    assert tree.vmlinuz == tmp_path / "boot" / "vmlinuz-6.12.95-cxlt-debug"
    assert tree.headers == tmp_path / "usr" / "src" / "linux-headers-6.12.95-cxlt-debug"


def test_a_tree_without_a_release_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KERNEL_TREE_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="not a built kernel tree"):
        ensure_kernel()


@pytest.mark.parametrize(("raw", "want"), [("1", 1.0), ("3", 3.0), ("2.5", 2.5)])
def test_timeout_scale(raw: str, want: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXLTRACK_TIMEOUT_SCALE", raw)
    assert timeout_scale() == want


@pytest.mark.parametrize("raw", ["0.5", "fast", "nan", "-2"])
def test_a_bad_timeout_scale_is_refused(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXLTRACK_TIMEOUT_SCALE", raw)
    with pytest.raises(ValueError, match="a number >= 1"):
        timeout_scale()


def test_no_scale_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CXLTRACK_TIMEOUT_SCALE", raising=False)
    assert timeout_scale() == 1.0
