# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

import pytest

from cxltrack.config import DeviceConfig, named
from cxltrack.model import Device, ModelDriver


@pytest.fixture
def small() -> DeviceConfig:
    return named("small")


@pytest.fixture
def dev(small: DeviceConfig) -> Device:
    return Device(small)


@pytest.fixture
def drv(dev: Device) -> ModelDriver:
    return ModelDriver(dev)
