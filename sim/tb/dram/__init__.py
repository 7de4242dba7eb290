# SPDX-License-Identifier: Apache-2.0
"""Benches of the harvest engine with its bitmaps and hotness counters in device DRAM (DramHarvestBench,
config/dram1t.toml)."""
