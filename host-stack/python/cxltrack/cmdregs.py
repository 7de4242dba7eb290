# SPDX-License-Identifier: Apache-2.0
"""The register writes that launch a command (docs/spec.md section 5): the
one encoding shared by the model's driver, the vector replay engine and the
vector generator."""

from __future__ import annotations

from cxltrack import regs
from cxltrack.regs import Op

_OP = regs.REGISTERS["CMD_OP"]


def launch_writes(
    op: Op | int,
    args: tuple[int, ...] | list[int] = (),
    *,
    clear: bool = False,
    decay: bool = False,
    dma: bool = False,
    rsvd: int = 0,
    list_: bool = False,
) -> list[tuple[int, int]]:
    """(offset, value) pairs: CMD_ARG0..2 low/high words, then CMD_OP."""
    full = list(args) + [0] * (3 - len(args))
    out = []
    for i, a in enumerate(full):
        out.append((regs.CMD_ARG0_LO + 8 * i, a & 0xFFFFFFFF))
        out.append((regs.CMD_ARG0_HI + 8 * i, a >> 32 & 0xFFFFFFFF))
    value = (
        _OP.field("OP").put(int(op))
        | _OP.field("CLEAR").put(int(clear))
        | _OP.field("DECAY").put(int(decay))
        | _OP.field("DMA").put(int(dma))
        | _OP.field("LIST").put(int(list_))
        | _OP.field("RSVD").put(rsvd)
    )
    out.append((regs.CMD_OP, value))
    return out
