# SPDX-License-Identifier: Apache-2.0
"""Benches of the PCIe board wrapper (CxlTrackBoard) through cocotbext-pcie's UltraScale+ model."""
