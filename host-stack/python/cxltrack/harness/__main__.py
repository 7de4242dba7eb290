# SPDX-License-Identifier: Apache-2.0
"""Command line of the harness (used by mk/50-e2e.mk):

python -m cxltrack.harness kernel [--print headers|root|vmlinuz|release]
python -m cxltrack.harness image --bin-dir D [--module-dir D] --manifest out/guest/busybox.json
python -m cxltrack.harness host-image --qemu Q --bin-dir D [--vm-bin-dir D] [--module-dir D]
    --manifest out/guest/host.json
python -m cxltrack.harness run --qemu Q --image M [--region devdax|kmem] [--workdir W] -- CMD...
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from .agent import GuestError
from .image import DEFAULT_APPEND, EXTRA_MODULES, InitramfsSpec, build_initramfs, load_image
from .kernel import ensure_kernel
from .nested import build_host_image
from .pins import out_dir
from .topology import cxl_type3_topology
from .vm import Vm, VmConfig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cxltrack.harness")
    sub = ap.add_subparsers(dest="what", required=True)
    k = sub.add_parser("kernel", help="fetch/extract the pinned guest kernel")
    k.add_argument("--print", choices=("headers", "root", "vmlinuz", "release"), default=None)
    i = sub.add_parser("image", help="build the initramfs guest image")
    i.add_argument("--name", default="busybox")
    i.add_argument("--bin-dir", action="append", default=[], type=Path)
    i.add_argument("--module-dir", action="append", default=[], type=Path)
    i.add_argument("--manifest", type=Path, required=True)
    i.add_argument("--force", action="store_true")
    i.add_argument("--append", default="", help="more kernel command line for every boot of the image")
    i.add_argument(
        "--extra-modules",
        default=",".join(EXTRA_MODULES),
        help="in-tree modules the image holds for tests to load (comma-separated; default: %(default)s)",
    )
    h = sub.add_parser("host-image", help="build the nested host image (L1, with the project's QEMU and L2 image)")
    h.add_argument("--qemu", type=Path, required=True, help="the qemu-system-x86_64 to put in the host")
    h.add_argument("--bin-dir", action="append", default=[], type=Path)
    h.add_argument(
        "--vm-bin-dir",
        action="append",
        default=[],
        type=Path,
        help="tools of the L2 image (default: every --bin-dir)",
    )
    h.add_argument("--module-dir", action="append", default=[], type=Path)
    h.add_argument("--manifest", type=Path, required=True)
    h.add_argument("--force", action="store_true")
    r = sub.add_parser("run", help="boot the default CXL topology, run commands, shut down")
    r.add_argument("--qemu", type=Path, required=True)
    r.add_argument("--image", type=Path, required=True, help="image manifest")
    r.add_argument("--region", choices=("devdax", "kmem"), default=None)
    r.add_argument("--workdir", type=Path, default=out_dir() / "e2e" / "_manual")
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("cmd", nargs="*")
    a = ap.parse_args(argv)

    if a.what == "kernel":
        tree = ensure_kernel()
        value = {"headers": tree.headers, "root": tree.root, "vmlinuz": tree.vmlinuz, "release": tree.release}
        print(value[a.print] if a.print else tree.headers)
        return 0
    if a.what == "image":
        extra = tuple(m for m in a.extra_modules.split(",") if m)
        spec = InitramfsSpec(
            name=a.name,
            bin_dirs=tuple(a.bin_dir),
            module_dirs=tuple(a.module_dir),
            extra_modules=extra,
            append=f"{DEFAULT_APPEND} {a.append}".strip(),
        )
        image = build_initramfs(spec, force=a.force)
        a.manifest.parent.mkdir(parents=True, exist_ok=True)
        a.manifest.write_text(image.to_json())
        print(f"[guest] image {image.name}-{image.key}: kernel {image.kernel}, initrd {image.initrd}")
        print(f"[guest] manifest {a.manifest}")
        return 0
    if a.what == "host-image":
        vm_bins = tuple(a.vm_bin_dir) or None
        host = build_host_image(a.qemu, tuple(a.bin_dir), tuple(a.module_dir), force=a.force, vm_bin_dirs=vm_bins)
        a.manifest.parent.mkdir(parents=True, exist_ok=True)
        a.manifest.write_text(host.to_json())
        print(f"[guest] host image {host.host.name}-{host.host.key} (VM image {host.vm.name}-{host.vm.key})")
        print(f"[guest] manifest {a.manifest}")
        return 0
    append = f"cxltrack.region={a.region}" if a.region else ""
    cfg = VmConfig(
        qemu=a.qemu, image=load_image(a.image), topology=cxl_type3_topology(), workdir=a.workdir, append=append
    )
    t0 = time.monotonic()
    try:
        with Vm(cfg) as vm:
            print(f"[vm] ready in {vm.boot_seconds:.2f} s (guest uptime {vm.guest_uptime_at_ready} s)", flush=True)
            rc = 0
            for cmd in a.cmd:
                res = vm.run(cmd, timeout=a.timeout, check=False)
                sys.stdout.write(f"$ {cmd}\n{res.out}")
                sys.stderr.write(res.err)
                print(f"[vm] status {res.status}{' (timed out)' if res.timed_out else ''} in {res.seconds:.2f} s")
                rc = rc or res.status
    except GuestError as exc:
        print(f"[vm] {exc}", file=sys.stderr)
        return 1
    print(f"[vm] total {time.monotonic() - t0:.2f} s; logs in {a.workdir}  (cmds: {shlex.join(a.cmd)})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
