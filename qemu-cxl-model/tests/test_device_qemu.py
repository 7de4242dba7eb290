# SPDX-License-Identifier: Apache-2.0
"""QEMU-specific behaviour the shared vectors cannot show: the MSI-X message
really reaches memory, a function-level reset restores every register and
empties the tables without touching device memory, and a device that is
misconfigured is refused at start-up instead of misbehaving."""

from __future__ import annotations

import subprocess

import pytest
import qemu_util
from cxlt_env import MSI_ADDR, MSI_DATA, TRK_BAR0, TrackerVM, mapped_ranges

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


DMA_BUF = 256 << 20  # guest RAM
DMA = R["CMD_OP"].field("DMA").mask
LIST = R["CMD_OP"].field("LIST").mask


def launch_dma(
    t: TrackerVM, op: int, start: int, count: int, addr: int, clear: bool = False, lst: bool = False
) -> tuple[int, int]:
    for i, a in enumerate((start, count, addr)):
        t.reg_write(regs.CMD_ARG0_LO + 8 * i, a & 0xFFFFFFFF)
        t.reg_write(regs.CMD_ARG0_HI + 8 * i, a >> 32)
    t.reg_write(regs.CMD_OP, op | clear << 8 | DMA | (LIST if lst else 0))
    status = t.reg_read(regs.CMD_STATUS)
    assert not R["CMD_STATUS"].field("BUSY").get(status)
    return R["CMD_STATUS"].field("CODE").get(status), t.reg_read(regs.CMD_RESULT0_LO)


def set_bus_master(t: TrackerVM, on: bool) -> None:
    cmd = t.cfg_read(t.ep_bus, 0, 1, 0x04) & 0xFFFF
    t.cfg_write(t.ep_bus, 0, 1, 0x04, cmd | 0x4 if on else cmd & ~0x4)


def test_dma_needs_bus_mastering_and_an_error_loses_no_bit() -> None:
    """With Bus Master Enable off the tracker's DMA fails (spec 5.3): DMA_ERROR, guest memory
    untouched, and the CLEAR harvest's range marked again, so the next harvest reports every
    page written before. With it on again the same harvest lands in guest memory."""
    cfg = named("small")
    pages = {3, 64, 200}
    with TrackerVM(cfg) as t:
        cap = R["CAP_DMA"]
        assert t.reg_read(regs.CAP_DMA) == (
            cap.field("PRESENT").put(1)
            | cap.field("LIST").put(1)
            | cap.field("COPY").put(1)
            | cap.field("ADDR_BITS").put(64)
        )
        for p in pages:
            assert t.mem_write(p * cfg.page_size, b"\x01" * 8) == "okay"
        t.vm.memset(DMA_BUF, cfg.pages // 8, 0xA5)
        set_bus_master(t, False)
        assert launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, DMA_BUF, clear=True) == (regs.Status.DMA_ERROR, 0)
        assert t.vm.read(DMA_BUF, cfg.pages // 8) == b"\xa5" * (cfg.pages // 8)
        assert harvest_dirty(t, cfg.pages) == cfg.pages  # the whole range re-marked
        for p in pages:
            assert t.mem_write(p * cfg.page_size, b"\x02" * 8) == "okay"
        set_bus_master(t, True)
        assert launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, DMA_BUF, clear=True) == (regs.Status.OK, len(pages))
        bits = int.from_bytes(t.vm.read(DMA_BUF, cfg.pages // 8), "little")
        assert {i for i in range(cfg.pages) if bits >> i & 1} == pages
        # the same with a list (spec 5.4): it fails as a whole, the range comes back, then it lands
        for p in pages:
            assert t.mem_write(p * cfg.page_size, b"\x03" * 8) == "okay"
        worst = cfg.pages // 64 * regs.DMA_LIST_RECORD_BYTES
        t.vm.memset(DMA_BUF, worst, 0xA5)
        set_bus_master(t, False)
        assert launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, DMA_BUF, clear=True, lst=True) == (
            regs.Status.DMA_ERROR,
            0,
        )
        assert t.vm.read(DMA_BUF, worst) == b"\xa5" * worst
        set_bus_master(t, True)
        assert launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, DMA_BUF, clear=True, lst=True) == (
            regs.Status.OK,
            cfg.pages,
        )
        assert t.reg_read(regs.CMD_RESULT1_LO) == cfg.pages // 64  # every word, all ones
        raw = t.vm.read(DMA_BUF, worst)
        assert [int.from_bytes(raw[i : i + 8], "little") for i in range(0, worst, 16)] == list(range(0, cfg.pages, 64))
        assert t.close() == 0


def test_dma_into_the_device_itself_fails_without_harm() -> None:
    """A guest may point ARG2 at the tracker's own BAR (QEMU refuses the re-entrant access) or
    at the CXL window it tracks (an ordinary write there: the pages it lands on become dirty).
    Neither may crash QEMU."""
    cfg = named("small")
    with TrackerVM(cfg) as t:
        assert t.mem_write(0, b"\x01") == "okay"
        code, _ = launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, TRK_BAR0 + regs.CMD_OP, clear=True)
        assert code in (regs.Status.ALIGN, regs.Status.DMA_ERROR)
        code, _ = launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, TRK_BAR0 + 0x40, clear=True)
        assert code == regs.Status.DMA_ERROR
        assert harvest_dirty(t, cfg.pages) == cfg.pages  # the failed CLEAR re-marked the range
        assert t.mem_read(8, 1) == ("okay", 0)  # a request: page 0's hotness is 1 more
        target = t.window + 5 * cfg.page_size
        assert launch_dma(t, Op.HARVEST_HOTNESS, 0, cfg.pages, target, clear=True) == (regs.Status.OK, 1)
        assert harvest_dirty(t, cfg.pages) == 1  # page 5, which the DMA wrote (256 bytes)
        assert t.reg_read(regs.RESULT + 0) == 1 << 5
        assert t.reg_read(regs.ERR_STATUS) == 0
        assert t.vm.proc.poll() is None
        assert t.close() == 0


