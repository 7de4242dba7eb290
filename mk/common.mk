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
# Suites that boot VMs: a test that failed because the platform lost its machine (a vCPU that
# never takes an interrupt again under multi-threaded TCG: GuestWedged, or a nested host whose
# kernel reports a CPU stuck for minutes: HostWedged; docs/harness.md) runs once more on a
# fresh one. Any other failure is final; each re-run is listed at the end of the suite's output.
VM_PYTEST = $(call PYTEST,$(1)) --reruns 1 --only-rerun '^(HostWedged|GuestWedged):'
TEST_SUITES :=
