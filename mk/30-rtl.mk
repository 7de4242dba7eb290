# SPDX-License-Identifier: Apache-2.0
# The RTL: Chisel generator (Mill 0.12 via the launcher script from Maven Central), SystemVerilog
# for every configuration, cocotb regression (Verilator + Icarus), benchmark, Yosys estimate.
MILL_LAUNCHER_URL := https://repo1.maven.org/maven2/com/lihaoyi/mill-dist/1.1.5/mill-dist-1.1.5-mill.sh
MILL_LAUNCHER_SHA256 := b04c98d6dface8ffdbf6c7f94aee68dae3d3309f2cab067989bb54159153db95
MILL_SH := $(CACHE)/mill/mill-dist-1.1.5-mill.sh
MILL := COURSIER_CACHE=$(CACHE)/coursier MILL_FINAL_DOWNLOAD_FOLDER=$(CACHE)/mill/download nice $(MILL_SH) --no-server
RTL_SRC := $(wildcard $(TOP)/rtl/src/cxltrack/*.scala $(TOP)/rtl/src/cxltrack/board/*.scala) $(TOP)/build.sc $(TOP)/.mill-version
RTL_BUILD := $(TOP)/build/rtl
RTL_CONFIGS := default small
# simulation builds: a 4-cycle tick so that timeouts are quick to reach
RTL_SIM_CONFIG := small
RTL_TICK_CYCLES_SIM := 4
# standalone blocks for the block benches (sim/tb/blocks/): every block registered in
# rtl/src/cxltrack/Blocks.scala, emitted into build/rtl/blocks/<Block>-<config>/
RTL_BLOCK_CONFIG := $(RTL_SIM_CONFIG)
RTL_BLOCKS_STAMP := $(RTL_BUILD)/blocks/.$(RTL_BLOCK_CONFIG).stamp
# the PCIe board wrapper around the core (rtl/src/cxltrack/board/) for its benches (sim/tb/board/):
# simulation config and tick, a memory BAR twice the capacity (decode errors reachable through it)
RTL_BOARD_SIM := $(RTL_BUILD)/board-$(RTL_SIM_CONFIG)-sim/filelist.f
# curl: the Mill launcher below and the launcher's own download of the Mill executable.
RTL_APT := curl openjdk-17-jdk-headless iverilog yosys liblz4-dev zlib1g-dev make g++
RTL_PYTEST = cd $(TOP)/sim && $(call PYTEST,$(1))
RTL_JOBS ?= $(shell n=$$(nproc); echo $$((n < 4 ? n : 4)))

# the harvest engine alone (rtl/src/cxltrack/HarvestBench.scala: the command engine and the dirty/accessed bitmaps)
# for its benches (sim/tb/harvest/): the default configuration in the regression (128 rows of 512 pages: several
# summary words, unaligned ranges), the 64 GiB configuration (dirty bitmap only) for `make bench-harvest`
RTL_HARVEST_SIM := $(RTL_BUILD)/harvest-default/filelist.f $(RTL_BUILD)/harvest-default-packed/filelist.f
RTL_HARVEST_BENCH := $(RTL_BUILD)/harvest-harvest64g/filelist.f

.PHONY: rtl-dram-sim rtl-dram-core-sim rtl rtl-sim rtl-blocks rtl-board-sim rtl-harvest-sim rtl-deps lint-rtl test-rtl rtl-equiv bench-rtl bench-harvest synth-estimate synth-scaling fmt-rtl check-fmt-rtl

$(MILL_SH):
	@$(TOP)/scripts/apt-ensure $(RTL_APT)
	@mkdir -p $(dir $@)
	@curl -sSfL -o $@.tmp $(MILL_LAUNCHER_URL)
	@echo "$(MILL_LAUNCHER_SHA256)  $@.tmp" | sha256sum -c --quiet - || { rm -f $@.tmp; echo "mill launcher: sha256 mismatch"; exit 1; }
	@chmod +x $@.tmp && mv $@.tmp $@

rtl-deps: $(MILL_SH)
	@$(TOP)/scripts/apt-ensure $(RTL_APT)

$(RTL_BUILD)/%/filelist.f: $(TOP)/config/%.toml $(RTL_SRC) | rtl-deps
	@echo "rtl: emitting $* into $(RTL_BUILD)/$*"
	@$(MILL) rtl.run --config $< --target-dir $(RTL_BUILD)/$* >$(RTL_BUILD)-$*.log 2>&1 || { tail -40 $(RTL_BUILD)-$*.log; exit 1; }

$(RTL_BUILD)/$(RTL_SIM_CONFIG)-sim/filelist.f: $(TOP)/config/$(RTL_SIM_CONFIG).toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@$(MILL) rtl.run --config $< --target-dir $(RTL_BUILD)/$(RTL_SIM_CONFIG)-sim \
		--tick-cycles $(RTL_TICK_CYCLES_SIM) >$(RTL_BUILD)-sim.log 2>&1 || { tail -40 $(RTL_BUILD)-sim.log; exit 1; }

rtl: $(foreach c,$(RTL_CONFIGS),$(RTL_BUILD)/$(c)/filelist.f) ## emit SystemVerilog for every config into build/rtl/<config>/
	@ls -1 $(foreach c,$(RTL_CONFIGS),$(RTL_BUILD)/$(c)/filelist.f)

rtl-sim: $(RTL_BUILD)/$(RTL_SIM_CONFIG)-sim/filelist.f

$(RTL_BLOCKS_STAMP): $(TOP)/config/$(RTL_BLOCK_CONFIG).toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(dir $@)
	@$(MILL) rtl.runMain cxltrack.Blocks --config $< --target-dir $(RTL_BUILD)/blocks \
		--tick-cycles $(RTL_TICK_CYCLES_SIM) >$(RTL_BUILD)-blocks.log 2>&1 || { tail -40 $(RTL_BUILD)-blocks.log; exit 1; }
	@touch $@

rtl-blocks: $(RTL_BLOCKS_STAMP) ## emit every standalone block (Blocks.scala) into build/rtl/blocks/<Block>-<config>/

$(RTL_BOARD_SIM): $(TOP)/config/$(RTL_SIM_CONFIG).toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@$(MILL) rtl.runMain cxltrack.board.BoardMain --config $< --target-dir $(dir $@) \
		--tick-cycles $(RTL_TICK_CYCLES_SIM) --mem-bar-extra-bits 1 >$(RTL_BUILD)-board-sim.log 2>&1 || { tail -40 $(RTL_BUILD)-board-sim.log; exit 1; }

# (both forms of the tables' per-row flip-flops: the core's, and the packed one the 64 GiB benchmark uses)
$(RTL_BUILD)/harvest-default/filelist.f: $(TOP)/config/default.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@$(MILL) rtl.runMain cxltrack.HarvestBenchMain --config $< --target-dir $(dir $@) \
		>$(RTL_BUILD)-harvest-default.log 2>&1 || { tail -40 $(RTL_BUILD)-harvest-default.log; exit 1; }

$(RTL_BUILD)/harvest-default-packed/filelist.f: $(TOP)/config/default.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@$(MILL) rtl.runMain cxltrack.HarvestBenchMain --config $< --target-dir $(dir $@) --packed-state \
		>$(RTL_BUILD)-harvest-default-packed.log 2>&1 || { tail -40 $(RTL_BUILD)-harvest-default-packed.log; exit 1; }

rtl-harvest-sim: $(RTL_HARVEST_SIM) ## emit the harvest engine's bench top (HarvestBench, default config) into build/rtl/harvest-default{,-packed}/

# 16 Mi pages: Chisel + firtool take ~5 min and Verilator longer; the per-row live-value table and summary are flip-flops
$(RTL_HARVEST_BENCH): $(TOP)/config/harvest64g.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@echo "rtl: emitting HarvestBench for config/harvest64g.toml (dirty bitmap only; takes minutes)"
	@$(MILL) rtl.runMain cxltrack.HarvestBenchMain --config $< --target-dir $(dir $@) --dirty-only --packed-state \
		>$(RTL_BUILD)-harvest-harvest64g.log 2>&1 || { tail -40 $(RTL_BUILD)-harvest-harvest64g.log; exit 1; }

# The command engine with its per-page tables (bitmaps, hotness, BAT) in device DRAM behind the update cache
# (rtl/src/cxltrack/DramHarvestBench.scala, DramTables.scala) at 1 TiB (config/dram1t.toml): its benches (sim/tb/dram/) and `make synth-estimate`
RTL_DRAM_SIM := $(RTL_BUILD)/dram-dram1t/filelist.f
$(RTL_BUILD)/dram-%/filelist.f: $(TOP)/config/%.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@echo "rtl: emitting DramHarvestBench for config/$*.toml"
	@$(MILL) rtl.runMain cxltrack.DramHarvestMain --config $< --target-dir $(dir $@) \
		>$(RTL_BUILD)-dram-$*.log 2>&1 || { tail -40 $(RTL_BUILD)-dram-$*.log; exit 1; }

rtl-dram-sim: $(RTL_DRAM_SIM) ## emit the harvest engine with DRAM tables (DramHarvestBench, config/dram1t.toml) into build/rtl/dram-dram1t/

# The whole core at 1 TiB with its tables in device DRAM (CxlTrackCore, config/dram1t.toml): the core's benches run on it
# too (sim/tb/test_*.py, those that fit a 1 TiB device: test_rtl.py DRAM_CORE_BENCHES)
RTL_DRAM_CORE_SIM := $(RTL_BUILD)/dram1t-sim/filelist.f
$(RTL_DRAM_CORE_SIM): $(TOP)/config/dram1t.toml $(RTL_SRC) | rtl-deps
	@mkdir -p $(RTL_BUILD)
	@echo "rtl: emitting CxlTrackCore for config/dram1t.toml"
	@$(MILL) rtl.run --config $< --target-dir $(dir $@) --tick-cycles $(RTL_TICK_CYCLES_SIM) \
		>$(RTL_BUILD)-dram1t-sim.log 2>&1 || { tail -40 $(RTL_BUILD)-dram1t-sim.log; exit 1; }

rtl-dram-core-sim: $(RTL_DRAM_CORE_SIM) ## emit the whole core with DRAM tables (config/dram1t.toml) into build/rtl/dram1t-sim/

rtl-board-sim: $(RTL_BOARD_SIM) ## emit the PCIe board wrapper (CxlTrackBoard) for simulation into build/rtl/board-small-sim/

lint-rtl: $(RTL_BUILD)/small/filelist.f ## verilator --lint-only -Wall on the emitted RTL
	@cd $(RTL_BUILD)/small && verilator --lint-only -Wall --top-module CxlTrackCore $(TOP)/sim/verilator.vlt $$(cat filelist.f)
	@echo "lint-rtl: verilator -Wall clean"

# Every bench (the core's, sim/tb/test_*.py, and the blocks', sim/tb/blocks/test_*.py) runs on
# Verilator and on Icarus, at the same iteration counts: Icarus is ~2-3x slower on these benches;
# its runs are ~2 of the ~4 min in pytest (docs/rtl-results.md). The board wrapper's bench
# (sim/tb/board/, through cocotbext-pcie) runs on Verilator. BENCH=test_x (several: space
# separated) runs only those benches, plus the lint checks. RTL_JOBS pytest-xdist workers (default:
# one per core, at most 4) run the benches side by side: a bench is one single-threaded simulator.
test-rtl: rtl-sim rtl-blocks rtl-board-sim rtl-harvest-sim rtl-dram-sim rtl-dram-core-sim rtl-deps ## RTL regression: every bench (core, blocks, board wrapper); BENCH=name for one
	@mkdir -p $(JUNIT_DIR)
	@rm -rf $(TOP)/build/sim/coverage
	@$(MILL) rtl.checkFormat >/dev/null 2>&1 || { echo "test-rtl: Scala sources not formatted (make fmt-rtl)"; exit 1; }
	@$(call RTL_PYTEST,rtl) -n $(RTL_JOBS) --dist worksteal test_rtl.py --sim verilator --sim icarus $(foreach b,$(BENCH),--bench $(b))
	@cd $(TOP)/sim && $(PY) coverage_report.py $(TOP)/build/sim/coverage

# A refactoring check: the core of git revision EQUIV_REF (default main), emitted for the simulation
# configuration, against the working tree's, cycle by cycle under random stimulus (sim/equiv/).
EQUIV_REF ?= main
EQUIV_CYCLES ?= 300000
rtl-equiv: rtl-sim rtl-deps ## cycle equivalence of the core with the core at EQUIV_REF (default main), random stimulus
	@rm -rf $(RTL_BUILD)/equiv-ref && mkdir -p $(RTL_BUILD)/equiv-ref/src
	@git -C $(TOP) archive $(EQUIV_REF) rtl build.sc .mill-version config | tar -x -C $(RTL_BUILD)/equiv-ref/src
	@cd $(RTL_BUILD)/equiv-ref/src && $(MILL) rtl.run --config config/$(RTL_SIM_CONFIG).toml \
		--target-dir $(RTL_BUILD)/equiv-ref/rtl --tick-cycles $(RTL_TICK_CYCLES_SIM) >$(RTL_BUILD)-equiv-ref.log 2>&1 \
		|| { tail -40 $(RTL_BUILD)-equiv-ref.log; exit 1; }
	@$(PY) $(TOP)/sim/equiv/lockstep.py --ref $(RTL_BUILD)/equiv-ref/rtl --dut $(RTL_BUILD)/$(RTL_SIM_CONFIG)-sim \
		--build $(TOP)/build/equiv --cycles $(EQUIV_CYCLES)

bench-rtl: rtl-sim rtl-deps ## benchmark: throughput with tracking on/off, added latency, sim speed
	@cd $(TOP)/sim && $(PY) bench_rtl.py

# The harvest engine at 64 GiB (config/harvest64g.toml, HarvestBench with the dirty bitmap only): device cycles of a
# dense dirty harvest of the whole device (every page dirty: 512 RESULT-window commands of 32 768 pages) and of a
# 1 %-sparse one (1 % of the 2 MiB regions written, a few pages each), summed from launch to done of each command
# (the engine's busy cycles, without register-port overhead), in us at 400 MHz; and the data-path throughput ratio
# tracking on/off (vperf, small config) while harvests run back to back, through RESULT and by DMA, and one DMA
# harvest of the whole device, dense and 1 %-sparse (sim/bench_harvest.py). Then the host side
# (tests/driver/bench_host_cpu.py): the guest CPU time of one dirty-log round (a CLEAR harvest of the whole device
# through cxltrack.ko) on the QEMU full stack, RESULT window vs DMA in the same VM. Last two lines:
# `host_cpu_mmio_us=<x> host_cpu_dma_us=<y> mmio_over_dma=<r> (...)` and `dense_64GiB_us=<x> sparse1pct_64GiB_us=<y>
# dense_dma_64GiB_us=<x'> sparse1pct_dma_64GiB_us=<y'> data_path_ratio=<z> host_cpu_us=<DMA figure>`.
bench-harvest: $(RTL_HARVEST_BENCH) rtl-sim rtl-deps guest ## harvest engine cycles at 64 GiB (dense, 1 %-sparse; RESULT windows and one DMA command), the data-path ratio while harvesting, and the host CPU per dirty-log round (MMIO vs DMA)
	@mkdir -p $(OUT)
	@cd $(TOP)/sim && $(PY) bench_harvest.py | tee $(OUT)/bench-harvest-device.txt; test $${PIPESTATUS[0]} -eq 0
	@q="$(QEMU_BIN)"; test -x "$$q" || { echo "bench-harvest: no QEMU binary (got '$$q')"; exit 1; }; \
		$(PY) $(TOP)/tests/driver/bench_host_cpu.py --qemu "$$q" --image $(GUEST_IMAGE) \
		--device-line "$$(tail -n1 $(OUT)/bench-harvest-device.txt)"

SYNTH_TIMEOUT ?= 3600
SYNTH_SCALING := 1 4
# The whole core at 1 TiB with every per-page table in device DRAM (config/dram1t.toml: CxlTrackCore with DramTables)
# runs after the default core and the board wrapper, without Yosys's fsm pass (NOFSM=1, sim/synth_estimate.sh: FSM_DETECT
# over the 1 024-entry chunk owner table alone took ~1 h; the v3 default core's recorded figure, docs/rtl-results.md, is
# NOFSM=1's too; the board wrapper, its core a black box, keeps the full script) and with ABC's light LUT script
# (ABC_LIGHT=1: the default script had not finished the engine top with every table after 77 min of ABC; the light one
# is ~5 % above it in LUTs on the bitmaps-only top). ~45 min of CPU; SYNTH_LARGE=0 skips it. The last lines are the
# default core and the 1 TiB core side by side.
SYNTH_LARGE ?= 1
synth-estimate: $(RTL_BUILD)/default/filelist.f $(RTL_BUILD)/board-default/filelist.f $(RTL_BUILD)/dram1t/filelist.f rtl-deps ## Yosys synth_xilinx (xcup) estimate of the default core (~40 min), the board wrapper around it, and the whole core at 1 TiB with its tables in DRAM (config/dram1t.toml; ~45 min), side by side
	@NOFSM=1 $(TOP)/sim/synth_estimate.sh $(RTL_BUILD)/default $(TOP)/build/synth $(SYNTH_TIMEOUT)
	@$(TOP)/sim/synth_estimate.sh $(RTL_BUILD)/board-default $(TOP)/build/synth $(SYNTH_TIMEOUT) CxlTrackBoard CxlTrackCore
	@if [ "$(SYNTH_LARGE)" = 1 ]; then ABC_LIGHT=1 NOFSM=1 $(TOP)/sim/synth_estimate.sh $(RTL_BUILD)/dram1t $(TOP)/build/synth $$(( $(SYNTH_TIMEOUT) * 2 )); fi
	@printf '%-24s %-18s %8s %8s %7s %7s %5s %7s %7s\n' config top LUT FF BRAM36 BRAM18 URAM LUTRAM yosys_s
	@for n in default dram1t; do f=$(TOP)/build/synth/$$n.summary; test -f $$f && \
		printf '%-24s %-18s %8s %8s %7s %7s %5s %7s %7s\n' $$(cat $$f) || echo "$$n: no result"; done

# default parameters at 1 and 4 MiB (64 KiB chunks): the series in docs/rtl-results.md
synth-scaling: rtl-deps
	@mkdir -p $(TOP)/build/synth/configs
	@for n in $(SYNTH_SCALING); do \
		sed -e "s/^capacity_bytes.*/capacity_bytes = $$((n * 1048576))/" -e "s/^chunk_shift.*/chunk_shift = 16/" \
			$(TOP)/config/default.toml > $(TOP)/build/synth/configs/cap$${n}m.toml; \
		$(MILL) rtl.run --config $(TOP)/build/synth/configs/cap$${n}m.toml --target-dir $(RTL_BUILD)/cap$${n}m \
			>$(TOP)/build/synth/gen-cap$${n}m.log 2>&1 || exit 1; \
		$(TOP)/sim/synth_estimate.sh $(RTL_BUILD)/cap$${n}m $(TOP)/build/synth 7200; \
	done

fmt-rtl: ## format the Scala sources
	@$(MILL) rtl.reformat

check-fmt-rtl: ## check the Scala formatting
	@$(MILL) rtl.checkFormat

TEST_SUITES += rtl