def test_dma_straddling_the_end_of_ram() -> None:
    """A buffer whose second half lies where nothing is mapped (guest RAM ends at 2 GiB, the PCI
    hole follows): DMA_ERROR; the bytes before the buffer are untouched (partial data inside
    the buffer is allowed, spec 5.3)."""
    cfg = named("small")
    ram_end = 2 << 30
    with TrackerVM(cfg) as t:
        assert not mapped_ranges(t.vm.qmp.hmp("info mtree -f"), ram_end, ram_end + 128)
        assert mapped_ranges(t.vm.qmp.hmp("info mtree -f"), ram_end - 256, ram_end)
        t.vm.memset(ram_end - 256, 256, 0xA5)
        assert t.mem_read(0, 8)[0] == "okay"
        code, n = launch_dma(t, Op.HARVEST_HOTNESS, 0, cfg.pages, ram_end - 128, clear=True)
        assert (code, n) == (regs.Status.DMA_ERROR, 0)
        assert t.vm.read(ram_end - 256, 128) == b"\xa5" * 128
        assert launch(t, Op.HARVEST_HOTNESS, 0, 64) == 0
        assert t.reg_read(regs.RESULT) == 0x01010101  # every counter of the range is max(c, 1)
        assert t.close() == 0


def test_whole_default_device_in_one_dma_command() -> None:
    """65536 pages: one command where the RESULT path needs two (bitmap) or 16 (hotness)."""
    cfg = named("default")
    with TrackerVM(cfg) as t:
        marked = [0, 4095, 32768, cfg.pages - 1]
        for p in marked:
            assert t.mem_write(p * cfg.page_size, b"\x01" * 8) == "okay"
        assert launch_dma(t, Op.HARVEST_DIRTY, 0, cfg.pages, DMA_BUF, clear=True) == (regs.Status.OK, len(marked))
        bits = int.from_bytes(t.vm.read(DMA_BUF, cfg.pages // 8), "little")
        assert [i for i in range(cfg.pages) if bits >> i & 1] == marked
        code, n = launch_dma(t, Op.HARVEST_HOTNESS, 0, cfg.pages, DMA_BUF + (1 << 20))
        assert (code, n) == (regs.Status.OK, len(marked))
        assert t.close() == 0


def test_chunk_copy_by_dma_has_no_tracking_effect_and_needs_bus_mastering() -> None:
    """CHUNK_COPY (spec 7.1): the chunk's bytes land at ARG2 with pci_dma_write; the copy's reads
    leave dirty, accessed and hotness as they were; with Bus Master Enable off it fails with
    DMA_ERROR and changes nothing; chunk-copy=off is a device without CAP_DMA.COPY (FLAGS)."""
    cfg = named("small")
    size = cfg.chunk_size
    base = 2 * size
    with TrackerVM(cfg) as t:
        assert launch(t, Op.CHUNK_ASSIGN, 2, 7) == 0
        data = bytes((i * 37 + 11) & 0xFF for i in range(256))
        for off in (0, 4096, size - 256):
            for q in range(0, 256, 8):
                assert t.mem_write(base + off + q, data[q : q + 8]) == "okay"
        assert launch(t, Op.HARVEST_ACCESSED, 0, cfg.pages, clear=True) == 0
        assert launch(t, Op.HARVEST_HOTNESS, 0, 64 * 4, clear=True) == 0
        t.vm.memset(DMA_BUF - 64, size + 128, 0xA5)
        assert launch(t, Op.CHUNK_COPY, 2, 7, DMA_BUF) == 0
        assert t.reg_read(regs.CMD_RESULT0_LO) == size
        got = t.vm.read(DMA_BUF - 64, size + 128)
        assert got[:64] == got[-64:] == b"\xa5" * 64
        for off in (0, 4096, size - 256):
            assert got[64 + off : 64 + off + 256] == data
        assert got[64 + 256 : 64 + 4096] == bytes(4096 - 256)
        assert launch(t, Op.HARVEST_ACCESSED, 0, cfg.pages) == 0 and t.reg_read(regs.CMD_RESULT0_LO) == 0
        assert launch(t, Op.HARVEST_HOTNESS, 0, 64 * 4) == 0 and t.reg_read(regs.CMD_RESULT0_LO) == 0
        set_bus_master(t, False)
        assert launch(t, Op.CHUNK_COPY, 2, 7, DMA_BUF + size + 4096) == regs.Status.DMA_ERROR
        set_bus_master(t, True)
        assert harvest_dirty(t, cfg.pages) == 3  # the three written pages, neither cleared nor added
        assert t.close() == 0
    with TrackerVM(cfg, extra_tracker=",chunk-copy=off") as t:
        assert not R["CAP_DMA"].field("COPY").get(t.reg_read(regs.CAP_DMA))
        assert launch(t, Op.CHUNK_ASSIGN, 2, 7) == 0
        assert launch(t, Op.CHUNK_COPY, 2, 7, DMA_BUF) == regs.Status.FLAGS
        assert t.close() == 0
