# SPDX-License-Identifier: Apache-2.0
# Nested virtualisation: the emulated CXL machine (L0) boots a hypervisor host
# (L1: kvm_amd nested=1, cxltrack.ko, the project's QEMU) whose VMs (L2) keep
# a NUMA node on the device (host-stack/python/cxltrack/harness/nested.py,
# docs/harness.md "Nested").
#
#   make guest-host     the host image (L1 initramfs with QEMU + the L2 image) -> out/guest/host.json
#   make test-nested    boot hosts and VMs, run tests/nested (JUnit: out/junit/nested.xml)
#   make bench-migrate  live migration, KVM write-protect vs device dirty log (not in make test;
#                       tests/nested/test_nested_migration.py is its small version)
HOST_IMAGE := $(GUEST_OUT)/host.json
TEST_SUITES += nested

.PHONY: guest-host test-nested lint-nested bench-migrate

guest-host: $$(GUEST_DEPS) ## build the nested host image (L1 with the project's QEMU and the L2 VM image)
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "guest-host: no QEMU binary (got '$$q')"; exit 1; }; \
	$(HARNESS) host-image --qemu "$$q" $(addprefix --bin-dir ,$(GUEST_BIN_DIRS)) \
		--vm-bin-dir $(GUEST_OUT)/bin $(addprefix --module-dir ,$(GUEST_MODULE_DIRS)) --manifest $(HOST_IMAGE)

test-nested: guest-host ## nested tests: L1 host with KVM, L2 VMs with memory on the device, migration
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "test-nested: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_HOST_IMAGE=$(HOST_IMAGE) $(call VM_PYTEST,nested) $(TOP)/tests/nested

bench-migrate: guest-host ## migration bench; last line wp_faults_stock=<n> wp_faults_device=<n> pages_ratio=<r> ok=<pages equal>
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "bench-migrate: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_HOST_IMAGE=$(HOST_IMAGE) $(PY) -m cxltrack.experiments.migrate $(BENCH_MIGRATE_ARGS)

lint-nested: ## ruff + mypy over tests/nested
	@$(PY) -m ruff check --quiet $(TOP)/tests/nested
	@$(PY) -m ruff format --check --quiet $(TOP)/tests/nested
	@$(PY) -m mypy --no-error-summary $(TOP)/tests/nested
	@echo "lint-nested: ruff and mypy clean"

.PHONY: experiments-vswapper
experiments-vswapper: guest-host ## VSwapper's problems, baseline vs device; last line silent_writes_base=... wrong_pages=<n>, before it false_reads_base=<n> false_reads_dev=<n> wrong_bytes=<n> (--only-false-reads: that line alone)
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "experiments-vswapper: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_HOST_IMAGE=$(HOST_IMAGE) $(PY) -m cxltrack.experiments.vswapper $(EXPERIMENTS_VSWAPPER_ARGS)

.PHONY: experiments-memflex
experiments-memflex: guest-host ## MemFlex's shared swap tier (issue 15); last line swapin_tier_vs_disk=... isolation_violations=<n> vms=<n>
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "experiments-memflex: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_HOST_IMAGE=$(HOST_IMAGE) $(PY) -m cxltrack.experiments.memflex $(EXPERIMENTS_MEMFLEX_ARGS)
