# SPDX-License-Identifier: Apache-2.0
# The set-up scripts themselves (scripts/, qemu-cxl-model/build-qemu): no
# install step ever runs with a private APT configuration (scripts/tests).
TEST_SUITES += setup

.PHONY: test-setup
test-setup: ## set-up scripts: apt-ensure's APT_CONFIG guard, build-qemu's APT steps (stubbed apt-get)
	@mkdir -p $(JUNIT_DIR)
	@$(call PYTEST,setup) $(TOP)/scripts/tests
