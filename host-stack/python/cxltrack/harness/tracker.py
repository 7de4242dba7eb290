# SPDX-License-Identifier: Apache-2.0
"""The cxltrack tracker in a QEMU topology: function 1 of the cxl-type3 slot, or of the
PCIe-attached flavour's memory window (no CXL), configured from a config/*.toml device
configuration."""

from __future__ import annotations

from cxltrack.config import DeviceConfig

from .topology import Device, Object, Topology, cxl_type3_topology

PropValue = str | int | bool


def device_props(cfg: DeviceConfig) -> dict[str, PropValue]:
    """The QEMU `cxltrack` device properties for a device configuration."""
    return {
        "capacity": cfg.capacity_bytes,
        "page-shift": cfg.page_shift,
        "slots": cfg.slots,
        "hot-bits": cfg.hot_bits,
        "evq-depth-log2": cfg.evq_depth_log2,
        "chunk-shift": cfg.chunk_shift,
        "disk-bits": cfg.bat_disk_bits,
        "block-bits": cfg.bat_block_bits,
        "tick-ns": cfg.tick_ns,
    }


def tracker_topology(cfg: DeviceConfig | None = None, memdev: str = "cxl-vmem0") -> Topology:
    """The CXL type-3 topology with the tracker as function 1 of `memdev`."""
    topo = cxl_type3_topology()
    props: dict[str, PropValue] = {"id": "tracker0", "target": memdev}
    if cfg is not None:
        props.update(device_props(cfg))
    topo.add_function(memdev, Device("cxltrack", props))
    return topo


def barwin_topology(cfg: DeviceConfig | None = None, mem_size: str = "256M") -> Topology:
    """The PCIe-attached flavour (docs/spec.md section 10, the Alveo build): q35 without CXL, a
    PCIe root port, function 0 a cxltrack-mem whose BAR0 is the memory window (`mem0`, backend
    `vmem0` of `mem_size`), function 1 the tracker (`tracker0`)."""
    props: dict[str, PropValue] = {"id": "tracker0"}
    if cfg is not None:
        props.update(device_props(cfg))
    topo = Topology(
        machine="q35",
        memory="2G",
        smp=2,
        objects=[Object("memory-backend-ram", {"id": "vmem0", "share": True, "size": mem_size})],
        devices=[
            Device("pcie-root-port", {"id": "rp1", "bus": "pcie.0", "chassis": 1, "addr": "4.0"}),
            Device("cxltrack-mem", {"bus": "rp1", "addr": "0.0", "memdev": "vmem0", "id": "mem0"}),
        ],
        description=f"q35, pcie-root-port rp1 -> cxltrack-mem mem0 ({mem_size}) + cxltrack, no CXL",
    )
    topo.add_function("mem0", Device("cxltrack", props))
    return topo
