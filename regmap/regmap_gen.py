# SPDX-License-Identifier: Apache-2.0
"""Generate every derived form of regmap/cxltrack.rdl.

One walk over the elaborated SystemRDL feeds four emitters, so the C header
(driver, QEMU, tools), the Python module (reference model, host stack), the
Scala object (RTL) and the Markdown tables (docs) cannot disagree. PeakRDL's
cheader/python exporters were not used: the kernel and QEMU want plain macros
without <stdint.h>, the model wants plain typed constants, and PeakRDL has no
Scala exporter; one small emitter set keeps all four in step.

    python regmap/regmap_gen.py            # write the generated files
    python regmap/regmap_gen.py --check    # exit 1 if any is stale
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from systemrdl.compiler import RDLCompiler
from systemrdl.messages import RDLCompileError
from systemrdl.node import AddrmapNode, FieldNode, MemNode, RegNode

TOP = Path(__file__).resolve().parent.parent
RDL = TOP / "regmap" / "cxltrack.rdl"
OUTPUTS = {
    "c": TOP / "regmap" / "generated" / "cxltrack_regs.h",
    "py": TOP / "host-stack" / "python" / "cxltrack" / "regs.py",
    "scala": TOP / "rtl" / "src" / "cxltrack" / "Regs.scala",
    "md": TOP / "docs" / "registers.md",
}
BANNER = "Generated from regmap/cxltrack.rdl by regmap/regmap_gen.py. Do not edit."
UDPS = [
    "pci_vendor_id",
    "pci_device_id",
    "pci_mem_device_id",
    "bar",
    "bar_size",
    "harvest_align_pages",
    "msix_vectors",
]


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    sw: str  # "r", "w", "rw"
    woclr: bool
    reset: int
    encode: str | None
    desc: str

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    width: int
    fields: tuple[Field, ...]
    title: str
    desc: str

    @property
    def reset(self) -> int:
        return sum(f.reset << f.lsb for f in self.fields)


@dataclass(frozen=True)
class Window:
    name: str
    offset: int
    size: int
    count: int
    stride: int
    sw: str
    title: str
    desc: str


@dataclass(frozen=True)
class Enum:
    name: str  # e.g. "SLOT_STATE" (from cxlt_slot_state_e)
    values: tuple[tuple[str, int, str], ...]


@dataclass(frozen=True)
class Map:
    constants: tuple[tuple[str, int], ...]
    registers: tuple[Register, ...]
    windows: tuple[Window, ...]
    layouts: tuple[Register, ...]
    enums: tuple[Enum, ...]


def _access(node: FieldNode) -> str:
    name: str = node.get_property("sw").name
    return name


def _enum_name(type_name: str) -> str:
    name = type_name
    if name.startswith("cxlt_"):
        name = name[len("cxlt_") :]
    if name.endswith("_e"):
        name = name[: -len("_e")]
    return name.upper()


def _register(node: RegNode, enums: dict[str, Enum]) -> Register:
    fields = []
    for f in node.fields():
        enc = f.get_property("encode")
        enc_name = None
        if enc is not None:
            enc_name = _enum_name(enc.type_name)
            enums.setdefault(
                enc_name,
                Enum(enc_name, tuple((m.name, m.value, m.rdl_desc or "") for m in enc)),
            )
        onwrite = f.get_property("onwrite")
        fields.append(
            Field(
                name=f.inst_name,
                lsb=f.lsb,
                width=f.width,
                sw=_access(f),
                woclr=onwrite is not None and onwrite.name == "woclr",
                reset=int(f.get_property("reset") or 0),  # type: ignore[arg-type]
                encode=enc_name,
                desc=f.get_property("desc") or "",
            )
        )
    return Register(
        name=node.inst_name,
        offset=node.raw_address_offset,
        width=node.get_property("regwidth"),
        fields=tuple(sorted(fields, key=lambda f: f.lsb)),
        title=node.get_property("name") or node.inst_name,
        desc=node.get_property("desc") or "",
    )


def load(path: Path = RDL) -> Map:
    rdlc = RDLCompiler()
    rdlc.compile_file(str(path))
    top = rdlc.elaborate("cxltrack").top
    lay = rdlc.elaborate("cxltrack_layouts").top
    assert isinstance(top, AddrmapNode) and isinstance(lay, AddrmapNode)
    enums: dict[str, Enum] = {}
    regs: list[Register] = []
    wins: list[Window] = []
    for child in top.children(unroll=False):
        if isinstance(child, RegNode):
            regs.append(_register(child, enums))
        elif isinstance(child, MemNode):
            dims = child.array_dimensions
            count = dims[0] if dims else 1
            stride = child.array_stride or child.size
            wins.append(
                Window(
                    name=child.inst_name,
                    offset=child.raw_address_offset,
                    size=child.size,
                    count=count,
                    stride=stride,
                    sw=child.get_property("sw").name,
                    title=child.get_property("name") or child.inst_name,
                    desc=child.get_property("desc") or "",
                )
            )
    layouts = [_register(c, enums) for c in lay.children() if isinstance(c, RegNode)]
    consts = tuple((u.upper(), int(top.get_property(u))) for u in UDPS)
    return Map(consts, tuple(regs), tuple(wins), tuple(layouts), tuple(sorted(enums.values(), key=lambda e: e.name)))


def _hex(v: int, width: int) -> str:
    return f"0x{v:0{(width + 3) // 4}x}"


def emit_c(m: Map) -> str:
    out = [
        "/* SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0 */",
        f"/* {BANNER} */",
        "#ifndef CXLTRACK_REGS_H",
        "#define CXLTRACK_REGS_H",
        "",
        "/*",
        " * Plain macros only (no includes) so that the Linux driver, the QEMU",
        " * device model and user-space tools can all include this file.",
        " */",
        "",
    ]
    for name, value in m.constants:
        out.append(f"#define CXLT_{name} 0x{value:x}")
    out.append("")

    def fields(prefix: str, reg: Register, suffix: str) -> None:
        for f in reg.fields:
            out.append(f"#define {prefix}_{f.name}_SHIFT {f.lsb}")
            out.append(f"#define {prefix}_{f.name}_MASK {_hex(f.mask, reg.width)}{suffix}")

    for r in m.registers:
        out.append(f"/* {r.title} */")
        out.append(f"#define CXLT_{r.name} 0x{r.offset:03x}")
        out.append(f"#define CXLT_{r.name}_RESET {_hex(r.reset, 32)}U")
        fields(f"CXLT_{r.name}", r, "U")
        out.append("")
    for w in m.windows:
        out.append(f"/* {w.title} */")
        out.append(f"#define CXLT_{w.name} 0x{w.offset:05x}")
        out.append(f"#define CXLT_{w.name}_SIZE 0x{w.size:x}")
        if w.count > 1:
            out.append(f"#define CXLT_{w.name}_COUNT {w.count}")
            out.append(f"#define CXLT_{w.name}_STRIDE 0x{w.stride:x}")
            out.append(f"#define CXLT_{w.name}_N(n) (CXLT_{w.name} + (n) * CXLT_{w.name}_STRIDE)")
        out.append("")
    for r in m.layouts:
        out.append(f"/* Layout: {r.title} */")
        fields(f"CXLT_LAYOUT_{r.name}", r, "ULL")
        out.append("")
    for e in m.enums:
        for name, value, _ in e.values:
            out.append(f"#define CXLT_{e.name}_{name} 0x{value:02x}")
        out.append("")
    out.append("#endif /* CXLTRACK_REGS_H */")
    return "\n".join(out) + "\n"


def _py_enum_class(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def emit_py(m: Map) -> str:
    out = [
        "# SPDX-License-Identifier: Apache-2.0",
        f"# {BANNER}",
        '"""Register map of the cxltrack tracker (BAR0 of PCI function 1)."""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass",
        "from enum import IntEnum",
        "from typing import Final",
        "",
        "",
        "@dataclass(frozen=True)",
        "class Field:",
        "    name: str",
        "    lsb: int",
        "    width: int",
        "    sw: str",
        "    woclr: bool",
        "    reset: int",
        "",
        "    @property",
        "    def mask(self) -> int:",
        "        return ((1 << self.width) - 1) << self.lsb",
        "",
        "    def get(self, value: int) -> int:",
        "        return (value >> self.lsb) & ((1 << self.width) - 1)",
        "",
        "    def put(self, value: int) -> int:",
        "        if value >> self.width:",
        "            raise ValueError(f'{self.name}: {value:#x} does not fit in {self.width} bits')",
        "        return value << self.lsb",
        "",
        "",
        "@dataclass(frozen=True)",
        "class Register:",
        "    name: str",
        "    offset: int",
        "    fields: tuple[Field, ...]",
        "",
        "    @property",
        "    def reset(self) -> int:",
        "        return sum(f.reset << f.lsb for f in self.fields)",
        "",
        "    def field(self, name: str) -> Field:",
        "        for f in self.fields:",
        "            if f.name == name:",
        "                return f",
        "        raise KeyError(f'{self.name} has no field {name}')",
        "",
        "",
    ]
    for name, value in m.constants:
        out.append(f"{name}: Final = 0x{value:x}")
    out.append("")
    for e in m.enums:
        out.append("")
        out.append(f"class {_py_enum_class(e.name)}(IntEnum):")
        for name, value, desc in e.values:
            out.append(f"    {name} = 0x{value:02x}  # {desc}")
        out.append("")

    def reg_expr(r: Register) -> str:
        fs = ", ".join(f"Field({f.name!r}, {f.lsb}, {f.width}, {f.sw!r}, {f.woclr}, 0x{f.reset:x})" for f in r.fields)
        return f"Register({r.name!r}, 0x{r.offset:x}, ({fs},))"

    out.append("")
    out.append("REGISTERS: Final[dict[str, Register]] = {")
    for r in m.registers:
        out.append(f"    {r.name!r}: {reg_expr(r)},")
    out.append("}")
    out.append("LAYOUTS: Final[dict[str, Register]] = {")
    for r in m.layouts:
        out.append(f"    {r.name!r}: {reg_expr(r)},")
    out.append("}")
    out.append("")
    for r in m.registers:
        out.append(f"{r.name}: Final = 0x{r.offset:03x}")
    out.append("")
    for w in m.windows:
        out.append(f"{w.name}: Final = 0x{w.offset:05x}")
        out.append(f"{w.name}_SIZE: Final = 0x{w.size:x}")
        out.append(f"{w.name}_COUNT: Final = {w.count}")
        out.append(f"{w.name}_STRIDE: Final = 0x{w.stride:x}")
    return "\n".join(out) + "\n"


def emit_scala(m: Map) -> str:
    out = [
        "// SPDX-License-Identifier: Apache-2.0",
        f"// {BANNER}",
        "package cxltrack",
        "",
        "/** Register map of the cxltrack tracker: offsets, field positions, enums. */",
        "object Regs {",
    ]
    for name, value in m.constants:
        out.append(f'  val {name}: BigInt = BigInt("{value:x}", 16)')
    out.append("")

    def reg_obj(prefix: str, r: Register) -> None:
        out.append(f"  object {prefix}{r.name} {{")
        if not prefix:
            out.append(f"    val OFFSET: Int = 0x{r.offset:x}")
            out.append(f'    val RESET: BigInt = BigInt("{r.reset:x}", 16)')
        for f in r.fields:
            out.append(f"    val {f.name}_LSB: Int = {f.lsb}")
            out.append(f"    val {f.name}_WIDTH: Int = {f.width}")
        out.append("  }")

    for r in m.registers:
        reg_obj("", r)
    for r in m.layouts:
        reg_obj("LAYOUT_", r)
    for w in m.windows:
        out.append(f"  object {w.name} {{")
        out.append(f"    val OFFSET: Int = 0x{w.offset:x}")
        out.append(f"    val SIZE: Int = 0x{w.size:x}")
        out.append(f"    val COUNT: Int = {w.count}")
        out.append(f"    val STRIDE: Int = 0x{w.stride:x}")
        out.append("  }")
    for e in m.enums:
        out.append(f"  object {_py_enum_class(e.name)} {{")
        for name, value, _ in e.values:
            out.append(f"    val {name}: Int = 0x{value:02x}")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def emit_md(m: Map) -> str:
    out = [
        "<!-- SPDX-License-Identifier: Apache-2.0 -->",
        f"<!-- {BANNER} -->",
        "# cxltrack register map",
        "",
        "BAR0 of PCI function 1. All registers are 32-bit and take only aligned 32-bit",
        'accesses (docs/spec.md, "Illegal accesses"). Access: `r` read-only, `rw`',
        "read-write, `w` write-only, `rw1c` write 1 to clear.",
        "",
        "## Constants",
        "",
        "| name | value |",
        "|---|---|",
    ]
    for name, value in m.constants:
        out.append(f"| `{name}` | `0x{value:x}` |")
    out += ["", "## Registers", "", "| offset | register | reset | description |", "|---|---|---|---|"]
    for r in m.registers:
        out.append(f"| `0x{r.offset:03x}` | `{r.name}` | `0x{r.reset:08x}` | {_md(r.title)}. {_md(r.desc)} |")
    out += ["", "## Windows", "", "| offset | window | size | count x stride | description |", "|---|---|---|---|---|"]
    for w in m.windows:
        out.append(
            f"| `0x{w.offset:05x}` | `{w.name}` | `0x{w.size:x}` | {w.count} x `0x{w.stride:x}` | {_md(w.desc)} |"
        )
    out += ["", "## Fields", ""]

    def fields(r: Register, title: str) -> None:
        out.append(f"### {title}")
        out.append("")
        out.append("| bits | field | access | reset | description |")
        out.append("|---|---|---|---|---|")
        for f in reversed(r.fields):
            bits = f"{f.lsb + f.width - 1}:{f.lsb}" if f.width > 1 else f"{f.lsb}"
            acc = "rw1c" if f.woclr else f.sw
            enc = f" Values: `{f.encode}`." if f.encode else ""
            out.append(f"| {bits} | `{f.name}` | {acc} | `0x{f.reset:x}` | {_md(f.desc)}{enc} |")
        out.append("")

    for r in m.registers:
        fields(r, f"`{r.name}` (0x{r.offset:03x}) — {r.title}")
    out += ["## Result and argument layouts (64-bit)", ""]
    for r in m.layouts:
        fields(r, f"`{r.name}` — {r.title}")
    out += ["## Enumerations", ""]
    for e in m.enums:
        out.append(f"### `{e.name}`")
        out.append("")
        out.append("| value | name | meaning |")
        out.append("|---|---|---|")
        for name, value, desc in e.values:
            out.append(f"| `0x{value:02x}` | `{name}` | {_md(desc)} |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


EMITTERS = {"c": emit_c, "py": emit_py, "scala": emit_scala, "md": emit_md}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if a generated file is stale; write nothing")
    ap.add_argument("--rdl", type=Path, default=RDL)
    args = ap.parse_args(argv)
    try:
        regmap = load(args.rdl)
    except RDLCompileError as exc:
        print(f"regmap_gen: {args.rdl}: {exc}", file=sys.stderr)
        return 2
    stale = 0
    for kind, path in OUTPUTS.items():
        text = EMITTERS[kind](regmap)
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        rel = path.relative_to(TOP)
        if args.check:
            stale += 1
            print(f"regmap_gen: {rel} is stale (run `make generate`):", file=sys.stderr)
            diff = difflib.unified_diff(old.splitlines(), text.splitlines(), str(rel), "regenerated", lineterm="", n=1)
            for line in list(diff)[:40]:
                print("  " + line, file=sys.stderr)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text)
            tmp.replace(path)
            print(f"regmap_gen: wrote {rel}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
