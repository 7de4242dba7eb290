# SPDX-License-Identifier: Apache-2.0
# Board builds (fpga/<card>/, fpga/README.md): the Vivado non-project flow (`make fpga`; Vivado is
# not installable from this project's package sources), the place-and-route check of the core
# with Yosys and nextpnr-ecp5 from PyPI (`make pnr-check`), and the fpga suite: checks of the flow
# that run without Vivado (the refusal, the top level against the generated wrapper, the IP
# scripts against the generated parameters).
BOARD ?= au250
FPGA_CONFIG ?= default
FPGA_CORE_MHZ ?= 100
FPGA_JOBS ?= 2
FPGA_RTL = $(RTL_BUILD)/board-$(FPGA_CONFIG)
FPGA_OUT = $(TOP)/build/fpga/$(BOARD)
VIVADO ?= vivado
FPGA_CARDS = $(notdir $(patsubst %/,%,$(dir $(wildcard $(TOP)/fpga/*/card.tcl))))
# the place-and-route check: a configuration that fits an ECP5-85F, and the clock it asks for
PNR_CONFIG ?= small
PNR_MHZ ?= 100
PNR_SEED ?= 1
PNR_BUILD = $(TOP)/build/pnr

.PHONY: fpga fpga-rtl pnr-check pnr-rtl test-fpga

fpga: ## Vivado build of BOARD (au250): IP, synthesis, place and route, reports, bitstream in build/fpga/BOARD/
	@test -f $(TOP)/fpga/$(BOARD)/card.tcl || { echo "make fpga: no card '$(BOARD)' (fpga/*/card.tcl: $(FPGA_CARDS))"; exit 2; }
	@command -v $(VIVADO) >/dev/null 2>&1 || { \
		echo "make fpga: Vivado ('$(VIVADO)') is not on PATH, so nothing was built."; \
		echo "make fpga: the $(BOARD) build needs AMD Vivado (2023.2 or newer, with the Alveo board files);"; \
		echo "make fpga: it cannot be installed from this project's package sources. See fpga/README.md."; \
		exit 2; }
	@$(MAKE) --no-print-directory fpga-rtl FPGA_CONFIG=$(FPGA_CONFIG) FPGA_CORE_MHZ=$(FPGA_CORE_MHZ)
	@mkdir -p $(FPGA_OUT)
	cd $(FPGA_OUT) && $(VIVADO) -mode batch -nojournal -log $(FPGA_OUT)/vivado.log \
		-source $(TOP)/fpga/vivado/build.tcl -tclargs $(TOP)/fpga/$(BOARD) $(FPGA_RTL) $(FPGA_OUT) $(FPGA_JOBS)

fpga-rtl: $(FPGA_RTL)/filelist.f ## emit the board wrapper for a build (FPGA_CONFIG, FPGA_CORE_MHZ) into build/rtl/board-<config>/

$(RTL_BUILD)/board-%/filelist.f: $(TOP)/config/%.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@echo "fpga: emitting CxlTrackBoard ($*, core $(FPGA_CORE_MHZ) MHz) into $(dir $@)"
	@$(MILL) rtl.runMain cxltrack.board.BoardMain --config $< --target-dir $(dir $@) \
		--core-mhz $(FPGA_CORE_MHZ) >$(RTL_BUILD)-board-$*.log 2>&1 || { tail -40 $(RTL_BUILD)-board-$*.log; exit 1; }

pnr-rtl: $(PNR_BUILD)/rtl-$(PNR_CONFIG)/filelist.f

$(PNR_BUILD)/rtl-%/filelist.f: $(TOP)/config/%.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(PNR_BUILD)
	@$(MILL) rtl.runMain cxltrack.board.PnrMain --config $< --target-dir $(dir $@) \
		>$(PNR_BUILD)/gen-$*.log 2>&1 || { tail -40 $(PNR_BUILD)/gen-$*.log; exit 1; }

pnr-check: pnr-rtl ## place and route of the core (PNR_CONFIG=small) on an ECP5-85F with Yosys + nextpnr: Fmax, utilisation (~30 min)
	@$(TOP)/fpga/pnr/pnr-check.sh $(PNR_BUILD)/rtl-$(PNR_CONFIG) $(PNR_BUILD)/$(PNR_CONFIG) $(PNR_MHZ) $(PNR_SEED)

test-fpga: fpga-rtl ## the flow's checks that need no Vivado (refusal message, top level vs wrapper, IP parameters)
	@$(TOP)/scripts/apt-ensure tcl8.6
	@mkdir -p $(JUNIT_DIR)
	@cd $(TOP)/fpga && $(call PYTEST,fpga) tests

TEST_SUITES += fpga
