# SPDX-License-Identifier: Apache-2.0
"""Composable QEMU machine and device descriptions.

A `Topology` is data, not a command line: tests and other parts of the project
take the default CXL topology and add to it, e.g. the cxltrack tracker as
function 1 of the type-3 device's slot:

    topo = cxl_type3_topology()
    topo.add_function("cxl-vmem0", Device("cxltrack", {"id": "tracker0"}))

which turns the type-3 device into `addr=0.0,multifunction=on` and adds the new
device at `addr=0.1` on the same bus.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

PropValue = str | int | bool


def _fmt(v: PropValue) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _opts(head: str, props: dict[str, PropValue]) -> str:
    return ",".join([head, *(f"{k}={_fmt(v)}" for k, v in props.items())])


@dataclass
class Device:
    """One `-device driver,prop=value,...`."""

    driver: str
    props: dict[str, PropValue] = field(default_factory=dict)

    @property
    def id(self) -> str | None:
        v = self.props.get("id")
        return None if v is None else str(v)

    def args(self) -> list[str]:
        return ["-device", _opts(self.driver, self.props)]


@dataclass
class Object:
    """One `-object type,prop=value,...` (memory backends)."""

    type: str
    props: dict[str, PropValue] = field(default_factory=dict)

    def args(self) -> list[str]:
        return ["-object", _opts(self.type, self.props)]


@dataclass
class Topology:
    machine: str = "q35"
    machine_props: dict[str, PropValue] = field(default_factory=dict)
    memory: str = "2G"
    maxmem: str | None = None
    slots: int | None = None
    smp: int = 2
    objects: list[Object] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)
    # Further `-M` option strings, e.g. "cxl-fmw.0.targets.0=cxl.1".
    machine_extra: list[str] = field(default_factory=list)
    extra_args: list[str] = field(default_factory=list)
    description: str = ""

    def copy(self) -> Topology:
        return copy.deepcopy(self)

    def device(self, dev_id: str) -> Device:
        for d in self.devices:
            if d.id == dev_id:
                return d
        raise KeyError(f"no device with id {dev_id!r} in topology")

    def add(self, dev: Device) -> Device:
        if dev.id is not None and any(d.id == dev.id for d in self.devices):
            raise ValueError(f"duplicate device id {dev.id!r}")
        self.devices.append(dev)
        return dev

    def add_function(self, anchor_id: str, dev: Device, function: int = 1) -> Device:
        """Put `dev` into the PCI slot of device `anchor_id` as another function."""
        anchor = self.device(anchor_id)
        if "bus" not in anchor.props:
            raise ValueError(f"device {anchor_id!r} has no bus property")
        slot = str(anchor.props.get("addr", "0.0")).split(".")[0]
        anchor.props["addr"] = f"{slot}.0"
        anchor.props["multifunction"] = True
        dev.props = {"bus": anchor.props["bus"], "addr": f"{slot}.{function}", **dev.props}
        return self.add(dev)

    def args(self) -> list[str]:
        mach = _opts(self.machine, self.machine_props)
        mem = self.memory
        if self.maxmem:
            mem += f",maxmem={self.maxmem}"
        if self.slots is not None:
            mem += f",slots={self.slots}"
        out = ["-M", mach, "-m", mem, "-smp", str(self.smp)]
        for o in self.objects:
            out += o.args()
        for d in self.devices:
            out += d.args()
        for m in self.machine_extra:
            out += ["-M", m]
        return out + self.extra_args


def cxl_type3_topology(mem_size: str = "256M", window_size: str = "4G") -> Topology:
    """q35 with one pxb-cxl host bridge, one root port and one volatile cxl-type3 device
    (id `cxl-vmem0`, memdev `vmem0`) behind a fixed memory window of `window_size`."""
    return Topology(
        machine="q35",
        machine_props={"cxl": True},
        memory="2G",
        maxmem="8G",
        slots=4,
        smp=2,
        objects=[Object("memory-backend-ram", {"id": "vmem0", "share": True, "size": mem_size})],
        devices=[
            Device("pxb-cxl", {"bus_nr": 12, "bus": "pcie.0", "id": "cxl.1"}),
            Device("cxl-rp", {"port": 0, "bus": "cxl.1", "id": "root_port13", "chassis": 0, "slot": 2}),
            Device("cxl-type3", {"bus": "root_port13", "volatile-memdev": "vmem0", "id": "cxl-vmem0"}),
        ],
        machine_extra=[f"cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size={window_size}"],
        description=f"q35 cxl=on, pxb-cxl cxl.1 → cxl-rp root_port13 → cxl-type3 cxl-vmem0 ({mem_size} volatile), "
        f"window {window_size}",
    )


def plain_topology() -> Topology:
    """q35 without CXL (for harness self-tests that need no device)."""
    return Topology(machine="q35", memory="512M", smp=1, description="plain q35")
