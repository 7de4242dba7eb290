# SPDX-License-Identifier: Apache-2.0
"""Host-side CPU cost of one dirty-log round through the driver, RESULT window (MMIO) vs DMA in
the same run (issue 16, `make bench-harvest`'s host_cpu_us), and DMA as the driver chooses it (a
list of the non-zero words while rounds are sparse, spec 5.4) vs DMA of the whole bitmap. Boots
the QEMU full stack (the tracker as function 1, cxltrack.ko, a devdax region), runs `cxlt-test
cpubench` in the guest and prints

    host_cpu_mmio_us=<median> host_cpu_dma_us=<median> host_cpu_bitmap_us=<median> mmio_over_dma=<ratio>
        bitmap_over_dma=<ratio> (<what was measured>)
    <the device bench's last line, if given> host_cpu_us=<DMA median>

Medians over several VMs: one VM's figures move with the machine's load and its own state.
The figures are guest thread CPU time under TCG: an uncached MMIO load costs what QEMU's
emulation of it costs, not the 0.5-1 us of a PCIe round trip, so the MMIO figure is a lower
bound of what real hardware would show; the DMA figure is dominated by the bitmap copy.

    python tests/driver/bench_host_cpu.py --qemu Q --image out/guest/busybox.json [--device-line L]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import sys
from pathlib import Path

from cxltrack import config as cxlconfig
from cxltrack.harness.image import load_image
from cxltrack.harness.pins import out_dir
from cxltrack.harness.topology import Device, cxl_type3_topology
from cxltrack.harness.tracker import device_props
from cxltrack.harness.vm import Vm, VmConfig

LINE = re.compile(
    r"cpubench pages=(\d+) rounds=(\d+) permille=(\d+) mmio_us=([\d.]+) dma_us=([\d.]+) bitmap_us=([\d.]+)"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qemu", type=Path, required=True)
    ap.add_argument("--image", type=Path, required=True, help="guest image manifest (make guest)")
    ap.add_argument("--config", default="default", help="tracker configuration (config/<name>.toml)")
    ap.add_argument(
        "--capacity-gib", type=int, default=16, help="device size (the configuration's, resized): 16 GiB = 4M pages"
    )
    ap.add_argument("--vms", type=int, default=3, help="VMs booted one after the other; medians over them")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--permille", type=int, default=10, help="pages written per round, 1/1000 of 4096")
    ap.add_argument("--device-line", default="", help="the device bench's last line, to extend")
    a = ap.parse_args(argv)
    cfg = dataclasses.replace(cxlconfig.named(a.config), capacity_bytes=a.capacity_gib << 30)
    # The memory backend is not touched beyond the pages the guest program writes, and a devdax
    # region of 16 GiB costs the 2 GiB guest 256 MiB of struct pages.
    topo = cxl_type3_topology(mem_size=f"{a.capacity_gib}G", window_size=f"{max(4, 2 * a.capacity_gib)}G")
    topo.add_function("cxl-vmem0", Device("cxltrack", {"id": "tracker0", "target": "cxl-vmem0", **device_props(cfg)}))
    vm_cfg = VmConfig(
        qemu=a.qemu,
        image=load_image(a.image),
        topology=topo,
        workdir=out_dir() / "e2e" / "_bench_host_cpu",
    )
    runs: list[tuple[float, float, float]] = []
    for n in range(a.vms):
        with Vm(dataclasses.replace(vm_cfg, workdir=vm_cfg.workdir / f"vm{n}")) as vm:
            vm.run("modprobe cxltrack")
            vm.run("cxl-region create devdax", timeout=60)
            out = vm.run(f"cxlt-test cpubench /dev/dax0.0 {a.rounds} {a.permille}", timeout=1200).out
        m = LINE.search(out)
        if not m:
            print(f"bench_host_cpu: no result in the guest's output:\n{out}", file=sys.stderr)
            return 1
        pages, rounds, permille = (int(m.group(i)) for i in (1, 2, 3))
        runs.append((float(m.group(4)), float(m.group(5)), float(m.group(6))))
        print(f"vm{n}: mmio_us={runs[-1][0]:.1f} dma_us={runs[-1][1]:.1f} bitmap_us={runs[-1][2]:.1f}", flush=True)
    mmio = statistics.median(r[0] for r in runs)
    dma = statistics.median(r[1] for r in runs)
    bitmap = statistics.median(r[2] for r in runs)
    size = f"{(pages << cfg.page_shift) >> 20} MiB"
    print(
        f"host_cpu_mmio_us={mmio:.1f} host_cpu_dma_us={dma:.1f} host_cpu_bitmap_us={bitmap:.1f} "
        f"mmio_over_dma={mmio / dma:.2f} bitmap_over_dma={bitmap / dma:.2f} "
        f"(one CLEAR harvest of the whole {size} device ({pages} pages) through the driver: by MMIO, by DMA as "
        f"the driver chooses (list or bitmap by the last round's density), by DMA with the bitmap forced "
        f"(harvest_list=0); per VM the median of {rounds} rounds taken the three ways in turn, "
        f"{permille}/1000 of 4096 pages written before each; "
        f"median over {a.vms} VMs; guest thread CPU time under TCG)"
    )
    print(f"{a.device_line.strip()} host_cpu_us={dma:.1f}".strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
