# SPDX-License-Identifier: Apache-2.0
"""Benches of the harvest engine with its bitmaps in device DRAM (DramHarvestBench, config/dram1t.toml)."""
