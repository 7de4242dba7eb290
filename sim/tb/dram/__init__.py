# SPDX-License-Identifier: Apache-2.0
"""Benches of the command engine with its per-page tables (bitmaps, hotness, BAT) in device DRAM (DramHarvestBench,
config/dram1t.toml)."""
