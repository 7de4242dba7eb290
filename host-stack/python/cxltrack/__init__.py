# SPDX-License-Identifier: Apache-2.0
"""cxltrack host software."""
