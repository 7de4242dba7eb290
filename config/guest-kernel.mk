# SPDX-License-Identifier: Apache-2.0
# The one place that pins the guest kernel and the guest's busybox. Read by make
# (include) and by cxltrack.harness.pins (simple `NAME := value` lines only).
GUEST_KERNEL_ABI := 6.12.95+deb12
GUEST_KERNEL_FLAVOUR := amd64
GUEST_KERNEL_PKGVER := 6.12.95-1~bpo12+1
GUEST_KERNEL_SUITE := bookworm-backports
GUEST_BUSYBOX_PKGVER := 1:1.35.0-4+deb12u1+b1
GUEST_BUSYBOX_SUITE := bookworm
# Dynamically linked tools for the initramfs guest, with the libraries they need
# (picked by their ELF DT_NEEDED): ndctl 81's `cxl` and `daxctl` (bookworm's 76
# cannot handle ram regions). Resolved to the suite's versions once, then cached.
GUEST_USERLAND_SUITE := trixie
GUEST_USERLAND_BINS := /usr/bin/cxl /usr/bin/daxctl
GUEST_USERLAND_PKGS := cxl daxctl libcxl1 libdaxctl1 libndctl6 libkmod2 libssl3t64 libudev1 libcap2 libjson-c5 libuuid1 libtraceevent1 libtracefs1 libc6 libgcc-s1 libiniparser4 libkeyutils1 liblzma5 libzstd1 zlib1g
