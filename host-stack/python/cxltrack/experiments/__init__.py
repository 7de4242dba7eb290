# SPDX-License-Identifier: Apache-2.0
"""Experiments that reproduce a seed paper's effect on the nested harness, baseline against device."""
