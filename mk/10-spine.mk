# SPDX-License-Identifier: Apache-2.0
# The spine: register map generation, reference model, shared vectors, demo.
PYSRC := $(TOP)/host-stack/python

.PHONY: generate check-generated vectors test-model test-lint test-generated lint
generate: ## regenerate C/Python/Scala/Markdown from regmap/cxltrack.rdl
	@$(PY) regmap/regmap_gen.py

vectors: ## regenerate the shared test-vector corpus in vectors/
	@$(PY) -m cxltrack.vectors.generate --out vectors

check-generated: ## fail if a generated file or the vector corpus is stale
	@$(PY) regmap/regmap_gen.py --check
	@$(PY) -m cxltrack.vectors.generate --out vectors --check
	@echo "check-generated: register map outputs and vector corpus are fresh"

# gcc: the generated C header is compiled standalone (test_regmap.py), which skips without it
test-model: ## reference-model property tests, vector replay, generated-file checks
	@$(TOP)/scripts/apt-ensure gcc libc6-dev
	@mkdir -p $(JUNIT_DIR)
	@cd $(PYSRC) && $(call PYTEST,model) tests

# Every other Python tree (tests, benches); each part's own lint target runs mypy on it.
LINT_PY_DIRS = $(wildcard $(TOP)/tests $(TOP)/qemu-cxl-model/tests $(TOP)/sim $(TOP)/scripts/tests $(TOP)/fpga)

lint: ## ruff over all Python, mypy over the host-stack package
	@$(PY) -m ruff check --quiet $(PYSRC) regmap scripts/run-suites $(LINT_PY_DIRS)
	@$(PY) -m ruff format --check --quiet $(PYSRC) regmap $(LINT_PY_DIRS)
	@$(PY) -m mypy --no-error-summary $(PYSRC)/cxltrack regmap/regmap_gen.py
	@echo "lint: ruff and mypy clean"

test-lint: lint

test-generated: check-generated

TEST_SUITES += generated model lint

