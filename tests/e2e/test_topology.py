# SPDX-License-Identifier: Apache-2.0
"""The topology description composes (no VM needed)."""

from __future__ import annotations

from cxltrack.harness import Device, cxl_type3_topology


def test_default_topology_args() -> None:
    args = cxl_type3_topology().args()
    assert args[:2] == ["-M", "q35,cxl=on"]
    joined = " ".join(args)
    assert "memory-backend-ram,id=vmem0,share=on,size=256M" in joined
    assert "cxl-type3,bus=root_port13,volatile-memdev=vmem0,id=cxl-vmem0" in joined
    assert "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G" in joined


def test_tracker_as_function_one() -> None:
    topo = cxl_type3_topology()
    base = topo.copy()
    topo.add_function("cxl-vmem0", Device("cxltrack", {"id": "tracker0"}))
    devs = [a for a in topo.args() if a.startswith(("cxl-type3", "cxltrack"))]
    assert devs == [
        "cxl-type3,bus=root_port13,volatile-memdev=vmem0,id=cxl-vmem0,addr=0.0,multifunction=on",
        "cxltrack,bus=root_port13,addr=0.1,id=tracker0",
    ]
    assert "cxltrack" not in " ".join(base.args())
