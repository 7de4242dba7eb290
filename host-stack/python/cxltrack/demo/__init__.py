# SPDX-License-Identifier: Apache-2.0
"""Demonstration scenarios."""
