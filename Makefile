# SPDX-License-Identifier: Apache-2.0
# cxltrack top-level Makefile. Two set-up commands matter: `make demo` and
# `make test`. Each part of the project adds its targets and test suites in
# mk/NN-part.mk; the number orders the suites in `make test`.
.DEFAULT_GOAL := help
SHELL := /bin/bash

include mk/common.mk
# Fragments append to GUEST_DEPS, DEMO_DEPS, ... after the rules that use
# them are read: prerequisites are expanded a second time, at build time.
.SECONDEXPANSION:
include $(sort $(wildcard mk/[0-9]*.mk))

.PHONY: help test demo
help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sort -u | \
		awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

test: ## run every test suite; ends with "N passed, N failed"
	@$(PY) scripts/run-suites $(TEST_SUITES)

demo: $$(DEMO_DEPS) ## run the main scenario on the embedded default configuration
	@$(DEMO_CMD)
