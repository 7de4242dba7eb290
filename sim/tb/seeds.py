# SPDX-License-Identifier: Apache-2.0
"""The one rule that names a test's own seed variable: the benches read it (env.seed_from_env) and the
runner sets it to rerun a failed run with the seeds it drew (rtlsim.run_checked)."""

from __future__ import annotations


def seed_env_name(name: str) -> str:
    """The variable that gives one test's seed: CXLTRACK_SEED_RACE_SUMMARY_DMA for race.summary.dma."""
    return "CXLTRACK_SEED_" + "".join(c if c.isalnum() else "_" for c in name).upper()
