# SPDX-License-Identifier: Apache-2.0
"""Guest images. An image is anything that yields QEMU arguments to boot a guest
which runs cxltrack-agent on the virtio-serial port `org.cxltrack.agent`.

`InitramfsImage` (built by `build_initramfs`) is the pinned Debian kernel with
an initramfs of static busybox, the needed kernel modules (decompressed, with
their dependencies), the agent, the project's static tools (`bin_dirs` →
/opt/cxltrack/bin) and the project's own kernel modules (`module_dirs` →
lib/modules/<release>/extra). Builds are cached under <cache>/guest-images,
keyed by a hash of every input. A future disk image (a debootstrap'd rootfs)
implements the same `GuestImage` protocol.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import cpio
from .debian import PrivateApt, extract, log
from .kernel import KernelTree, ensure_kernel, modinfo, resolve_modules
from .pins import TOP, GuestPins, cache_dir, guest_pins
from .userland import ensure_userland, userland_files, userland_key

GUEST_IMAGE_DIR = TOP / "host-stack" / "guest-image"
AGENT = "cxltrack-agent"
AGENT_PORT = "org.cxltrack.agent"

# Loaded by /init at boot, in this order.
BOOT_MODULES = ("cxl_acpi", "cxl_pci", "cxl_mem", "dax_cxl", "device_dax")
# Present in the image (with dependencies) for tests and tools to modprobe.
# kvm_amd (with kvm): Debian's own KVM, for A/B runs against a patched KVM in the
# project's module dirs, which `modprobe kvm_amd` prefers (see _depmod).
EXTRA_MODULES = ("kmem", "dax_hmem", "cxl_pmem", "libnvdimm", "dax_pmem", "kvm_amd")
# no_timer_check: on a loaded TCG host the kernel's IO-APIC timer check can
# fail ("..MP-BIOS bug: 8254 timer not connected") and panic before /init.
DEFAULT_APPEND = "console=ttyS0 panic=-1 rdinit=/init no_timer_check"


class GuestImage(Protocol):
    @property
    def name(self) -> str: ...

    def qemu_args(self, append: str = "") -> list[str]:
        """Arguments that make QEMU boot this image; `append` adds to the kernel command line."""
        ...


@dataclass(frozen=True)
class InitramfsImage:
    name: str
    kernel: Path
    initrd: Path
    append: str
    release: str
    key: str

    def qemu_args(self, append: str = "") -> list[str]:
        cmdline = f"{self.append} {append}".strip()
        return ["-kernel", str(self.kernel), "-initrd", str(self.initrd), "-append", cmdline]

    def to_json(self) -> str:
        d = {
            "type": "initramfs",
            "name": self.name,
            "kernel": str(self.kernel),
            "initrd": str(self.initrd),
            "append": self.append,
            "release": self.release,
            "key": self.key,
        }
        return json.dumps(d, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> InitramfsImage:
        d = json.loads(text)
        if d.get("type") != "initramfs":
            raise ValueError(f"not an initramfs image manifest: {d.get('type')}")
        return cls(d["name"], Path(d["kernel"]), Path(d["initrd"]), d["append"], d["release"], d["key"])


def load_image(manifest: Path) -> GuestImage:
    """Read an image manifest written by `make guest` (out/guest/<name>.json)."""
    return InitramfsImage.from_json(manifest.read_text())


@dataclass(frozen=True)
class InitramfsSpec:
    name: str = "busybox"
    boot_modules: tuple[str, ...] = BOOT_MODULES
    extra_modules: tuple[str, ...] = EXTRA_MODULES
    bin_dirs: tuple[Path, ...] = ()
    module_dirs: tuple[Path, ...] = ()
    append: str = DEFAULT_APPEND
    # Debian's dynamically linked `cxl` and `daxctl` (config/guest-kernel.mk GUEST_USERLAND_*).
    userland: bool = True
    extra_files: dict[str, Path] = field(default_factory=dict)


def _dir_files(dirs: tuple[Path, ...], suffix: str = "") -> dict[str, Path]:
    files: dict[str, Path] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.is_file() and p.name.endswith(suffix):
                files[p.name] = p
    return files


def _busybox(pins: GuestPins) -> Path:
    safe = pins.busybox_pkgver.replace(":", "_")
    dest = cache_dir() / "guest-busybox" / safe
    if not (dest / ".extracted").exists():
        debs = PrivateApt().download([f"busybox-static={pins.busybox_pkgver}"])
        extract(debs, dest)
    return dest / "bin" / "busybox"


def _key(
    spec: InitramfsSpec,
    pins: GuestPins,
    kernel: KernelTree,
    bins: dict[str, Path],
    mods: dict[str, Path],
    userland: Path | None,
) -> str:
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + hashlib.sha256(data).digest())

    add("pins", repr(pins).encode())
    add("kernel", f"{kernel.root}:{kernel.release}:{kernel.vmlinuz.stat().st_mtime_ns}".encode())
    add("spec", repr((spec.name, spec.boot_modules, spec.extra_modules, spec.append)).encode())
    if userland is not None:
        add("userland", userland_key(userland).encode())
    for src in sorted(p for p in GUEST_IMAGE_DIR.rglob("*") if p.is_file()):
        add(f"guest-image/{src.relative_to(GUEST_IMAGE_DIR)}", src.read_bytes())
    for mod in ("cpio.py", "image.py", "kernel.py", "userland.py"):
        add(mod, (Path(__file__).parent / mod).read_bytes())
    for name, p in sorted(bins.items()):
        add(f"bin/{name}:{os.access(p, os.X_OK)}", p.read_bytes())
    for name, p in sorted(mods.items()):
        add(f"extra/{name}", p.read_bytes())
    for dst, p in sorted(spec.extra_files.items()):
        add(f"file/{dst}", p.read_bytes())
    return h.hexdigest()[:16]


def _depmod(release: str, modules: dict[str, bytes], builtin_files: dict[str, bytes]) -> dict[str, bytes]:
    """Run the host's kmod depmod over the chosen modules; return every modules.* index it
    writes (text and .bin: busybox modprobe reads modules.dep, libkmod in daxctl the .bin files).
    A module in extra/ (the project's) wins over an in-tree one of the same name."""
    depmod = shutil.which("depmod") or "/usr/sbin/depmod"
    with tempfile.TemporaryDirectory(prefix="cxlt-depmod-") as tmp:
        base = Path(tmp) / "lib" / "modules" / release
        for rel, elf in {**modules, **builtin_files}.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(elf)
        conf = Path(tmp) / "depmod.conf"
        conf.write_text("search extra built-in\n")
        subprocess.run([depmod, "-C", str(conf), "-b", tmp, release], check=True)
        return {p.name: p.read_bytes() for p in base.glob("modules.*")}


def build_initramfs(spec: InitramfsSpec | None = None, force: bool = False) -> InitramfsImage:
    spec = spec or InitramfsSpec()
    pins = guest_pins()
    bins = _dir_files(spec.bin_dirs)
    mods = _dir_files(spec.module_dirs, ".ko")
    if AGENT not in bins:
        raise FileNotFoundError(f"{AGENT} not found in bin_dirs {[str(d) for d in spec.bin_dirs]} (run `make guest`)")
    kernel = ensure_kernel(pins)
    userland = ensure_userland(pins) if spec.userland else None
    key = _key(spec, pins, kernel, bins, mods, userland)
    dest = cache_dir() / "guest-images" / f"{spec.name}-{key}"
    image = InitramfsImage(spec.name, kernel.vmlinuz, dest / "initramfs.cpio", spec.append, kernel.release, key)
    if (dest / "image.json").exists() and not force:
        return image
    t0 = time.monotonic()
    log(f"building initramfs image {spec.name}-{key}")
    archive = _assemble(spec, kernel, _busybox(pins), bins, mods)
    if userland is not None:
        for path, data in userland_files(userland, pins.userland_bins).items():
            archive.file(path, data, 0o755)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    buf = io.BytesIO()
    archive.write(buf)
    (tmp / "initramfs.cpio").write_bytes(buf.getvalue())
    (tmp / "image.json").write_text(image.to_json())
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    log(f"initramfs {len(buf.getvalue()) / 1e6:.1f} MB in {time.monotonic() - t0:.1f} s: {dest}")
    return image


def _assemble(
    spec: InitramfsSpec, kernel: KernelTree, busybox: Path, bins: dict[str, Path], mods: dict[str, Path]
) -> cpio.Archive:
    a = cpio.Archive()
    for d in ("dev", "proc", "sys", "tmp", "run", "root", "etc", "usr/bin", "usr/sbin", "sbin", "mnt"):
        a.dir(d)
    a.chardev("dev/console", 5, 1)
    a.chardev("dev/null", 1, 3, 0o666)
    a.file("bin/busybox", busybox.read_bytes(), 0o755)
    a.symlink("bin/sh", "busybox")
    a.file("init", (GUEST_IMAGE_DIR / "init").read_bytes(), 0o755)
    a.file("opt/cxltrack/bin/cxl-region", (GUEST_IMAGE_DIR / "cxl-region").read_bytes(), 0o755)
    for name, p in bins.items():
        a.file(f"opt/cxltrack/bin/{name}", p.read_bytes(), 0o755 if os.access(p, os.X_OK) else 0o644)
    a.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    a.file("etc/group", b"root:x:0:\n")
    a.file("etc/cxltrack/modules", "".join(f"{m}\n" for m in spec.boot_modules).encode())
    # Kernel modules: the wanted in-tree ones with dependencies, plus the project's own.
    moddir = f"lib/modules/{kernel.release}"
    modules = resolve_modules(kernel.modules, [*spec.boot_modules, *spec.extra_modules])
    own_deps: list[str] = []
    for name, p in mods.items():
        elf = p.read_bytes()
        modules[f"extra/{name}"] = elf
        own_deps += [d for dep in modinfo(elf).get("depends", []) for d in dep.split(",") if d]
    if own_deps:
        known = {Path(r).name.split(".ko")[0].replace("-", "_") for r in modules}
        modules.update(resolve_modules(kernel.modules, [d for d in own_deps if d not in known]))
    for rel, elf in modules.items():
        a.file(f"{moddir}/{rel}", elf)
    builtin = {
        f: (kernel.modules / f).read_bytes() for f in ("modules.builtin", "modules.builtin.modinfo", "modules.order")
    }
    for name, data in _depmod(kernel.release, modules, builtin).items():
        a.file(f"{moddir}/{name}", data)
    a.file("etc/cxltrack/own-modules", "".join(f"{Path(n).stem}\n" for n in mods).encode())
    for dst, p in spec.extra_files.items():
        a.file(dst, p.read_bytes(), 0o755 if os.access(p, os.X_OK) else 0o644)
    return a
