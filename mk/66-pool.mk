# SPDX-License-Identifier: Apache-2.0
# The swap tier's pool manager (issue 15, docs/swap-design.md section 5): cxlt-pool, a static
# program over libcxltrack that runs in the nested host (L1) and hands the device's chunks to
# VMs (the harness's VmSpec(swap_tier=...), tests/nested/test_nested_swap_tier.py).
#
#   make pool-tools     out/pool/bin/cxlt-pool (into the guest and host images, like the CLI)
POOL_BIN := $(OUT)/pool/bin
POOL_SRC := $(wildcard $(TOP)/host-stack/pool/*.c)
GUEST_BIN_DIRS += $(POOL_BIN)
GUEST_DEPS += pool-tools

.PHONY: pool-tools

$(POOL_BIN)/cxlt-pool: $(POOL_SRC) $(DRIVER_LIB)/libcxltrack.a $(LIBCXLT_HDR)
	@mkdir -p $(@D)
	@echo "[pool] cc -static cxlt-pool"
	@nice gcc $(HOST_CFLAGS) -static -o $@ $(POOL_SRC) $(DRIVER_LIB)/libcxltrack.a

pool-tools: $(POOL_BIN)/cxlt-pool ## the swap tier's pool manager (static, for the nested host)
