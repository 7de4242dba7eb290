# SPDX-License-Identifier: Apache-2.0
"""Benches of the whole core with its per-page tables in device DRAM (CxlTrackCore, config/dram1t.toml): the core's
bench environment (tb.env: the reference model in lock step) on a 1 TiB device, with the tables' carve-out in a sparse
memory on d_axi."""
