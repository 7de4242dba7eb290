# SPDX-License-Identifier: Apache-2.0
# Shared variables. The venv lives under ~/.cache/cxltrack keyed by the hash of
# requirements.txt; scripts/venv-ensure creates it once.
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
CACHE ?= $(HOME)/.cache/cxltrack
OUT := $(TOP)/out
VENV := $(shell $(TOP)/scripts/venv-ensure)
ifeq ($(VENV),)
$(error scripts/venv-ensure failed: see the messages above)
endif
PY := $(VENV)/bin/python
export PATH := $(VENV)/bin:$(PATH)
export PYTHONPATH := $(TOP)/host-stack/python$(if $(PYTHONPATH),:$(PYTHONPATH))
export CXLTRACK_CACHE := $(CACHE)
# Each suite's pytest writes JUnit XML here; scripts/run-suites sums them.
JUNIT_DIR := $(OUT)/junit
PYTEST = $(PY) -m pytest -q -p no:cacheprovider --junitxml=$(JUNIT_DIR)/$(1).xml
TEST_SUITES :=
