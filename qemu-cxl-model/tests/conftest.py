# SPDX-License-Identifier: Apache-2.0
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import qemu_util


@pytest.fixture(scope="session")
def qemu_bin() -> str:
    return qemu_util.qemu_bin()
