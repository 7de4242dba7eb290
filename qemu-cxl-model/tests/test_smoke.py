# SPDX-License-Identifier: Apache-2.0
"""Phase-1 smoke test: the built QEMU runs the CXL topology under TCG, its
firmware (SeaBIOS from the cached Debian debs) runs, and the cxl-type3
endpoint is visible on the bus behind the CXL root port."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import qemu_util
from qemu_util import Qemu, wait_until


def test_binary_runs(qemu_bin: str) -> None:
    assert os.path.isabs(qemu_bin) and os.access(qemu_bin, os.X_OK)
    out = subprocess.run([qemu_bin, "--version"], check=True, stdout=subprocess.PIPE, text=True).stdout
    assert "10.0.13" in out
    names = subprocess.run([qemu_bin, "-device", "help"], check=True, stdout=subprocess.PIPE, text=True).stdout
    assert '"cxl-type3"' in names


def test_firmware_dirs() -> None:
    out = (
        subprocess.run(
            [str(qemu_util.BUILD), "--firmware-dirs"],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        .stdout.strip()
        .splitlines()
    )
    fw = Path(out[-1])
    for name in (
        "bios-256k.bin",
        "linuxboot_dma.bin",
        "vgabios-stdvga.bin",
        "efi-e1000e.rom",
    ):
        assert (fw / name).is_file(), name


@pytest.mark.parametrize("tracker", [False, True], ids=["type3", "type3+cxltrack"])
def test_cxl_topology_boots(tmp_path: Path, tracker: bool) -> None:
    log = tmp_path / "seabios.log"
    args = [
        "-accel",
        "tcg",
        "-cpu",
        "max,hypervisor=off",
        "-chardev",
        f"file,id=dbg,path={log}",
        "-device",
        "isa-debugcon,iobase=0x402,chardev=dbg",
        *qemu_util.cxl_args(tracker=tracker),
    ]
    with Qemu(args) as vm:
        # SeaBIOS enumerates PCI and then fails to find a boot device.
        assert wait_until(
            lambda: (
                (log.exists() and "Booting from" in log.read_text(errors="replace"))
                or "No bootable device" in log.read_text(errors="replace")
            ),
            timeout=60,
        ), log.read_text(errors="replace")[-2000:]
        text = log.read_text(errors="replace")
        assert "SeaBIOS" in text
        pci = vm.qmp.hmp("info pci")
        # cxl-type3 endpoint: class 0502 (CXL memory device), 8086:0d93.
        assert "8086:0d93" in pci, pci
        bus13 = pci.split("Bus 13,")[1] if "Bus 13," in pci else ""
        assert "8086:0d93" in bus13, pci
        assert "BAR0" in bus13 and "BAR2" in bus13, pci
        if tracker:
            # Function 1: the tracker, class 0580, BAR0 of 128 KiB, MSI-X BAR.
            devs = [d for b in vm.qmp.command("query-pci") for d in _walk(b["devices"])]
            trk = [d for d in devs if d["bus"] == 13 and d["slot"] == 0 and d["function"] == 1]
            assert trk, pci
            d = trk[0]
            assert (d["id"]["vendor"], d["id"]["device"]) == (0x1B36, 0x0C7E)
            assert d["class_info"]["class"] == 0x0580
            bars = {r["bar"]: r for r in d["regions"]}
            assert bars[0]["size"] == 0x20000 and 2 in bars
        tree = vm.qmp.hmp("info qtree")
        assert 'dev: cxl-type3, id "cxl-vmem0"' in tree
        assert vm.proc.poll() is None, vm.stderr()


def _walk(devices: list[dict]) -> list[dict]:
    out = []
    for d in devices:
        out.append(d)
        bridge = d.get("pci_bridge")
        if bridge and "devices" in bridge:
            out += _walk(bridge["devices"])
    return out
