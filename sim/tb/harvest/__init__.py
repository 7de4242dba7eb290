# SPDX-License-Identifier: Apache-2.0
"""Benches of the harvest engine alone (HarvestBench: the command engine and the dirty/accessed bitmaps)."""
