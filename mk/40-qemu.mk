# SPDX-License-Identifier: Apache-2.0
# QEMU with the cxltrack device model: qemu-cxl-model/build-qemu fetches
# Debian trixie's QEMU 10.0 source, applies qemu-cxl-model/patches/*.patch,
# builds x86_64-softmmu into $(CACHE)/qemu/<key>/ and prints the binary's path
# as its last stdout line (all progress goes to stderr).
QEMU_BUILD := $(TOP)/qemu-cxl-model/build-qemu
TEST_SUITES += qemu

.PHONY: qemu qemu-path qemu-firmware-dirs test-qemu bench-qemu

qemu: ## build the patched QEMU if needed (cached by key); prints its path
	@$(QEMU_BUILD)

qemu-path: ## print only the absolute path of qemu-system-x86_64 (builds if needed)
	@$(QEMU_BUILD)

qemu-firmware-dirs: ## print the -L firmware dir(s) of the built QEMU
	@$(QEMU_BUILD) --firmware-dirs

# QEMU_BIN=<path> (with QEMU_FIRMWARE_DIR for a build without share/qemu)
# tests another binary, e.g. the dev tree's (qemu-cxl-model/dev-tree).
test-qemu: ## QEMU smoke test, shared-vector replay and fuzz over qtest
	@mkdir -p $(JUNIT_DIR)
	@QEMU_BIN=$${QEMU_BIN:-$$($(QEMU_BUILD))} && export QEMU_BIN && \
		$(call PYTEST,qemu) $(TOP)/qemu-cxl-model/tests

bench-qemu: ## window throughput, tracking on vs off; last line ratio=<x>
	@QEMU_BIN=$${QEMU_BIN:-$$($(QEMU_BUILD))} && export QEMU_BIN && \
		$(PY) $(TOP)/qemu-cxl-model/tests/bench.py
