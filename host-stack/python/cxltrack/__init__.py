# SPDX-License-Identifier: Apache-2.0
"""cxltrack host-side Python: register map, configuration, reference model,
shared test vectors and experiment tools."""
