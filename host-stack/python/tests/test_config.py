# SPDX-License-Identifier: Apache-2.0
"""Configuration loading: the shipped files load; bad ones name file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from cxltrack.config import ConfigError, load, named, parse

GOOD = (Path(__file__).resolve().parents[3] / "config" / "small.toml").read_text()


def test_shipped_configs_load() -> None:
    d = named("default")
    assert d.pages == 65536 and d.chunks == 128 and d.slots == 8
    s = named("small")
    assert s.pages == 256 and s.chunks == 16 and s.evq_depth == 8 and s.hot_max == 15


@pytest.mark.parametrize(
    ("edit", "line", "field", "words"),
    [
        (("slots = 4", "slots = 17"), 7, "slots", "outside 1..16"),
        (("hot_bits = 4", 'hot_bits = "4"'), 8, "hot_bits", "must be an integer"),
        (("page_shift = 12", "page_shift = 12\ncolour = 3"), 7, "colour", "unknown field"),
        (("capacity_bytes = 1048576", "capacity_bytes = 1048577"), 5, "capacity_bytes", "not a multiple"),
        (("chunk_shift = 16", "chunk_shift = 31"), 10, "chunk_shift", "outside 12..30"),
        (("capacity_bytes = 1048576", "capacity_bytes = 1099511627776"), 10, "chunk_shift", "at most 32768"),
        (("tick_ns = 1000", "tick_ns = true"), 13, "tick_ns", "must be an integer"),
    ],
)
def test_bad_field_names_file_line_field(edit: tuple[str, str], line: int, field: str, words: str) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    with pytest.raises(ConfigError) as exc:
        parse(text, "cfg.toml")
    msg = str(exc.value)
    assert f"field '{field}'" in msg and words in msg
    assert msg.startswith(f"cfg.toml:{line}:"), msg


def test_missing_field_and_bad_syntax(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="field 'tick_ns': missing"):
        parse(GOOD.replace("tick_ns = 1000", ""), "x.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("slots = = 3\n")
    with pytest.raises(ConfigError, match=str(bad)):
        load(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "absent.toml")


def test_rtl_section_is_ignored_by_the_model() -> None:
    """[rtl] holds implementation keys of the RTL generator (where the tables live); the device is the same."""
    assert parse(GOOD + "\n[rtl]\ndram_tables = 1\nupdate_cache_entries = 4\n") == parse(GOOD)
    assert load(Path(__file__).resolve().parents[3] / "config" / "dram1t.toml").pages == 1 << 28
    with pytest.raises(ConfigError, match="field 'rtl'"):
        parse(GOOD + "rtl = 3\n", "x.toml")
