# SPDX-License-Identifier: Apache-2.0
"""The shared corpus: fresh, replays on the reference model under several
race interleavings, catches a wrong answer, and rejects malformed files with
file, line and field."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cxltrack import regs
from cxltrack.config import named
from cxltrack.regs import Op
from cxltrack.vectors import generate
from cxltrack.vectors.format import Case, VectorFormatError, load, load_corpus, parse_lines
from cxltrack.vectors.replay import Mismatch, ModelTarget, replay

CORPUS = Path(__file__).resolve().parents[3] / "vectors"
CASES = load_corpus(CORPUS)
SCHEDULES = range(12)


def test_corpus_is_fresh() -> None:
    assert generate.main(["--out", str(CORPUS), "--check"]) == 0, "run `make vectors`"


def test_corpus_covers_everything_required() -> None:
    covered = set().union(*(c.covers for c in CASES))
    assert generate.required_coverage() <= covered


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_replay_on_model(case: Case) -> None:
    racy = any(op.op == "race" for op in case.ops)
    for schedule in SCHEDULES if racy else [0]:
        asyncio.run(replay(ModelTarget(named(case.config)), case, schedule))


def _mutated(name: str, op_name: str, mutate: str) -> Case:
    case = next(c for c in load_corpus(CORPUS) if c.name == name)
    op = next(o for o in case.ops if o.op == op_name)
    if mutate == "expect":
        op.f["expect"] ^= 1
    elif mutate == "code":
        op.f["expect"]["code"] = "RANGE" if op.f["expect"]["code"] == "OK" else "OK"
    elif mutate == "pages":
        op.f["pages"] = op.f["pages"][1:]
    elif mutate in ("hex_guard", "hex_mid"):
        data = bytearray(op.f["hex"])
        data[3 if mutate == "hex_guard" else len(data) // 2] ^= 1  # byte 3: before the buffer
        op.f["hex"] = bytes(data)
    return case


@pytest.mark.parametrize(
    ("name", "op", "mutate"),
    [
        ("reset_values", "reg_read", "expect"),
        ("harvest", "cmd", "code"),
        ("slots", "mem_read", "expect"),
        ("race_harvest_0", "check", "pages"),
        ("dma_harvest", "host_expect", "hex_mid"),  # a byte of the harvested bitmap
        ("dma_harvest", "host_expect", "hex_guard"),  # a byte before the buffer
        ("dma_errors", "cmd", "code"),
    ],
)
def test_replay_detects_a_wrong_answer(name: str, op: str, mutate: str) -> None:
    with pytest.raises(Mismatch, match=f"case '{name}'"):
        asyncio.run(replay(ModelTarget(named("small")), _mutated(name, op, mutate)))


HEAD = json.dumps({"case": "x", "config": "small", "covers": []})


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        ('{"op": "reg_read", "offset": 4}', "expect", "missing"),
        ('{"op": "reg_read", "offset": -4, "expect": 0}', "offset", "non-negative"),
        ('{"op": "mem_write", "addr": 3, "data": "0102", "resp": "okay"}', "data", "naturally aligned"),
        ('{"op": "mem_write", "addr": 0, "data": "zz", "resp": "okay"}', "data", "not hex"),
        ('{"op": "cmd", "name": "FROB", "expect": {"code": "OK"}}', "name", "command name"),
        ('{"op": "cmd", "name": "NOP", "expect": {"code": "MAYBE"}}', "expect.code", "unknown status"),
        ('{"op": "teleport"}', "op", "unknown operation"),
        ('{"op": "host_fill", "addr": 0, "len": 64, "byte": 1}', "op", "requirement 'dma'"),
        ('{"op": "cmd", "name": "HARVEST_DIRTY", "dma": true, "expect": {"code": "OK"}}', "op", "requirement 'dma'"),
        ('{"op": "host_expect", "addr": 0, "hex": "0"}', "hex", "even-length"),
        ('{"op": "tick", "n": 1, "extra": 2}', "extra", "unknown field"),
        (
            '{"op": "events", "expect": [{"type": "BOOM", "index": 0, "arg": 0}], "ordered": true}',
            "expect",
            "unknown event",
        ),
    ],
)
def test_malformed_vectors_name_file_line_field(line: str, field: str, words: str) -> None:
    with pytest.raises(VectorFormatError) as exc:
        parse_lines([HEAD, line], "v.jsonl")
    msg = str(exc.value)
    assert msg.startswith("v.jsonl:2:") and f"field '{field}'" in msg and words in msg, msg


def test_host_op_fields_are_checked() -> None:
    head = json.dumps({"case": "x", "config": "small", "covers": [], "requires": ["dma"]})
    for line, field in (
        ('{"op": "host_fill", "addr": 0, "len": 64, "byte": 256}', "byte"),
        ('{"op": "host_fault", "addr": 0, "len": 0}', "len"),
        ('{"op": "host_fault", "addr": 18446744073709551615, "len": 2}', "len"),
    ):
        with pytest.raises(VectorFormatError, match=f"v.jsonl:2: field '{field}'"):
            parse_lines([head, line], "v.jsonl")


def test_malformed_json_and_order(tmp_path: Path) -> None:
    with pytest.raises(VectorFormatError, match=r"v.jsonl:1: operation before the first case header"):
        parse_lines(['{"op": "settle"}'], "v.jsonl")
    with pytest.raises(VectorFormatError, match=r"v.jsonl:2: not JSON"):
        parse_lines([HEAD, "{nope"], "v.jsonl")
    with pytest.raises(VectorFormatError, match=r"no \*\.jsonl"):
        load_corpus(tmp_path)
    with pytest.raises(VectorFormatError, match="cannot read"):
        load(tmp_path / "absent.jsonl")


def test_a_reset_inside_a_case_restarts_the_launch_count() -> None:
    """A reset zeroes CMD_STATUS.SEQ (spec 11), so the replay's count of launches starts again
    with it; before, the first command after a reset failed "SEQ 1 after N: not one launch" on
    every implementation. A command that is not one launch after the reset still fails."""
    nop = json.dumps({"op": "cmd", "name": "NOP", "expect": {"code": "OK", "result0": 0, "result1": 0}})
    reset = json.dumps({"op": "reset"})
    (case,) = parse_lines([HEAD, nop, nop, nop, reset, nop, nop], "v.jsonl")
    asyncio.run(replay(ModelTarget(named("small")), case))

    class SkipsALaunch(ModelTarget):
        """After its reset, the device counts one launch that the replay did not make."""

        async def reset(self) -> None:
            await super().reset()
            self.dev.reg_write(regs.CMD_OP, int(Op.NOP))
            self.dev.settle()

    (case,) = parse_lines([HEAD, nop, reset, nop], "v.jsonl")
    with pytest.raises(Mismatch, match="not one launch"):
        asyncio.run(replay(SkipsALaunch(named("small")), case))
