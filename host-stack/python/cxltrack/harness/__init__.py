# SPDX-License-Identifier: Apache-2.0
"""Full-stack test harness: pinned guest kernel, guest images, QEMU CXL
topologies, and VMs driven through a guest agent on virtio-serial."""

from .agent import CommandResult, GuestCommandError, GuestError
from .image import (
    GuestImage,
    InitramfsImage,
    InitramfsSpec,
    build_initramfs,
    load_image,
)
from .kernel import KernelTree, ensure_kernel
from .topology import Device, Object, Topology, cxl_type3_topology, plain_topology
from .vcpu import VcpuState
from .vm import GuestWedged, Vm, VmConfig

__all__ = [
    "CommandResult",
    "Device",
    "GuestCommandError",
    "GuestError",
    "GuestImage",
    "GuestWedged",
    "InitramfsImage",
    "InitramfsSpec",
    "KernelTree",
    "Object",
    "Topology",
    "VcpuState",
    "Vm",
    "VmConfig",
    "build_initramfs",
    "cxl_type3_topology",
    "ensure_kernel",
    "load_image",
    "plain_topology",
]
