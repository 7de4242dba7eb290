# SPDX-License-Identifier: Apache-2.0
"""cocotb benches of single RTL blocks, each emitted standalone by cxltrack.Blocks (`make
rtl-blocks`); one file `test_<name>.py` per block, naming its block in `BLOCK = "<Name>"`.
sim/test_rtl.py finds them; docs/rtl-notes.md ("Block benches") says how to add one."""
