# The emulator's entry points. `make run` and `make test` each set up what they
# need first (Debian packages, .venv, Python dependencies), so either works alone
# on a fresh Debian/Ubuntu machine as root.

VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.deps-stamp

TOPO     ?= clos4
TARGET   ?= embedded
LB       ?= ecmp
# CC is also make's C-compiler variable: replace only its built-in default.
ifeq ($(origin CC),default)
CC := dcqcn
endif
RECOVERY ?= gbn
WORKLOAD ?= allreduce
CLI      ?= 0
LINK_DELAY ?= 1
# FC is also make's Fortran-compiler variable (f77): replace only its built-in default.
ifeq ($(origin FC),default)
FC := none
endif
PFC_WATCHDOG ?= off
PYTEST_ARGS ?=
# pytest-xdist workers for tests/validation (`auto`: one per CPU).
TEST_JOBS ?= auto
SUITE    ?= lb-modes
JOBS     ?=
RAY      ?=

.PHONY: setup run experiments test lint bench stop clean help

help:
	@echo "make setup                 install Debian packages, .venv and Python dependencies"
	@echo "make run TOPO=clos4        run the emulated fabric (LB= CC= RECOVERY= WORKLOAD= TARGET= CLI=1 LINK_DELAY=0 FC=none|pfc|credit PFC_WATCHDOG=off|forward|drop|alert)"
	@echo "make experiments SUITE=lb-modes   run experiments/SUITE.yaml and report (JOBS=N RAY=ADDRESS|local)"
	@echo "make test                  run the test suite (as root for namespace/Mininet tests; TEST_JOBS=N PYTEST_ARGS=...)"
	@echo "make lint                  ruff, mypy, the layer contracts (import-linter) and size limits"
	@echo "make bench                 print performance figures"
	@echo "make stop                  remove what a killed run left behind"
	@echo "make clean                 remove build outputs (keeps .venv and results/)"
	@echo "make vm / vm-test / vm-run TOPO=clos4 TARGET=bmv2   the BMv2 reference VM (Vagrant)"

setup:
	@bash scripts/setup.sh

run: setup
	@$(PY) -m emu run $(TOPO) --lb $(LB) --cc $(CC) --recovery $(RECOVERY) \
		--workload $(WORKLOAD) --target $(TARGET) $(if $(filter 1,$(CLI)),--cli,) \
		$(if $(filter 0,$(LINK_DELAY)),--no-link-delay,) \
		--flow-control $(FC) --pfc-watchdog $(PFC_WATCHDOG)

# SUITE: a file in experiments/ (with or without .yaml) or a path (docs/experiments.md).
experiments: setup
	@f="$(SUITE)"; [ -f "$$f" ] || f="experiments/$(SUITE)"; [ -f "$$f" ] || f="experiments/$(SUITE).yaml"; \
	$(PY) -m emu experiment "$$f" $(if $(JOBS),--jobs $(JOBS),) $(if $(RAY),--ray $(RAY),)

# Two phases; both run, and either failing fails the target. First the suite without
# tests/validation, alone: its real-time cases (Mininet, BMv2, the switch daemon) must
# not compete for CPU. Then tests/validation (long virtual-time DCQCN runs, one CPU
# each, nothing measured in wall time) on every CPU; a worker that is done takes tests
# queued behind another's long run (worksteal). PYTEST_ARGS: options for both
# (-x, --durations=20); for a subset of the tests, run pytest on it directly.
test: setup
	@$(PY) -m pytest --ignore=tests/validation $(PYTEST_ARGS); a=$$?; \
	$(PY) -m pytest -n $(TEST_JOBS) --dist worksteal tests/validation $(PYTEST_ARGS); b=$$?; \
	[ $$a -eq 0 ] && [ $$b -eq 0 ]

lint: setup
	@$(VENV)/bin/ruff check emu tests bench scripts
	@$(VENV)/bin/mypy emu
	@$(VENV)/bin/lint-imports
	@$(PY) scripts/check_structure.py

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

stop:
	@$(PY) -m emu stop

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -not -path './.venv/*' -prune -exec rm -rf {} +

include vagrant/vm.mk
