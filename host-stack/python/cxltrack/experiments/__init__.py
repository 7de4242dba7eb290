# SPDX-License-Identifier: Apache-2.0
"""Experiments that reproduce a seed paper's effect on the nested harness, baseline against device."""

from __future__ import annotations

from pathlib import Path

from cxltrack import config as cxlconfig
from cxltrack.harness.nested import Host, boot_host, env_host_image, load_host_image
from cxltrack.harness.pytest_plugin import qemu_binary
from cxltrack.harness.tracker import tracker_topology


def boot_default_host(workdir: Path, region: str) -> Host:
    """An experiment's L1 host on the default device configuration: the project's QEMU
    (CXLTRACK_QEMU), the host image (CXLTRACK_HOST_IMAGE), the region as given."""
    return boot_host(
        qemu_binary(),
        load_host_image(env_host_image()),
        tracker_topology(cxlconfig.named("default")),
        workdir,
        region=region,
    )
