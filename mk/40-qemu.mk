# SPDX-License-Identifier: Apache-2.0
# QEMU with the cxltrack device model: qemu-cxl-model/build-qemu fetches
# Debian trixie's QEMU 10.0 source, applies qemu-cxl-model/patches/*.patch,
# builds x86_64-softmmu into $(CACHE)/qemu/<key>/ and prints the binary's path
# as its last stdout line (all progress goes to stderr).
QEMU_BUILD := $(TOP)/qemu-cxl-model/build-qemu
TEST_SUITES += qemu

.PHONY: qemu qemu-path qemu-firmware-dirs test-qemu test-qemu-asan bench-qemu qemu-series qemu-checkpatch

qemu: ## build the patched QEMU if needed (cached by key); prints its path
	@$(QEMU_BUILD)

qemu-path: ## print only the absolute path of qemu-system-x86_64 (builds if needed)
	@$(QEMU_BUILD)

qemu-firmware-dirs: ## print the -L firmware dir(s) of the built QEMU
	@$(QEMU_BUILD) --firmware-dirs

# CXLTRACK_QEMU=<path> (with CXLTRACK_QEMU_FIRMWARE for a build without share/qemu)
# tests another binary, e.g. the dev tree's (qemu-cxl-model/dev-tree).
test-qemu: ## QEMU smoke test, shared-vector replay and fuzz over qtest
	@mkdir -p $(JUNIT_DIR)
	@CXLTRACK_QEMU=$${CXLTRACK_QEMU:-$$($(QEMU_BUILD))} && export CXLTRACK_QEMU && \
		$(call PYTEST,qemu) $(TOP)/qemu-cxl-model/tests

bench-qemu: ## window throughput, tracking on vs off in short pairs; last line ratio=<median> ci95=<lo..hi> pairs=<n>
	@CXLTRACK_QEMU=$${CXLTRACK_QEMU:-$$($(QEMU_BUILD))} && export CXLTRACK_QEMU && \
		$(PY) $(TOP)/qemu-cxl-model/tests/bench.py

test-qemu-asan: ## the QEMU suite on an ASan+UBSan build (slow cold build; not in make test)
	@mkdir -p $(JUNIT_DIR)
	@CXLTRACK_QEMU=$$($(QEMU_BUILD) --asan) && export CXLTRACK_QEMU && \
		export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 && \
		$(call PYTEST,qemu-asan) $(TOP)/qemu-cxl-model/tests

qemu-series: ## the self-contained series for upstream review (patches + src/ + header) -> out/qemu-series
	@$(TOP)/qemu-cxl-model/export-series $(OUT)/qemu-series

# QEMU's own checkpatch.pl (from the pristine trixie tree build-qemu unpacks)
# over every patch of the exported series, so the sources under
# qemu-cxl-model/src/ are checked as the patch that adds them.
qemu-checkpatch: qemu-series ## scripts/checkpatch.pl of QEMU 10.0 over the exported series
	@cp="$$($(QEMU_BUILD) --pristine-dir)/scripts/checkpatch.pl"; \
	test -f "$$cp" || { echo "qemu-checkpatch: $$cp missing"; exit 1; }; \
	for p in $(OUT)/qemu-series/*.patch; do \
		perl "$$cp" -q "$$p" || { echo "qemu-checkpatch: $$(basename $$p) is not clean"; exit 1; }; \
	done; echo "qemu-checkpatch: every patch of the exported series clean"
