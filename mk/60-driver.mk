# SPDX-License-Identifier: Apache-2.0
# Linux driver and host stack: cxltrack.ko for the pinned
# guest kernel, libcxltrack + the cxltrack CLI + guest test programs (static),
# checkpatch, and the full-stack driver tests.
#
#   make driver          build driver/ against the guest headers (W=1) -> out/driver/module/cxltrack.ko
#   make host-tools      libcxltrack.a, cxltrack CLI, fuzzer, test programs -> out/driver/bin (static)
#   make driver-check    checkpatch.pl --strict over the driver sources and the uapi header
#   make test-driver     boot VMs with the tracker and run tests/driver (JUnit: out/junit/driver.xml)
DRIVER_SRC := $(TOP)/driver
DRIVER_OUT := $(OUT)/driver
DRIVER_KBUILD := $(DRIVER_OUT)/kbuild
DRIVER_MOD := $(DRIVER_OUT)/module
DRIVER_BIN := $(DRIVER_OUT)/bin
DRIVER_LIB := $(DRIVER_OUT)/lib
REGS_H := $(TOP)/regmap/generated/cxltrack_regs.h
DRIVER_SOURCES := $(wildcard $(DRIVER_SRC)/*.c $(DRIVER_SRC)/*.h $(DRIVER_SRC)/Kbuild) \
	$(shell find $(DRIVER_SRC)/include -name '*.h')
HOST_CFLAGS := -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE \
	-I$(DRIVER_SRC)/include/uapi -I$(TOP)/host-stack/lib -I$(TOP)/regmap/generated
LIBCXLT_SRC := $(wildcard $(TOP)/host-stack/lib/*.c)
LIBCXLT_HDR := $(wildcard $(TOP)/host-stack/lib/*.h) $(DRIVER_SRC)/include/uapi/linux/cxltrack.h
CLI_SRC := $(wildcard $(TOP)/host-stack/cli/*.c)
CLI_HDR := $(wildcard $(TOP)/host-stack/cli/*.h)
DRVTEST_SRC := $(wildcard $(TOP)/tests/driver/guest/*.c)
DRVTEST_BIN := $(patsubst $(TOP)/tests/driver/guest/%.c,$(DRIVER_BIN)/%,$(DRVTEST_SRC))

GUEST_MODULE_DIRS += $(DRIVER_MOD)
GUEST_BIN_DIRS += $(DRIVER_BIN)
GUEST_DEPS += driver host-tools
TEST_SUITES += driver

.PHONY: driver host-tools driver-check test-driver driver-clean test-driver-debug

# Sources are copied into out/driver/kbuild (with the generated register
# header next to them) so Kbuild's objects never land in the work tree.
$(DRIVER_MOD)/cxltrack.ko: $(DRIVER_SOURCES) $(REGS_H)
	@$(TOP)/scripts/apt-ensure dwarves >&2
	@kdir=$$($(HARNESS) kernel --print headers) && test -d "$$kdir" && \
	mkdir -p $(DRIVER_KBUILD) $(DRIVER_MOD) && \
	rm -rf $(DRIVER_KBUILD)/src && mkdir -p $(DRIVER_KBUILD)/src && \
	cp -r $(DRIVER_SRC)/*.c $(DRIVER_SRC)/*.h $(DRIVER_SRC)/Kbuild $(DRIVER_SRC)/include \
		$(DRIVER_KBUILD)/src/ && \
	cp $(REGS_H) $(DRIVER_KBUILD)/src/cxltrack_regs.h && \
	echo "[driver] make -C $$kdir M=... W=1 modules" && \
	nice $(MAKE) --no-print-directory -s -C "$$kdir" M=$(DRIVER_KBUILD)/src W=1 modules \
		2>&1 | tee $(DRIVER_OUT)/build.log; \
	test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	if grep -E 'warning:|error:' $(DRIVER_OUT)/build.log; then \
		echo "[driver] the build printed warnings (W=1 must be clean)"; exit 1; fi; \
	cp $(DRIVER_KBUILD)/src/cxltrack.ko $@

# A second module that calls the exported in-kernel API (tests/driver/kmod).
APITEST_SRC := $(wildcard $(TOP)/tests/driver/kmod/*.c $(TOP)/tests/driver/kmod/Kbuild)
$(DRIVER_MOD)/cxltrack_apitest.ko: $(APITEST_SRC) $(DRIVER_MOD)/cxltrack.ko
	@kdir=$$($(HARNESS) kernel --print headers) && \
	rm -rf $(DRIVER_KBUILD)/apitest && mkdir -p $(DRIVER_KBUILD)/apitest && \
	cp $(APITEST_SRC) $(DRIVER_KBUILD)/apitest/ && \
	echo "[driver] make -C $$kdir M=... W=1 modules (cxltrack_apitest)" && \
	nice $(MAKE) --no-print-directory -s -C "$$kdir" M=$(DRIVER_KBUILD)/apitest W=1 \
		CXLT_DRIVER_INCLUDE=$(DRIVER_KBUILD)/src/include \
		KBUILD_EXTRA_SYMBOLS=$(DRIVER_KBUILD)/src/Module.symvers modules \
		2>&1 | tee $(DRIVER_OUT)/build-apitest.log; \
	test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	if grep -E 'warning:|error:' $(DRIVER_OUT)/build-apitest.log; then exit 1; fi; \
	cp $(DRIVER_KBUILD)/apitest/cxltrack_apitest.ko $@

driver: $(DRIVER_MOD)/cxltrack.ko $(DRIVER_MOD)/cxltrack_apitest.ko ## build cxltrack.ko (+ API test module) against the pinned guest kernel (W=1, warning-free)

$(DRIVER_LIB)/libcxltrack.a: $(LIBCXLT_SRC) $(LIBCXLT_HDR) $(REGS_H) | guest-deps-host
	@mkdir -p $(DRIVER_LIB)/obj
	@for s in $(LIBCXLT_SRC); do \
		nice gcc $(HOST_CFLAGS) -c $$s -o $(DRIVER_LIB)/obj/$$(basename $${s%.c}).o || exit 1; done
	@rm -f $@ && ar rcs $@ $(DRIVER_LIB)/obj/*.o

$(DRIVER_BIN)/cxltrack: $(CLI_SRC) $(CLI_HDR) $(DRIVER_LIB)/libcxltrack.a $(LIBCXLT_HDR)
	@mkdir -p $(@D)
	@echo "[host-tools] cc -static cxltrack"
	@nice gcc $(HOST_CFLAGS) -static -o $@ $(CLI_SRC) $(DRIVER_LIB)/libcxltrack.a -lpthread

$(DRIVER_BIN)/%: $(TOP)/tests/driver/guest/%.c $(DRIVER_LIB)/libcxltrack.a $(LIBCXLT_HDR)
	@mkdir -p $(@D)
	@echo "[host-tools] cc -static $*"
	@nice gcc $(HOST_CFLAGS) -static -o $@ $< $(DRIVER_LIB)/libcxltrack.a -lpthread

host-tools: $(DRIVER_BIN)/cxltrack $(DRVTEST_BIN) ## libcxltrack, the cxltrack CLI and guest test programs (static)

# The uapi header cannot use BIT() (not exported to user space), hence BIT_MACRO there.
CHECKPATCH_OPTS := --strict --no-tree --quiet --terse --show-types --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG
driver-check: ## checkpatch.pl --strict over driver/ (cached linux-source checkpatch)
	@$(TOP)/scripts/apt-ensure perl xz-utils >&2
	@cp=$$($(DRIVER_SRC)/scripts/get-checkpatch) && \
	out=$$(perl $$cp $(CHECKPATCH_OPTS) -f $(wildcard $(DRIVER_SRC)/*.c $(DRIVER_SRC)/*.h $(TOP)/tests/driver/kmod/*.c) \
		$(DRIVER_SRC)/include/linux/cxltrack.h; \
	      perl $$cp $(CHECKPATCH_OPTS),BIT_MACRO -f $(DRIVER_SRC)/include/uapi/linux/cxltrack.h) ; \
	bad=$$(echo "$$out" | grep -v '^total: 0 errors, 0 warnings, 0 checks'); \
	if [ -n "$$bad" ]; then echo "$$bad"; exit 1; fi; \
	echo "driver-check: checkpatch --strict clean ($$(echo "$$out" | wc -l) files)"; \
	kd=$$($(HARNESS) kernel --print headers)/../linux-headers-$$(sed -n 's/^GUEST_KERNEL_ABI := //p' \
		$(TOP)/config/guest-kernel.mk)-common/scripts/kernel-doc; \
	warn=$$(perl $$kd -none -Wall $(DRIVER_SRC)/include/linux/cxltrack.h $(wildcard $(DRIVER_SRC)/*.c) 2>&1); \
	if [ -n "$$warn" ]; then echo "$$warn"; exit 1; fi; \
	echo "driver-check: kernel-doc -Wall clean"

driver-clean:
	@rm -rf $(DRIVER_OUT)

# The driver suites once on a debug build of the same kernel source (issue 11): lockdep,
# KASAN, DEBUG_ATOMIC_SLEEP, DEBUG_LIST, FAILSLAB, kmemleak (driver/scripts/build-debug-kernel; most of an hour on
# two cores the first time). Every driver test already fails on a warning, lockdep report or
# KASAN report in its guest's kernel log (tests/driver/conftest.py). The driver, the tools and
# the image are built apart, in $(DEBUG_OUT); the image has no KVM (the debug build has none).
DEBUG_KERNEL := $(CACHE)/debug-kernel
DEBUG_OUT := $(OUT)/debug-kernel
DEBUG_EXTRA_MODULES := kmem,dax_hmem,cxl_pmem,libnvdimm,dax_pmem
# 4-level paging: with TCG's LA57 an interrupt during the boot CPU's identify_cpu() now and then
# made KASAN report a wild access in rcu_is_watching() (core kernel, before any module), which
# also switches lockdep off for the rest of that boot.
DEBUG_APPEND := no5lvl
test-driver-debug: ## the driver suites on a debug build of the guest kernel (lockdep, KASAN); not in `make test`
	@$(TOP)/scripts/apt-ensure gcc make flex bison bc libelf-dev libssl-dev perl rsync xz-utils >&2
	@$(MAKE) --no-print-directory guest-kernel
	@GUEST_KDIR=$$($(HARNESS) kernel --print headers) $(DRIVER_SRC)/scripts/build-debug-kernel $(DEBUG_KERNEL)
	@CXLTRACK_GUEST_KERNEL=$(DEBUG_KERNEL) $(MAKE) --no-print-directory OUT=$(DEBUG_OUT) driver host-tools guest-tools
	@CXLTRACK_GUEST_KERNEL=$(DEBUG_KERNEL) $(HARNESS) image --name busybox-debug \
		--bin-dir $(DEBUG_OUT)/guest/bin --bin-dir $(DEBUG_OUT)/driver/bin --module-dir $(DEBUG_OUT)/driver/module \
		--extra-modules $(DEBUG_EXTRA_MODULES) --append "$(DEBUG_APPEND)" --manifest $(DEBUG_OUT)/guest/busybox.json
	@q="$(strip $(QEMU_BIN))"; test -x "$$q" || { echo "test-driver-debug: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_GUEST_IMAGE=$(DEBUG_OUT)/guest/busybox.json CXLTRACK_TIMEOUT_SCALE=3 \
		$(call VM_PYTEST,driver-debug) -n $(DRIVER_JOBS) --dist worksteal $(TOP)/tests/driver

# Two VMs at a time by default (DRIVER_JOBS): a test's VM waits on its agent much of the time, so
# two side by side take ~0.6 of the serial time on 2 cores (docs/results.md); each test has its own VM.
DRIVER_JOBS ?= 2
test-driver: guest ## full-stack driver tests (VMs with the tracker as function 1)
	@q="$(strip $(QEMU_BIN))"; test -x "$$q" || { echo "test-driver: no QEMU binary (got '$$q')"; exit 1; }; \
	CXLTRACK_QEMU="$$q" CXLTRACK_GUEST_IMAGE=$(GUEST_IMAGE) $(call VM_PYTEST,driver) -n $(DRIVER_JOBS) --dist worksteal \
		$(TOP)/tests/driver
