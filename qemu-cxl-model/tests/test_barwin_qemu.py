# SPDX-License-Identifier: Apache-2.0
"""The PCIe-attached flavour of the device (cxltrack-mem as function 0, docs/spec.md section
10) over qtest: identity and BAR of function 0, tracking through the BAR window, decode errors
that complete normally, the refusals, and the whole shared vector corpus through the BAR."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
import qemu_util
from cxlt_barwin_env import MEM_SIZE, BarTrackerVM, barwin_args
from cxlt_env import QemuTarget

from cxltrack import regs
from cxltrack.config import named
from cxltrack.vectors.format import Case, load_corpus
from cxltrack.vectors.replay import replay

CASES = load_corpus(Path(__file__).resolve().parents[2] / "vectors")


def test_function0_identity_and_bar() -> None:
    with BarTrackerVM(named("small")) as t:
        cls = t.cfg_read(1, 0, 0, 0x08) >> 8
        assert cls == 0x050000, hex(cls)
        size, flags = t.bar_size(0, 0)
        assert (size, flags) == (MEM_SIZE, 0xC), (hex(size), flags)  # 64-bit, prefetchable
        assert t.reg_read(regs.ID) == regs.REGISTERS["ID"].reset
        assert t.close() == 0


def test_tracking_through_the_bar() -> None:
    cfg = named("small")
    with BarTrackerVM(cfg) as t:
        page = 17
        assert t.mem_write(page * cfg.page_size + 8, (0x1122334455667788).to_bytes(8, "little")) == "okay"
        assert t.mem_read(page * cfg.page_size + 8, 8) == ("okay", 0x1122334455667788)
        for off, val in ((regs.CMD_ARG0_LO, 0), (regs.CMD_ARG1_LO, cfg.pages)):
            t.reg_write(off, val)
        t.reg_write(regs.CMD_OP, int(regs.Op.HARVEST_DIRTY))
        assert t.reg_read(regs.CMD_STATUS) & 1 == 0
        assert t.reg_read(regs.CMD_RESULT0_LO) == 1
        word = t.reg_read(regs.RESULT + page // 32 * 4)
        assert word == 1 << page % 32, hex(word)
        # beyond the capacity, inside the BAR: a decode error that completes normally
        before = t.reg_read(regs.STAT_DECERR)
        assert t.mem_read(cfg.capacity_bytes + 64, 8) == ("decerr", 0)
        assert t.mem_write(cfg.capacity_bytes + 64, b"\xff" * 8) == "decerr"
        assert t.reg_read(regs.STAT_DECERR) == before + 2
        assert t.close() == 0
        assert t.vm.unexpected_stderr() == "", t.vm.stderr()


@pytest.mark.parametrize(
    "extra, message",
    [
        # function 0 of the tracker's slot is neither kind of memory function
        (["-device", "cxltrack,bus=pcie.0,addr=9.0"], "neither a cxl-type3 nor a cxltrack-mem"),
        (["-device", "cxltrack-mem,bus=pcie.0,addr=9.0"], "'memdev' property is not set"),
        # two windows on one backend
        (["-device", "cxltrack-mem,bus=pcie.0,addr=9.0,memdev=vmem0"], "already in use"),
        # a second tracker on the same window
        (["-device", "cxltrack,bus=rp1,addr=0.2"], "already tracked"),
    ],
    ids=["no-function-0", "no-memdev", "memdev-twice", "tracked-twice"],
)
def test_refusals(extra: list[str], message: str) -> None:
    args = [qemu_util.qemu_bin(), "-nodefaults", "-display", "none", "-accel", "qtest", *qemu_util.fw_args()]
    args += barwin_args() + extra
    r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr, r.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_vector_case_through_the_bar(case: Case) -> None:
    racy = any(op.op == "race" for op in case.ops)
    for schedule in (0, 1) if racy else (0,):
        with BarTrackerVM(named(case.config)) as t:
            asyncio.run(replay(QemuTarget(t), case, schedule))
            rc = t.close()
            assert rc == 0, f"QEMU exited {rc}: {t.vm.stderr()}"
            assert t.vm.unexpected_stderr() == "", t.vm.stderr()
