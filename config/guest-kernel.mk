# SPDX-License-Identifier: Apache-2.0
# The one place that pins the guest kernel and the guest's busybox. Read by make
# (include) and by cxltrack.harness.pins (simple `NAME := value` lines only).
GUEST_KERNEL_ABI := 6.12.95+deb12
GUEST_KERNEL_FLAVOUR := amd64
GUEST_KERNEL_PKGVER := 6.12.95-1~bpo12+1
GUEST_KERNEL_SUITE := bookworm-backports
GUEST_BUSYBOX_PKGVER := 1:1.35.0-4+deb12u1+b1
GUEST_BUSYBOX_SUITE := bookworm
