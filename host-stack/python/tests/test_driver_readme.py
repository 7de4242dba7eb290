# SPDX-License-Identifier: Apache-2.0
"""driver/README.md gives the uapi version the header defines: the README said 8 while the header said 9
(fixed in 98c4fb0), and nothing tied the two together."""

from __future__ import annotations

import re
from pathlib import Path

TOP = Path(__file__).resolve().parents[3]


def test_the_readme_names_the_headers_uapi_version() -> None:
    header = (TOP / "driver" / "include" / "uapi" / "linux" / "cxltrack.h").read_text()
    defined = re.search(r"^#define CXLT_UAPI_VERSION\s+(\d+)\s*$", header, re.M)
    assert defined, "no CXLT_UAPI_VERSION in the uapi header"
    readme = (TOP / "driver" / "README.md").read_text()
    named = re.findall(r"`CXLT_UAPI_VERSION`\s+(\d+)", readme)
    assert named, "driver/README.md does not name CXLT_UAPI_VERSION with its value"
    assert set(named) == {defined.group(1)}, f"README names {sorted(set(named))}, the header defines {defined.group(1)}"
