# SPDX-License-Identifier: Apache-2.0
"""Checks of the board build that run without Vivado (`make test-fpga`):

* `make fpga` without Vivado stops at once with a message that says so;
* the U250 top level lints against the generated CxlTrackBoard and port-list stubs of the
  vendor IP (connections and widths);
* a dry run of fpga/vivado/build.tcl in tclsh with every Vivado command stubbed: the sequence of
  steps, the IP parameters computed from the generated board_params.tcl (the identity the
  benches simulate), the generics, the refusal when timing fails or the board files are missing;
* the constraints name only ports the top level has.

None of this shows that Vivado accepts the flow: fpga/README.md says it has never run here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
CARD = TOP / "fpga" / "au250"
WRAPPER = TOP / "build" / "rtl" / "board-default"
STUB = Path(__file__).resolve().parent / "vivado_stub.tcl"
BUILD_TCL = TOP / "fpga" / "vivado" / "build.tcl"


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(TOP), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def path_without_vivado() -> str:
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if not (Path(d) / "vivado").exists())


def test_make_fpga_without_vivado_says_so() -> None:
    out = make("fpga", "BOARD=au250", env={"PATH": path_without_vivado()})
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert "Vivado ('vivado') is not on PATH, so nothing was built" in text, text
    assert "fpga/README.md" in text, text
    assert "emitting CxlTrackBoard" not in text, "the refusal must come before any work"


def test_make_fpga_names_the_missing_tool() -> None:
    out = make("fpga", "BOARD=au250", "VIVADO=cxlt-no-such-vivado")
    assert out.returncode != 0
    assert "Vivado ('cxlt-no-such-vivado') is not on PATH" in out.stdout, out.stdout + out.stderr


def test_make_fpga_unknown_card() -> None:
    out = make("fpga", "BOARD=u999")
    assert out.returncode != 0
    assert "no card 'u999'" in out.stdout and "au250" in out.stdout, out.stdout + out.stderr


def wrapper_files() -> list[Path]:
    flist = WRAPPER / "filelist.f"
    assert flist.exists(), f"{flist} missing: run `make fpga-rtl`"
    return [WRAPPER / f for f in flist.read_text().split()]


def test_top_level_lints_against_the_wrapper() -> None:
    proc = subprocess.run(
        [
            "verilator",
            "--lint-only",
            "--top-module",
            "cxltrack_au250",
            str(CARD / "lint" / "vendor_stubs.sv"),
            str(CARD / "rtl" / "cxltrack_au250.sv"),
            *map(str, wrapper_files()),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]


def board_params() -> dict[str, int]:
    params = {}
    for line in (WRAPPER / "board_params.tcl").read_text().splitlines():
        m = re.fullmatch(r"set (cxlt_\w+) (\d+)", line.strip())
        if m:
            params[m.group(1)] = int(m.group(2))
    return params


def dry_run(
    tmp_path: Path, slack: str = "0.125", extra_env: dict[str, str] | None = None
) -> tuple[int, list[list[str]]]:
    tclsh = shutil.which("tclsh8.6") or shutil.which("tclsh")
    assert tclsh, "tclsh not found (make test-fpga installs tcl8.6)"
    log = tmp_path / "vivado.log"
    proc = subprocess.run(
        [tclsh, str(STUB), str(log), str(BUILD_TCL), str(CARD), str(WRAPPER), str(tmp_path / "out"), "2"],
        capture_output=True,
        text=True,
        env={**os.environ, "STUB_SLACK": slack, **(extra_env or {})},
        timeout=60,
    )
    cmds = [tcl_list(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc.returncode, cmds


def tcl_list(line: str) -> list[str]:
    """Split one Tcl list line as the stub wrote it (words, braces for words with spaces)."""
    words: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == " ":
            i += 1
        elif line[i] == "{":
            depth, j = 1, i + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(line[j], 0)
                j += 1
            words.append(line[i + 1 : j - 1])
            i = j
        else:
            j = line.find(" ", i)
            j = len(line) if j < 0 else j
            words.append(line[i:j])
            i = j
    return words


def ip_properties(cmds: list[list[str]], ip: str) -> dict[str, str]:
    for c in cmds:
        if c[0] == "set_property" and c[1] == "-dict" and c[-1] == ip:
            words = tcl_list(c[2])
            return dict(zip(words[0::2], words[1::2], strict=True))
    raise AssertionError(f"no set_property -dict for {ip}")


def test_flow_dry_run(tmp_path: Path) -> None:
    rc, cmds = dry_run(tmp_path)
    assert rc == 0, cmds[-5:]
    order = [c[0] for c in cmds]
    steps = ["create_project", "create_ip", "synth_ip", "read_verilog", "read_xdc", "synth_design", "opt_design"]
    steps += ["place_design", "phys_opt_design", "route_design", "report_timing_summary", "report_cdc"]
    steps += ["write_bitstream", "write_cfgmem"]
    pos = -1
    for s in steps:
        assert s in order[pos + 1 :], f"{s} missing after step {pos} of {order}"
        pos = order.index(s, pos + 1)
    p = board_params()
    pcie = ip_properties(cmds, "pcie4_uscale_plus_0")
    assert pcie["CONFIG.vendor_id"] == f"{p['cxlt_pci_vendor_id']:04x}" == "1b36"
    assert pcie["CONFIG.PF0_DEVICE_ID"] == f"{p['cxlt_fn0_device_id']:04x}"
    assert pcie["CONFIG.PF1_DEVICE_ID"] == f"{p['cxlt_fn1_device_id']:04x}"
    assert pcie["CONFIG.PF0_CLASS_CODE"] == "050000" and pcie["CONFIG.PF1_CLASS_CODE"] == "058000"
    mem_bar = 1 << p["cxlt_fn0_bar0_log2"]
    assert (int(pcie["CONFIG.pf0_bar0_size"]) << 20, pcie["CONFIG.pf0_bar0_scale"]) == (mem_bar, "Megabytes")
    assert (int(pcie["CONFIG.pf1_bar0_size"]) << 10, pcie["CONFIG.pf1_bar0_scale"]) == (1 << 17, "Kilobytes")
    assert (int(pcie["CONFIG.pf1_bar2_size"]) << 10, pcie["CONFIG.pf1_bar2_scale"]) == (1 << 12, "Kilobytes")
    assert int(pcie["CONFIG.PF1_MSIX_CAP_TABLE_SIZE"], 16) == p["cxlt_fn1_msix_vectors"] - 1
    assert int(pcie["CONFIG.PF1_MSIX_CAP_PBA_OFFSET"], 16) == p["cxlt_fn1_msix_pba_offset"]
    assert pcie["CONFIG.MSI_X_OPTIONS"] == "MSI-X_External" and pcie["CONFIG.TL_PF_ENABLE_REG"] == "2"
    assert pcie["CONFIG.axisten_if_width"] == "512_bit" and pcie["CONFIG.axisten_freq"] == "250"
    ddr = ip_properties(cmds, "ddr4_0")
    assert ddr["CONFIG.C0.DDR4_AxiIDWidth"] == str(p["cxlt_id_bits"] + 1)
    assert ddr["CONFIG.C0.DDR4_AxiDataWidth"] == "512"
    synth = next(c for c in cmds if c[0] == "synth_design")
    assert f"MEM_ADDR_BITS={p['cxlt_mem_addr_bits']}" in synth and f"DDR_ID_BITS={p['cxlt_id_bits'] + 1}" in synth
    assert f"CORE_CLK_DIVIDE={1200 // p['cxlt_core_mhz']}" in synth
    # the FIFO read paths into the core are bounded by the core's period, the others by theirs
    fifo_xdc = (tmp_path / "out" / "cdc_fifo.xdc").read_text()
    core_ns = f"{1000 / p['cxlt_core_mhz']:.3f}"
    for path, ns in (("memX/*M_f", core_ns), ("memX/*S_f", "4.000"), ("ddrX/*M_f", "3.333"), ("ddrX/*S_f", core_ns)):
        assert f"-datapath_only {ns} -from [get_cells -hier -filter {{NAME =~ */{path}/cdcFifoRam_ext/*" in fifo_xdc
    assert any(c[0] == "read_xdc" and c[1].endswith("cdc_fifo.xdc") for c in cmds)
    read = {Path(w).name for c in cmds if c[0] == "read_verilog" for w in c[2:]}
    read |= {Path(w).name for c in cmds if c[0] == "read_verilog" for w in tcl_list(c[-1])}
    assert {f.name for f in wrapper_files()} <= read and "cxltrack_au250.sv" in read


def test_flow_refuses_failed_timing(tmp_path: Path) -> None:
    rc, cmds = dry_run(tmp_path, slack="-0.250")
    assert rc == 1 and "write_bitstream" not in [c[0] for c in cmds]
    rc, cmds = dry_run(tmp_path, slack="-0.250", extra_env={"CXLT_ALLOW_TIMING_FAIL": "1"})
    assert rc == 0 and "write_bitstream" in [c[0] for c in cmds]


def test_flow_refuses_missing_board_files(tmp_path: Path) -> None:
    rc, cmds = dry_run(tmp_path, extra_env={"STUB_NO_BOARD": "1"})
    assert rc == 1 and "create_ip" not in [c[0] for c in cmds]


def top_ports() -> set[str]:
    text = (CARD / "rtl" / "cxltrack_au250.sv").read_text()
    header = text[text.index("module cxltrack_au250") : text.index(");")]
    return set(re.findall(r"(?:input|output|inout)\s+wire\s+(?:\[[^\]]+\]\s+)?(\w+)", header))


@pytest.mark.parametrize("xdc", sorted((CARD / "constraints").glob("*.xdc")), ids=lambda p: p.name)
def test_constraints_name_existing_ports(xdc: Path) -> None:
    ports = top_ports()
    named = set(re.findall(r"get_ports \{?(\w+)", xdc.read_text()))
    unknown = {n for n in named if n.rstrip("*") not in ports and not any(p.startswith(n.rstrip("*")) for p in ports)}
    assert not unknown, f"{xdc.name} constrains ports the top level lacks: {sorted(unknown)}"
