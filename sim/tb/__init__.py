# SPDX-License-Identifier: Apache-2.0
"""cocotb benches of the cxltrack RTL (run through sim/test_rtl.py)."""
