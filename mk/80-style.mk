# SPDX-License-Identifier: Apache-2.0
# Style gates that are not unit tests: kernel and QEMU checkpatch (driver, QEMU
# series, KVM series), kernel-doc, the e2e and KVM tests' typing.
# `make test` runs them as one suite.
TEST_SUITES += style

.PHONY: test-style
test-style: ## checkpatch --strict + kernel-doc (driver), QEMU checkpatch, KVM series checkpatch, lint-e2e, lint-kvm
	@$(MAKE) --no-print-directory driver-check
	@$(MAKE) --no-print-directory qemu-checkpatch
	@$(MAKE) --no-print-directory kvm-check
	@$(MAKE) --no-print-directory lint-e2e
	@$(MAKE) --no-print-directory lint-kvm
