# SPDX-License-Identifier: Apache-2.0
"""QEMU-specific behaviour the shared vectors cannot show: the MSI-X message
really reaches memory, a function-level reset restores every register and
empties the tables without touching device memory, and a device that is
misconfigured is refused at start-up instead of misbehaving."""

from __future__ import annotations

import subprocess

import pytest
import qemu_util
from cxlt_env import MSI_ADDR, MSI_DATA, TrackerVM

from cxltrack import regs
from cxltrack.config import named
from cxltrack.regs import Op

R = regs.REGISTERS


def launch(t: TrackerVM, op: int, *args: int, clear: bool = False) -> int:
    for i, a in enumerate(([*list(args), 0, 0, 0])[:3]):
        t.reg_write(regs.CMD_ARG0_LO + 8 * i, a & 0xFFFFFFFF)
        t.reg_write(regs.CMD_ARG0_HI + 8 * i, a >> 32)
    t.reg_write(regs.CMD_OP, op | clear << 8)
    return R["CMD_STATUS"].field("CODE").get(t.reg_read(regs.CMD_STATUS))


def test_msix_message_reaches_memory() -> None:
    with TrackerVM(named("small")) as t:
        t.vm.writel(MSI_ADDR, 0)
        t.reg_write(regs.INT_ENABLE, R["INT_ENABLE"].field("CMD_DONE").mask)
        assert t.vm.readl(MSI_ADDR) == 0  # line low: nothing sent
        assert launch(t, Op.NOP) == 0
        assert t.vm.readl(MSI_ADDR) == MSI_DATA
        assert t.msi_count() == 1
        # A write to INT_ENABLE that leaves the line asserted re-sends.
        t.vm.writel(MSI_ADDR, 0)
        t.reg_write(regs.INT_ENABLE, R["INT_ENABLE"].field("CMD_DONE").mask)
        assert t.vm.readl(MSI_ADDR) == MSI_DATA
        assert t.msi_count() == 2
        # Clearing CMD_DONE lowers the line: no message.
        t.vm.writel(MSI_ADDR, 0)
        t.reg_write(regs.INT_STATUS, R["INT_STATUS"].field("CMD_DONE").mask)
        assert t.vm.readl(MSI_ADDR) == 0
        assert t.msi_count() == 2


def test_flr_resets_registers_and_tables_not_memory() -> None:
    cfg = named("small")
    with TrackerVM(cfg) as t:
        assert t.mem_write(0x3000, b"\x11\x22\x33\x44") == "okay"
        assert launch(t, Op.BAT_SET, 5, 9, 1) == 0
        assert launch(t, Op.SLOT_ALLOC, 7) == 0
        assert launch(t, Op.CHUNK_ASSIGN, 2, 3) == 0
        t.reg_write(regs.CTRL, 0)
        t.reg_write(regs.SLOT_TIMEOUT, 5)
        t.reg_read(0xFFC)  # BAD_REG: ERR_* and an ERROR event
        assert t.reg_read(regs.ERR_STATUS) and t.reg_read(regs.EVQ_COUNT)
        t.flr()
        for r in R.values():
            if r.name.startswith("CAP_") or r.name == "EVQ_POP":
                continue
            assert t.reg_read(r.offset) == r.reset, r.name
        assert launch(t, Op.HARVEST_DIRTY, 0, cfg.pages) == 0
        assert t.reg_read(regs.CMD_RESULT0_LO) == 0
        assert launch(t, Op.BAT_GET, 5) == 0 and t.reg_read(regs.CMD_RESULT1_HI) == 0
        assert launch(t, Op.SLOT_QUERY, 0) == 0 and t.reg_read(regs.CMD_RESULT0_LO) == 0
        assert launch(t, Op.CHUNK_LIST, 0, 0) == 0
        assert t.reg_read(regs.CMD_RESULT0_LO) == cfg.chunks
        assert t.mem_read(0x3000, 4) == ("okay", 0x44332211)
        assert t.close() == 0


def test_decode_error_beyond_capacity() -> None:
    cfg = named("small")
    with TrackerVM(cfg) as t:
        assert t.mem_write(cfg.capacity_bytes, b"\xff" * 8) == "decerr"
        assert t.mem_read(cfg.capacity_bytes, 8) == ("decerr", 0)
        assert t.reg_read(regs.STAT_DECERR) == 2
        assert t.reg_read(regs.STAT_READS_LO) == 0 and t.reg_read(regs.STAT_WRITES_LO) == 0


@pytest.mark.parametrize(
    "props,message",
    [
        (",page-shift=11", "page-shift"),
        (",slots=17", "slots"),
        (",capacity=1000", "capacity"),
        (",capacity=1G", "capacity"),
        (",chunk-shift=12", "chunks"),
        (",tick-ns=0", "tick-ns"),
    ],
)
def test_bad_configuration_is_refused(props: str, message: str) -> None:
    args = [qemu_util.qemu_bin(), "-nodefaults", "-display", "none", "-accel", "qtest", *qemu_util.fw_args()]
    args += qemu_util.cxl_args(tracker=True, extra_tracker=props)
    r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr, r.stderr


