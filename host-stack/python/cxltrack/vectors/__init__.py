# SPDX-License-Identifier: Apache-2.0
"""Shared test vectors: format, generator and replay engine (docs/vectors.md)."""
