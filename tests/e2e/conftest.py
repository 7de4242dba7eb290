# SPDX-License-Identifier: Apache-2.0
"""Full-stack tests: each test boots QEMU's emulated CXL machine with the guest image."""

pytest_plugins = ["cxltrack.harness.pytest_plugin", "pytester"]
