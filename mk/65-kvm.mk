# SPDX-License-Identifier: Apache-2.0
# KVM that takes the migration dirty log of guest memory on the device from
# the device (kvm/README.md): the kvm/patches series against Debian's
# linux-source of the pinned guest kernel, built out of tree into kvm.ko +
# kvm-amd.ko for the guest image, KVM's selftests from the same source, and
# the tests that run them in the guest (an L1 hypervisor under TCG).
#
#   make kvm         fetch the source (cached by version), apply the series,
#                    build the modules and selftests -> out/kvm/{module,bin}
#   make kvm-check   checkpatch --strict over the series
#   make lint-kvm    ruff + mypy over tests/kvm
#   make test-kvm    selftests in the guest on the patched and the stock modules
#                    (the small matrix of `make test`)
#   make test-kvm-full  every selftest on every build (adds memslot_perf_test:
#                    ~4 min per build under TCG)
KVM_DIR := $(TOP)/kvm
KVM_OUT := $(OUT)/kvm
KVM_PATCHES := $(sort $(wildcard $(KVM_DIR)/patches/*.patch))
KVM_INPUTS := $(KVM_PATCHES) $(KVM_DIR)/build-kvm $(TOP)/config/guest-kernel.mk \
	$(wildcard $(TOP)/tests/kvm/selftest/*.c) \
	$(DRIVER_SRC)/include/linux/cxltrack.h $(DRIVER_SRC)/include/uapi/linux/cxltrack.h

GUEST_MODULE_DIRS += $(KVM_OUT)/module
GUEST_BIN_DIRS += $(KVM_OUT)/bin
GUEST_DEPS += kvm
TEST_SUITES += kvm

.PHONY: kvm kvm-check lint-kvm test-kvm test-kvm-full

$(KVM_OUT)/.built: $(KVM_INPUTS) | guest-deps-host
	@# rsync: the kernel's make headers_install (for the selftests) copies with it
	@$(TOP)/scripts/apt-ensure gcc make libc6-dev patch rsync xz-utils perl dwarves binutils >&2
	@$(HARNESS) kernel >/dev/null
	@GUEST_KDIR=$$($(HARNESS) kernel --print headers) $(KVM_DIR)/build-kvm $(KVM_OUT)
	@touch $@

kvm: $(KVM_OUT)/.built ## KVM with the device dirty log: kvm.ko kvm-amd.ko + selftests for the guest image

kvm-check: ## checkpatch --strict over the KVM series (kvm/patches)
	@$(TOP)/scripts/apt-ensure perl xz-utils >&2
	@cp=$$($(DRIVER_SRC)/scripts/get-checkpatch) && \
	out=$$(perl $$cp --strict --no-tree --quiet --terse --show-types $(KVM_PATCHES)); \
	bad=$$(echo "$$out" | grep -v '^total: 0 errors, 0 warnings, 0 checks' | grep .); \
	if [ -n "$$bad" ]; then echo "$$bad"; exit 1; fi; \
	echo "kvm-check: checkpatch --strict clean ($(words $(KVM_PATCHES)) patches)"

test-kvm: guest ## KVM selftests in the guest (L1 under TCG): patched and stock modules, memory on the device
	@q="$(strip $(QEMU_BIN))"; test -x "$$q" || { echo "test-kvm: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_GUEST_IMAGE=$(GUEST_IMAGE) $(call VM_PYTEST,kvm) $(TOP)/tests/kvm

test-kvm-full: ## test-kvm with the whole matrix (every selftest on every build; ~15 min)
	@CXLTRACK_KVM_FULL=1 $(MAKE) --no-print-directory test-kvm

# From inside tests/kvm: its tests import their conftest as a module.
lint-kvm: ## ruff + mypy over tests/kvm
	@$(PY) -m ruff check --quiet $(TOP)/tests/kvm
	@$(PY) -m ruff format --check --quiet $(TOP)/tests/kvm
	@cd $(TOP)/tests/kvm && MYPYPATH=$(TOP)/host-stack/python \
		$(PY) -m mypy --config-file $(TOP)/pyproject.toml --no-error-summary .
	@echo "lint-kvm: ruff and mypy clean"
