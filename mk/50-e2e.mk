# SPDX-License-Identifier: Apache-2.0
# Full-stack harness: pinned guest kernel, initramfs guest image, QEMU CXL
# topology, e2e tests.
#
#   make guest          build the guest image (cached by a hash of its inputs)
#   make guest-kernel   fetch + extract the pinned kernel; GUEST_KDIR = its headers
#   make test-e2e       boot VMs and run tests/e2e (JUnit → out/junit/e2e.xml)
#   make guest-run CMD='cxl-region create devdax; ls -l /dev/dax*'   one-off VM
#
# Slots for other parts of the project (append from their own fragments):
#   GUEST_BIN_DIRS     directories of static guest tools → /opt/cxltrack/bin (on PATH)
#   GUEST_MODULE_DIRS  directories of the project's .ko files → lib/modules/<rel>/extra
#   GUEST_DEPS         make targets that build those files
# To build an out-of-tree module against the guest kernel:
#   $(MAKE) -C $(GUEST_KDIR) M=<dir> modules     (after `make guest-kernel`)
include $(TOP)/config/guest-kernel.mk

GUEST_OUT := $(OUT)/guest
GUEST_TOOLS_SRC := $(wildcard $(TOP)/host-stack/guest-tools/*.c)
GUEST_TOOLS_BIN := $(patsubst $(TOP)/host-stack/guest-tools/%.c,$(GUEST_OUT)/bin/%,$(GUEST_TOOLS_SRC))
GUEST_BIN_DIRS += $(GUEST_OUT)/bin
GUEST_MODULE_DIRS +=
GUEST_DEPS += guest-tools
GUEST_IMAGE := $(GUEST_OUT)/busybox.json
HARNESS := $(PY) -m cxltrack.harness
# Lazily evaluated: only targets that use it fetch the kernel.
GUEST_KDIR = $(shell $(HARNESS) kernel --print headers)
GUEST_CFLAGS := -static -O2 -Wall -Wextra -Werror

TEST_SUITES += e2e

.PHONY: guest guest-kernel guest-kdir guest-tools guest-run test-e2e guest-deps-host lint-e2e

guest-deps-host:
	@$(TOP)/scripts/apt-ensure gcc libc6-dev make dpkg-dev kmod

$(GUEST_OUT)/bin/%: $(TOP)/host-stack/guest-tools/%.c $(wildcard $(TOP)/host-stack/guest-tools/*.h) | guest-deps-host
	@mkdir -p $(@D)
	@echo "[guest] cc -static $(notdir $<)"
	@nice gcc $(GUEST_CFLAGS) -o $@ $<

guest-tools: $(GUEST_TOOLS_BIN) ## build the static guest tools (agent, cxl-memtest)

guest-kernel: ## fetch + extract the pinned guest kernel and headers into the cache
	@$(TOP)/scripts/apt-ensure dwarves >&2
	@$(HARNESS) kernel >/dev/null

guest-kdir: guest-kernel ## print the guest kernel headers dir (for make -C <dir> M=... modules)
	@$(HARNESS) kernel --print headers

guest: $$(GUEST_DEPS) ## build the guest image (kernel + busybox initramfs + agent + tools)
	@$(HARNESS) image $(addprefix --bin-dir ,$(GUEST_BIN_DIRS)) $(addprefix --module-dir ,$(GUEST_MODULE_DIRS)) \
		--manifest $(GUEST_IMAGE)

# The QEMU binary: `make qemu-path` (qemu-cxl-model) prints it as its last line.
# Override with CXLTRACK_QEMU=/path/to/qemu-system-x86_64.
QEMU_BIN = $(strip $(or $(CXLTRACK_QEMU),$(if $(wildcard $(TOP)/qemu-cxl-model/build-qemu),\
	$(shell $(MAKE) --no-print-directory -s qemu-path | tail -n1))))

# Never hand it to sub-makes: a QEMU_BIN from the environment would be
# exported and re-expanded by the sub-make that computes it, without end.
unexport QEMU_BIN

guest-run: guest ## boot the CXL topology once and run CMD (REGION=devdax|kmem optional)
	@$(HARNESS) run --qemu "$(QEMU_BIN)" --image $(GUEST_IMAGE) $(if $(REGION),--region $(REGION)) -- "$(CMD)"

test-e2e: guest ## full-stack tests: boot VMs on the QEMU CXL model
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "test-e2e: no QEMU binary (got '$$q'): needs qemu-cxl-model (make qemu-path) or CXLTRACK_QEMU"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_GUEST_IMAGE=$(GUEST_IMAGE) $(call VM_PYTEST,e2e) $(TOP)/tests/e2e

lint-e2e: ## ruff + mypy over tests/e2e (the harness package is covered by `make lint`)
	@$(PY) -m ruff check --quiet $(TOP)/tests/e2e
	@$(PY) -m ruff format --check --quiet $(TOP)/tests/e2e
	@$(PY) -m mypy --no-error-summary $(TOP)/tests/e2e
	@echo "lint-e2e: ruff and mypy clean"
