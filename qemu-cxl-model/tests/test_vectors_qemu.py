# SPDX-License-Identifier: Apache-2.0
"""Replay the shared vector corpus (vectors/*.jsonl) on the QEMU device over
qtest: every expected value must match (docs/vectors.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cxlt_env import QemuTarget, TrackerVM

from cxltrack.config import named
from cxltrack.vectors.format import REQUIREMENTS, Case, load_corpus
from cxltrack.vectors.replay import replay

CORPUS = Path(__file__).resolve().parents[2] / "vectors"
CASES = load_corpus(CORPUS)
# qtest issues accesses of the size asked, and the device DMAs into guest memory, which qtest
# fills and reads (QemuTarget.host_*): everything the corpus can require.
CAPABILITIES = {"sized_reads", "sized_writes", "dma", "dma_list", "dma_copy"}


def test_the_runner_knows_every_requirement() -> None:
    assert set(REQUIREMENTS) == CAPABILITIES, "a new requirement: implement it here or skip it with its reason"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_vector_case(case: Case) -> None:
    lacking = case.missing(CAPABILITIES)
    if lacking:
        pytest.skip(f"needs {', '.join(lacking)}: {REQUIREMENTS[lacking[0]]}")
    racy = any(op.op == "race" for op in case.ops)
    for schedule in (0, 1) if racy else (0,):
        with TrackerVM(named(case.config)) as t:
            asyncio.run(replay(QemuTarget(t), case, schedule))
            assert t.vm.proc.poll() is None, t.vm.stderr()
            rc = t.close()
            assert rc == 0, f"QEMU exited {rc}: {t.vm.stderr()}"
            assert t.vm.unexpected_stderr() == "", t.vm.stderr()
