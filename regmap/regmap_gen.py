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
    "harvest_max_bitmap_pages",
    "harvest_max_hotness_pages",
    "dma_list_record_bytes",
    "max_owner",
    "max_chunks",
]
# Configuration fields (docs/spec.md 1.1), in the order of a configuration file; each has a cfg_<field> range.
CONFIG_FIELDS = [
    "capacity_bytes",
    "page_shift",
    "slots",
    "hot_bits",
    "evq_depth_log2",
    "chunk_shift",
    "bat_disk_bits",
    "bat_block_bits",
    "tick_ns",
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
    singlepulse: bool = False  # a write of 1 is an action (EVQ_POP), nothing is stored
    swmod: bool = False  # a write is an action of the hardware (CMD_OP launches)

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    @property
    def plain(self) -> bool:
        """Software-written storage: a write stores the value, nothing else happens."""
        return "w" in self.sw and not (self.woclr or self.singlepulse or self.swmod)


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

    @property
    def readable(self) -> bool:
        return any("r" in f.sw for f in self.fields)

    @property
    def write_mask(self) -> int:
        return sum(f.mask for f in self.fields if "w" in f.sw)

    @property
    def w1c_mask(self) -> int:
        return sum(f.mask for f in self.fields if f.woclr)

    @property
    def storage(self) -> bool:
        """Every writable field is plain storage: the register port keeps it (CTRL, CMD_ARG*, ...)."""
        writable = [f for f in self.fields if "w" in f.sw]
        return bool(writable) and all(f.plain for f in writable)


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
    config_ranges: tuple[tuple[str, int, int], ...]  # (field, min, max)

    def constant(self, name: str) -> int:
        return dict(self.constants)[name]

    def enum(self, name: str) -> Enum:
        return next(e for e in self.enums if e.name == name)

    def window(self, name: str) -> Window:
        return next(w for w in self.windows if w.name == name)

    def register(self, name: str) -> Register:
        return next(r for r in self.registers + self.layouts if r.name == name)


class MapError(ValueError):
    """The RDL compiles but its limits contradict each other."""


def _check(m: Map) -> None:
    """Limits that other parts of the map bound: a limit that does not fit its register field or window is an
    error here, not a surprise in one implementation."""

    def field_max(reg: str, field: str) -> int:
        f = next(f for f in m.register(reg).fields if f.name == field)
        return (1 << f.width) - 1

    ranges = {n: (lo, hi) for n, lo, hi in m.config_ranges}
    result = m.window("RESULT").size
    rules = [
        ("HARVEST_MAX_BITMAP_PAGES", m.constant("HARVEST_MAX_BITMAP_PAGES"), 8 * result, "bits in RESULT"),
        ("HARVEST_MAX_HOTNESS_PAGES", m.constant("HARVEST_MAX_HOTNESS_PAGES"), result, "bytes in RESULT"),
        ("MAX_CHUNKS", m.constant("MAX_CHUNKS"), min(8 * result, field_max("CAP_CHUNK", "NUM_CHUNKS")),
         "bits in RESULT (CHUNK_LIST) and CAP_CHUNK.NUM_CHUNKS"),
        ("cfg_slots.max", ranges["slots"][1], min(m.window("SLOT").count, field_max("CAP_GEOM", "NUM_SLOTS")),
         "SLOT windows and CAP_GEOM.NUM_SLOTS"),
        ("cfg_hot_bits.max", ranges["hot_bits"][1], min(8, field_max("CAP_GEOM", "HOT_BITS")),
         "a hotness byte in RESULT and CAP_GEOM.HOT_BITS"),
        ("cfg_page_shift.max", ranges["page_shift"][1], field_max("CAP_GEOM", "PAGE_SHIFT"), "CAP_GEOM.PAGE_SHIFT"),
        ("cfg_evq_depth_log2.max", ranges["evq_depth_log2"][1], field_max("CAP_GEOM", "EVQ_DEPTH_LOG2"),
         "CAP_GEOM.EVQ_DEPTH_LOG2"),
        ("cfg_chunk_shift.max", ranges["chunk_shift"][1], field_max("CAP_CHUNK", "CHUNK_SHIFT"),
         "CAP_CHUNK.CHUNK_SHIFT"),
        ("cfg_bat_disk_bits.max", ranges["bat_disk_bits"][1], m.register("BAT_RESULT1").fields[0].width,
         "LAYOUT_BAT_RESULT1.DISK"),
        ("cfg_bat_block_bits.max", ranges["bat_block_bits"][1], 64, "CMD_RESULT0"),
        ("cfg_tick_ns.max", ranges["tick_ns"][1], field_max("CAP_TICK", "TICK_NS"), "CAP_TICK.TICK_NS"),
    ]  # fmt: skip
    for name, value, bound, what in rules:
        if value > bound:
            raise MapError(f"{name} = {value} exceeds {bound} ({what})")
    for name, lo, hi in m.config_ranges:
        if lo > hi:
            raise MapError(f"cfg_{name}: min {lo} > max {hi}")


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
                singlepulse=bool(f.get_property("singlepulse")),
                swmod=bool(f.get_property("swmod")),
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
    ranges = []
    for name in CONFIG_FIELDS:
        r = top.get_property(f"cfg_{name}")
        ranges.append((name, int(r.min), int(r.max)))
    m = Map(
        consts,
        tuple(regs),
        tuple(wins),
        tuple(layouts),
        tuple(sorted(enums.values(), key=lambda e: e.name)),
        tuple(ranges),
    )
    _check(m)
    return m


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
    out.append("/* Legal range of each configuration field (docs/spec.md section 1.1) */")
    for name, lo, hi in m.config_ranges:
        out.append(f"#define CXLT_CFG_{name.upper()}_MIN 0x{lo:x}ULL")
        out.append(f"#define CXLT_CFG_{name.upper()}_MAX 0x{hi:x}ULL")
    out.append("")

    def fields(prefix: str, reg: Register, suffix: str) -> None:
        for f in reg.fields:
            out.append(f"#define {prefix}_{f.name}_SHIFT {f.lsb}")
            out.append(f"#define {prefix}_{f.name}_MASK {_hex(f.mask, reg.width)}{suffix}")

    for r in m.registers:
        out.append(f"/* {r.title} */")
        out.append(f"#define CXLT_{r.name} 0x{r.offset:03x}")
        out.append(f"#define CXLT_{r.name}_RESET {_hex(r.reset, 32)}U")
        if r.write_mask:
            out.append(f"#define CXLT_{r.name}_WRITE_MASK {_hex(r.write_mask, 32)}U")
        if r.w1c_mask:
            out.append(f"#define CXLT_{r.name}_W1C_MASK {_hex(r.w1c_mask, 32)}U")
        fields(f"CXLT_{r.name}", r, "U")
        out.append("")

    def predicate(name: str, arg: str, values: list[str], comment: str) -> None:
        out.append(f"/* {comment} */")
        out.append(f"#define {name}({arg}) \\")
        for i, v in enumerate(values):
            head = "\t(" if i == 0 else "\t "
            tail = ")" if i == len(values) - 1 else " || \\"
            out.append(f"{head}({arg}) == {v}{tail}")
        out.append("")

    predicate(
        "CXLT_REG_READABLE",
        "off",
        [f"CXLT_{r.name}" for r in m.registers if r.readable],
        "A register software may read (some field is sw = r or rw)",
    )
    predicate(
        "CXLT_REG_WRITABLE",
        "off",
        [f"CXLT_{r.name}" for r in m.registers if r.write_mask],
        "A register software may write (some field is sw = w or rw)",
    )
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
    predicate("CXLT_OP_KNOWN", "op", [f"CXLT_OP_{n}" for n, _, _ in m.enum("OP").values], "A defined opcode")
    ev = m.enum("EVENT")
    out.append("/* Names of the event types, indexed by type */")
    out.append("#define CXLT_EVENT_NAMES { \\")
    for name, _, _ in ev.values:
        out.append(f'\t[CXLT_EVENT_{name}] = "{name}", \\')
    out.append("}")
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
    out.append("# Legal range (min, max) of each configuration field (docs/spec.md section 1.1)")
    out.append("CONFIG_RANGES: Final[dict[str, tuple[int, int]]] = {")
    for name, lo, hi in m.config_ranges:
        out.append(f"    {name!r}: (0x{lo:x}, 0x{hi:x}),")
    out.append("}")
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
    out.append("  /** Legal range (field, min, max) of each configuration field (docs/spec.md section 1.1). */")
    out.append("  val ConfigRanges: Seq[(String, BigInt, BigInt)] = Seq(")
    for name, lo, hi in m.config_ranges:
        out.append(f'    ("{name}", BigInt("{lo:x}", 16), BigInt("{hi:x}", 16)),')
    out[-1] = out[-1].rstrip(",")
    out.append("  )")
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
    out.append("")
    out.append("  /**")
    out.append(
        "   * How software may access a register (from the RDL's sw, onwrite, singlepulse and swmod): `readable`;"
    )
    out.append("   * `writeMask`, the bits a write may change; `w1cMask`, the write-1-to-clear bits; `storage`, every")
    out.append("   * writable field is plain storage (a write stores it, nothing else happens).")
    out.append("   */")
    out.append(
        "  case class Reg(name: String, offset: Int, reset: BigInt, readable: Boolean, writeMask: BigInt, "
        "w1cMask: BigInt, storage: Boolean) {"
    )
    out.append("    def writable: Boolean = writeMask != 0")
    out.append("  }")
    out.append("  val Registers: Seq[Reg] = Seq(")
    for r in m.registers:
        out.append(
            f'    Reg("{r.name}", 0x{r.offset:x}, BigInt("{r.reset:x}", 16), {str(r.readable).lower()}, '
            f'BigInt("{r.write_mask:x}", 16), BigInt("{r.w1c_mask:x}", 16), {str(r.storage).lower()}),'
        )
    out[-1] = out[-1].rstrip(",")
    out.append("  )")
    out.append("")
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
        out.append(f"    val All: Seq[Int] = Seq({', '.join(name for name, _, _ in e.values)})")
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
        out.append(f"| `{name}` | `0x{value:x}` ({value}) |")
    out += [
        "",
        "## Configuration ranges",
        "",
        "Legal values of each field of a device configuration (docs/spec.md section 1.1; the cross-field rules are",
        "there). C: `CXLT_CFG_<FIELD>_MIN`/`_MAX`; Python: `regs.CONFIG_RANGES`; Scala: `Regs.ConfigRanges`.",
        "",
        "| field | min | max |",
        "|---|---|---|",
    ]
    for name, lo, hi in m.config_ranges:
        out.append(f"| `{name}` | {lo} | {hi} (`0x{hi:x}`) |")
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
    except (RDLCompileError, MapError) as exc:
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
