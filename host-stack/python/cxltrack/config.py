# SPDX-License-Identifier: Apache-2.0
"""Device configuration (docs/spec.md section 1.1), loaded from TOML.

Every error names the file, the line and the field, and nothing is returned
half-validated: either a complete DeviceConfig or a ConfigError.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from cxltrack import regs

CONFIG_DIR = Path(__file__).resolve().parents[3] / "config"


class ConfigError(ValueError):
    """A configuration file is malformed; the message says where."""


@dataclass(frozen=True)
class DeviceConfig:
    capacity_bytes: int
    page_shift: int
    slots: int
    hot_bits: int
    evq_depth_log2: int
    chunk_shift: int
    bat_disk_bits: int
    bat_block_bits: int
    tick_ns: int

    @property
    def page_size(self) -> int:
        return 1 << self.page_shift

    @property
    def pages(self) -> int:
        return self.capacity_bytes >> self.page_shift

    @property
    def chunk_size(self) -> int:
        return 1 << self.chunk_shift

    @property
    def chunks(self) -> int:
        return self.capacity_bytes >> self.chunk_shift

    @property
    def pages_per_chunk(self) -> int:
        return 1 << (self.chunk_shift - self.page_shift)

    @property
    def hot_max(self) -> int:
        return (1 << self.hot_bits) - 1

    @property
    def evq_depth(self) -> int:
        return 1 << self.evq_depth_log2


# Legal range of each field, from the register map (regmap/cxltrack.rdl, docs/registers.md).
_RANGES: dict[str, tuple[int, int]] = regs.CONFIG_RANGES


def _line_of(text: str, key: str) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return n
    return 0


def parse(text: str, source: str = "<string>") -> DeviceConfig:
    def fail(key: str, msg: str) -> ConfigError:
        line = _line_of(text, key)
        where = f"{source}:{line}" if line else source
        return ConfigError(f"{where}: field '{key}': {msg}")

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    names = [f.name for f in fields(DeviceConfig)]
    # [rtl]: implementation keys of the RTL generator (rtl/src/cxltrack/Config.scala: where the tables live, the
    # update cache's size); they do not change what the device reports, so the model has nothing to read there
    rtl = raw.pop("rtl", {})
    if not isinstance(rtl, dict):
        raise fail("rtl", "must be a [rtl] section")
    for key in raw:
        if key not in names:
            raise fail(key, f"unknown field (known: {', '.join(names)})")
    values: dict[str, int] = {}
    for key in names:
        if key not in raw:
            raise ConfigError(f"{source}: field '{key}': missing")
        val = raw[key]
        if not isinstance(val, int) or isinstance(val, bool):
            raise fail(key, f"must be an integer, not {val!r}")
        lo, hi = _RANGES[key]
        if not lo <= val <= hi:
            raise fail(key, f"{val} is outside {lo}..{hi}")
        values[key] = val
    cfg = DeviceConfig(**values)
    if cfg.chunk_shift < cfg.page_shift:
        raise fail("chunk_shift", f"{cfg.chunk_shift} is smaller than page_shift {cfg.page_shift}")
    if cfg.capacity_bytes % (cfg.page_size * 64):
        raise fail("capacity_bytes", f"{cfg.capacity_bytes} is not a multiple of 64 pages ({cfg.page_size * 64} bytes)")
    if cfg.capacity_bytes % cfg.chunk_size:
        raise fail("capacity_bytes", f"{cfg.capacity_bytes} is not a multiple of the chunk size {cfg.chunk_size}")
    if cfg.chunks > regs.MAX_CHUNKS:
        raise fail("chunk_shift", f"{cfg.chunks} chunks; at most {regs.MAX_CHUNKS} fit a CHUNK_LIST bitmap")
    return cfg


def load(path: str | Path) -> DeviceConfig:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror}") from None
    return parse(text, str(p))


def named(name: str) -> DeviceConfig:
    """A configuration shipped in config/: 'default' or 'small'."""
    return load(CONFIG_DIR / f"{name}.toml")
