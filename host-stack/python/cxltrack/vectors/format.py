# SPDX-License-Identifier: Apache-2.0
"""The shared test-vector format (docs/vectors.md): JSON lines, one case
header followed by its operations. Loading validates every field; an error
names the file, the line and the field."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cxltrack.regs import Event, Op, Status

RESPS = ("okay", "decerr")
# Capabilities a case may require of an implementation (docs/vectors.md).
REQUIREMENTS = {
    "sized_reads": "the control port carries the size of a read (sub-word, 64-bit and unaligned register "
    "reads reach the device as issued); a 32-bit AXI4-Lite port or a CPU path that splits them does not",
    "sized_writes": "a 64-bit register write reaches the device as one access; a 32-bit AXI4-Lite port receives "
    "it as two full-strobe 32-bit writes",
    "dma": "the device writes harvests to host memory (CMD_OP.DMA, CAP_DMA, docs/spec.md 5.3) and the runner can "
    "fill, check and fault host memory (host_fill, host_expect, host_fault)",
    "dma_list": "the device writes list harvests (CMD_OP.LIST, CAP_DMA.LIST, docs/spec.md 5.4); with 'dma'",
    "dma_copy": "the device has CHUNK_COPY (CAP_DMA.COPY, docs/spec.md 7.1): it copies an owned chunk to host "
    "memory by DMA",
}
# Host memory the dma cases use (docs/vectors.md "Host memory"): buffers from HOST_BASE (guest RAM in
# the QEMU runner, which has 2 GiB from 0), faults at HOST_FAULT_BASE (nothing mapped there).
HOST_BASE = 256 << 20
HOST_FAULT_BASE = 1 << 40
HOST_OPS = ("host_fill", "host_expect", "host_fault")
RACE_KINDS = ("harvest", "discard", "merge")
CHECK_KINDS = ("harvest_union",)


class VectorFormatError(ValueError):
    """A vector file is malformed; the message says where."""


@dataclass
class VOp:
    """One operation: its name, validated fields and where it came from."""

    op: str
    f: dict[str, Any]
    line: int


@dataclass
class Case:
    name: str
    config: str
    covers: list[str]
    source: str
    line: int
    ops: list[VOp] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)

    def missing(self, has: set[str]) -> list[str]:
        """The requirements of this case that an implementation with capabilities `has` lacks."""
        return [r for r in self.requires if r not in has]


_INT = "int"
_HEX = "hex"
_BOOL = "bool"
# op -> {field: (type, required)}
_CMD_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("opname", True),
    "args": ("args", False),
    "clear": (_BOOL, False),
    "decay": (_BOOL, False),
    "dma": (_BOOL, False),
    "list": (_BOOL, False),
    "rsvd": (_INT, False),
}
_SCHEMA: dict[str, dict[str, tuple[str, bool]]] = {
    "reset": {},
    "settle": {},
    "tick": {"n": (_INT, True)},
    "reg_read": {"offset": (_INT, True), "size": (_INT, False), "expect": (_INT, True)},
    "reg_write": {"offset": (_INT, True), "value": (_INT, True), "size": (_INT, False), "strobe": (_INT, False)},
    "mem_read": {
        "addr": (_INT, True),
        "size": (_INT, True),
        "resp": ("resp", True),
        "expect": (_INT, False),
        "expect_one_of": ("intlist", False),
    },
    "mem_write": {"addr": (_INT, True), "data": (_HEX, True), "resp": ("resp", True)},
    "cmd": {**_CMD_FIELDS, "expect": ("expect", True), "as": ("str", False)},
    "events": {"expect": ("eventlist", True), "ordered": (_BOOL, True)},
    "race": {
        "kind": ("racekind", True),
        "cmd": ("cmd", True),
        "writes": ("writes", True),
        "as": ("str", True),
        "expect_one_of": ("expectlist", True),
    },
    "host_fill": {"addr": (_INT, True), "len": (_INT, True), "byte": (_INT, True)},
    "host_expect": {"addr": (_INT, True), "hex": (_HEX, True)},
    "host_fault": {"addr": (_INT, True), "len": (_INT, True)},
    "check": {
        "kind": ("checkkind", True),
        "of": ("strlist", True),
        "start": (_INT, True),
        "count": (_INT, True),
        "pages": ("intlist", True),
    },
}
_EXPECT_FIELDS = {"code", "result0", "result1", "window"}


def _fail(src: str, line: int, name: str, msg: str) -> VectorFormatError:
    return VectorFormatError(f"{src}:{line}: field '{name}': {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check(kind: str, v: Any, src: str, line: int, name: str) -> Any:
    def bad(msg: str) -> VectorFormatError:
        return _fail(src, line, name, msg)

    match kind:
        case "int":
            if not _is_int(v):
                raise bad(f"must be a non-negative integer, not {v!r}")
        case "bool":
            if not isinstance(v, bool):
                raise bad(f"must be true or false, not {v!r}")
        case "str":
            if not isinstance(v, str) or not v:
                raise bad(f"must be a non-empty string, not {v!r}")
        case "hex":
            if not isinstance(v, str) or len(v) % 2:
                raise bad(f"must be an even-length hex string, not {v!r}")
            try:
                return bytes.fromhex(v)
            except ValueError:
                raise bad(f"is not hex: {v!r}") from None
        case "resp":
            if v not in RESPS:
                raise bad(f"must be one of {RESPS}, not {v!r}")
        case "opname":
            # An opcode name, or a raw opcode number (to test undefined ones).
            if not (v in Op.__members__ or (_is_int(v) and v <= 0xFF)):
                raise bad(f"must be a command name or an opcode 0..255, not {v!r}")
        case "racekind":
            if v not in RACE_KINDS:
                raise bad(f"must be one of {RACE_KINDS}, not {v!r}")
        case "checkkind":
            if v not in CHECK_KINDS:
                raise bad(f"must be one of {CHECK_KINDS}, not {v!r}")
        case "args":
            if not isinstance(v, list) or len(v) > 3 or not all(_is_int(a) and a < 1 << 64 for a in v):
                raise bad("must be a list of up to 3 non-negative integers below 2^64 (64-bit arguments)")
        case "intlist":
            if not isinstance(v, list) or not all(_is_int(a) for a in v):
                raise bad("must be a list of non-negative integers")
        case "strlist":
            if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
                raise bad("must be a list of strings")
        case "expect":
            return _check_expect(v, src, line, name)
        case "expectlist":
            if not isinstance(v, list) or not v:
                raise bad("must be a non-empty list of expectations")
            return [_check_expect(e, src, line, f"{name}[{i}]") for i, e in enumerate(v)]
        case "eventlist":
            if not isinstance(v, list):
                raise bad("must be a list of events")
            for i, e in enumerate(v):
                if not isinstance(e, dict) or set(e) != {"type", "index", "arg"}:
                    raise bad(f"[{i}] must have exactly type, index, arg")
                if e["type"] not in Event.__members__:
                    raise bad(f"[{i}].type: unknown event {e['type']!r}")
                if not _is_int(e["index"]) or not _is_int(e["arg"]):
                    raise bad(f"[{i}]: index and arg must be non-negative integers")
        case "cmd":
            if not isinstance(v, dict):
                raise bad("must be an object")
            return _check_fields(v, _CMD_FIELDS, src, line, f"{name}.")
        case "writes":
            if not isinstance(v, list) or not v:
                raise bad("must be a non-empty list of {addr, data}")
            out = []
            for i, w in enumerate(v):
                if not isinstance(w, dict) or set(w) != {"addr", "data"}:
                    raise bad(f"[{i}] must have exactly addr and data")
                out.append(_check_fields(w, {"addr": (_INT, True), "data": (_HEX, True)}, src, line, f"{name}[{i}]."))
            return out
        case _:
            raise AssertionError(kind)
    return v


def _check_expect(v: Any, src: str, line: int, name: str) -> dict[str, Any]:
    if not isinstance(v, dict) or "code" not in v or set(v) - _EXPECT_FIELDS:
        raise _fail(
            src, line, name, f"must be an object with 'code' and optionally {sorted(_EXPECT_FIELDS - {'code'})}"
        )
    out = dict(v)
    if v["code"] not in Status.__members__:
        raise _fail(src, line, f"{name}.code", f"unknown status {v['code']!r}")
    for k in ("result0", "result1"):
        if k in v and not _is_int(v[k]):
            raise _fail(src, line, f"{name}.{k}", "must be a non-negative integer")
    if "window" in v:
        out["window"] = _check("hex", v["window"], src, line, f"{name}.window")
    return out


def _check_fields(
    obj: dict[str, Any], schema: dict[str, tuple[str, bool]], src: str, line: int, prefix: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in obj:
        if key not in schema:
            raise _fail(src, line, prefix + key, f"unknown field (expected {sorted(schema)})")
    for key, (kind, required) in schema.items():
        if key not in obj:
            if required:
                raise _fail(src, line, prefix + key, "missing")
            continue
        out[key] = _check(kind, obj[key], src, line, prefix + key)
    return out


def _check_sizes(vop: VOp, src: str) -> None:
    f = vop.f
    if vop.op == "host_fill" and f["byte"] > 0xFF:
        raise _fail(src, vop.line, "byte", f"must be 0..255, not {f['byte']}")
    if vop.op in ("host_fill", "host_fault") and (f["len"] == 0 or f["addr"] + f["len"] > 1 << 64):
        raise _fail(src, vop.line, "len", "must be non-zero and end within 2^64")
    if vop.op in ("mem_read", "reg_read", "reg_write"):
        size = f.get("size", 4)
        if size not in (1, 2, 4, 8):
            raise _fail(src, vop.line, "size", f"must be 1, 2, 4 or 8, not {size}")
    if vop.op == "mem_read":
        if f["addr"] % f["size"]:
            raise _fail(src, vop.line, "addr", f"{f['addr']:#x} is not aligned to size {f['size']}")
        if ("expect" in f) == ("expect_one_of" in f):
            raise _fail(src, vop.line, "expect", "give exactly one of expect and expect_one_of")
    if vop.op == "mem_write" or vop.op == "race":
        writes = f["writes"] if vop.op == "race" else [f]
        for w in writes:
            n = len(w["data"])
            if n not in (1, 2, 4, 8) or w["addr"] % n:
                raise _fail(src, vop.line, "data", f"{n} bytes at {w['addr']:#x}: need 1, 2, 4 or 8 naturally aligned")


def parse_lines(lines: list[str], source: str) -> list[Case]:
    cases: list[Case] = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise VectorFormatError(f"{source}:{n}: not JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise VectorFormatError(f"{source}:{n}: a line must be a JSON object")
        if "case" in obj:
            hdr = _check_fields(
                obj,
                {
                    "case": ("str", True),
                    "config": ("str", True),
                    "covers": ("strlist", True),
                    "requires": ("strlist", False),
                },
                source,
                n,
            )
            for req in hdr.get("requires", []):
                if req not in REQUIREMENTS:
                    raise _fail(source, n, "requires", f"unknown requirement {req!r} (known: {sorted(REQUIREMENTS)})")
            cases.append(Case(hdr["case"], hdr["config"], hdr["covers"], source, n, requires=hdr.get("requires", [])))
            continue
        if "op" not in obj:
            raise _fail(source, n, "op", "missing (a line is a case header or an operation)")
        if not cases:
            raise VectorFormatError(f"{source}:{n}: operation before the first case header")
        name = obj["op"]
        if name not in _SCHEMA:
            raise _fail(source, n, "op", f"unknown operation {name!r}")
        body = {k: v for k, v in obj.items() if k != "op"}
        vop = VOp(name, _check_fields(body, _SCHEMA[name], source, n), n)
        _check_sizes(vop, source)
        uses_dma = name in HOST_OPS or (name == "cmd" and vop.f.get("dma"))
        if uses_dma and "dma" not in cases[-1].requires:
            # A runner decides what to skip from the header alone: it must not meet host memory unannounced.
            raise _fail(source, n, "op", f"{name} needs the case to declare requirement 'dma'")
        if name == "cmd" and vop.f.get("list") and "dma_list" not in cases[-1].requires:
            raise _fail(source, n, "list", "a LIST command needs the case to declare requirement 'dma_list'")
        if name == "cmd" and vop.f["name"] == "CHUNK_COPY" and "dma_copy" not in cases[-1].requires:
            raise _fail(source, n, "op", "CHUNK_COPY needs the case to declare requirement 'dma_copy'")
        cases[-1].ops.append(vop)
    return cases


def load(path: str | Path) -> list[Case]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise VectorFormatError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_lines(text.splitlines(), str(p))


def load_corpus(directory: str | Path) -> list[Case]:
    files = sorted(Path(directory).glob("*.jsonl"))
    if not files:
        raise VectorFormatError(f"{directory}: no *.jsonl vector files")
    cases: list[Case] = []
    for f in files:
        cases += load(f)
    return cases
