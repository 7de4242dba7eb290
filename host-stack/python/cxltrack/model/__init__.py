# SPDX-License-Identifier: Apache-2.0
"""Reference model of the cxltrack device: the executable form of docs/spec.md."""

from .device import Device, MemResp, WriteToken
from .driver import ModelDriver

__all__ = ["Device", "MemResp", "ModelDriver", "WriteToken"]