def test_target_defaults_to_function_0_and_is_exclusive() -> None:
    base = [qemu_util.qemu_bin(), "-nodefaults", "-display", "none", "-accel", "qtest", *qemu_util.fw_args()]
    args = base + qemu_util.cxl_args(tracker=True)
    no_target = [a.replace(",target=cxl-vmem0", "") for a in args]
    assert no_target != args
    with qemu_util.Qemu([a for a in no_target if a not in base]) as vm:
        target = vm.qmp.command("qom-get", path="/machine/peripheral/tracker0", property="target")
        assert target == "/machine/peripheral/cxl-vmem0"
    twice = [*args, "-device", "cxltrack,bus=root_port13,addr=0.2,target=cxl-vmem0"]
    r = subprocess.run(twice, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "already tracked" in r.stderr, r.stderr
    # Alone in its slot, with no target: refused.
    alone = [*base, *qemu_util.cxl_args(tracker=False), "-device", "cxltrack,bus=pcie.0,addr=9.0"]
    r = subprocess.run(alone, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "neither a cxl-type3 nor a cxltrack-mem" in r.stderr, r.stderr
    # A target in another slot could be unplugged under the tracker: refused.
    other = [*base, *qemu_util.cxl_args(tracker=False), "-device", "cxltrack,bus=pcie.0,addr=9.0,target=cxl-vmem0"]
    r = subprocess.run(other, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "target must be function 0 of the tracker's slot" in r.stderr, r.stderr


def test_target_with_dynamic_capacity_is_refused() -> None:
    """Dynamic capacity follows the static capacity in DPA order, outside what the tracker
    covers: every access to it would be a decode error, so such a target is refused."""

    def with_dc(args: list[str]) -> list[str]:
        i = next(i for i, a in enumerate(args) if a.startswith("cxl-type3,"))
        args[i] += ",volatile-dc-memdev=dc0,num-dc-regions=1"
        return ["-object", "memory-backend-ram,id=dc0,size=256M", *args]

    base = [qemu_util.qemu_bin(), "-nodefaults", "-display", "none", "-accel", "qtest", *qemu_util.fw_args()]
    r = subprocess.run(
        [*base, *with_dc(qemu_util.cxl_args(tracker=True))],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 1 and "target has dynamic capacity" in r.stderr, r.stderr
    # the same machine without the tracker starts: the refusal is the tracker's
    with qemu_util.Qemu(with_dc(qemu_util.cxl_args(tracker=False))):
        pass


def harvest_dirty(t: TrackerVM, pages: int) -> int:
    assert launch(t, Op.HARVEST_DIRTY, 0, pages, clear=True) == 0
    return t.reg_read(regs.CMD_RESULT0_LO)


def test_set_cacheline_is_an_internal_write() -> None:
    """Clear Poison (mailbox 4302h) writes a line through set_cacheline():
    write-end effects only (spec section 2.1, internal writes)."""
    cfg = named("small")
    with TrackerVM(cfg) as t:
        t.reg_write(regs.CTRL, 3)  # TRACK_EN | BAT_INV_EVT_EN
        assert launch(t, Op.BAT_SET, 2, 77, 1) == 0
        line = bytes(range(64))
        assert t.mailbox(0x4302, (0x2040).to_bytes(8, "little") + line) == 0
        assert t.reg_read(regs.STAT_WRITES_LO) == 0 and t.reg_read(regs.STAT_READS_LO) == 0
        assert t.reg_read(regs.STAT_BAT_INV) == 1
        assert launch(t, Op.BAT_GET, 2) == 0 and t.reg_read(regs.CMD_RESULT1_HI) == 0
        assert launch(t, Op.HARVEST_ACCESSED, 0, cfg.pages) == 0 and t.reg_read(regs.CMD_RESULT0_LO) == 0
        assert harvest_dirty(t, cfg.pages) == 1
        assert t.reg_read(regs.RESULT) == 1 << 2
        assert t.reg_read(regs.EVT_HEAD0) & 0xFF == regs.Event.BAT_INVALIDATED
        assert t.reg_read(regs.EVT_ARG_LO) == 2
        assert t.mem_read(0x2040, 8) == ("okay", int.from_bytes(line[:8], "little"))


def test_sanitize_dirties_every_page_and_clears_associations() -> None:
    cfg = named("small")
    with TrackerVM(cfg) as t:
        assert t.mem_write(0x5000, b"\xaa" * 8) == "okay"
        assert launch(t, Op.BAT_SET, 9, 1, 1) == 0
        assert harvest_dirty(t, cfg.pages) == 1
        assert t.mailbox(0x4400) == 1  # background operation started
        for _ in range(20):
            t.vm.clock_step(1_000_000_000)
            if t.mailbox_bg_percent() == 100:
                break
        assert t.mailbox_bg_percent() == 100
        assert harvest_dirty(t, cfg.pages) == cfg.pages
        assert launch(t, Op.BAT_GET, 9) == 0 and t.reg_read(regs.CMD_RESULT1_HI) == 0
        assert t.reg_read(regs.STAT_BAT_INV) == 1
        assert t.mem_read(0x5000, 8) == ("okay", 0)
        assert t.close() == 0
