# SPDX-License-Identifier: Apache-2.0
"""The cxltrack tracker in a QEMU topology: function 1 of the cxl-type3 slot,
configured from a config/*.toml device configuration."""

from __future__ import annotations

from cxltrack.config import DeviceConfig

from .topology import Device, Topology, cxl_type3_topology

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
