# SPDX-License-Identifier: Apache-2.0
# The full-stack demo: `make demo` builds QEMU, the guest image with the
# driver, the CLI and cxltrack-demo, boots the CXL machine and runs the
# scenario through the driver. `make demo-model` runs it on the reference
# model alone (seconds, no VM).
DEMO_BIN := $(OUT)/demo/bin
GUEST_BIN_DIRS += $(DEMO_BIN)
GUEST_DEPS += demo-tools

.PHONY: demo-tools demo-model

DEMO_SRC := $(TOP)/host-stack/demo/cxltrack-demo.c $(TOP)/host-stack/demo/wp-log.c

$(DEMO_BIN)/cxltrack-demo: $(DEMO_SRC) $(TOP)/host-stack/demo/wp-log.h $(DRIVER_LIB)/libcxltrack.a $(LIBCXLT_HDR)
	@mkdir -p $(@D)
	@echo "[demo] cc -static cxltrack-demo"
	@nice gcc $(HOST_CFLAGS) -static -o $@ $(DEMO_SRC) $(DRIVER_LIB)/libcxltrack.a -lpthread

demo-tools: $(DEMO_BIN)/cxltrack-demo

demo-model: ## the scenario on the reference model only (no VM)
	@$(PY) -m cxltrack.demo.model_scenario

DEMO_DEPS = guest qemu
DEMO_CMD = $(PY) -m cxltrack.demo.fullstack --qemu "$(QEMU_BIN)" --image $(GUEST_IMAGE)

TEST_SUITES += demo
.PHONY: test-demo
test-demo: guest ## the full-stack demo scenario, small, as a test
	@mkdir -p $(JUNIT_DIR)
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "test-demo: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_GUEST_IMAGE=$(GUEST_IMAGE) $(call PYTEST,demo) $(TOP)/tests/demo
