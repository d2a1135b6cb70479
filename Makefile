# phase0 — Phase 0 of bringing a HuggingFace decoder-only LLM up on AMD NPU2.
# `make phase0 [MODEL=…]` does the whole job; `make test` runs every test.

SHELL        := /bin/bash
GO           ?= go
# Builds and tests are -trimpath: compiled packages do not embed the clone's
# path, so a fresh clone (CI's) reuses the build cache of an earlier one
# (a user's GOFLAGS come first; -trimpath is added to them).
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
BIN          := bin/phase0
# phase0's cache, where the binary keeps its own (settings `cache`):
# $PHASE0_CACHE, else $XDG_CACHE_HOME/phase0, else ~/.cache/phase0.
CACHE_DIR    ?= $(or $(PHASE0_CACHE),$(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME)/phase0),$(HOME)/.cache/phase0)
REQ_HASH     := $(shell sha256sum requirements.txt | cut -c1-12)
MIN_HASH     := $(shell sha256sum requirements-min.txt | cut -c1-12)
BLACK_HASH   := $(shell sha256sum requirements-black.txt | cut -c1-12)
XSD_HASH     := $(shell sha256sum requirements-xsd.txt | cut -c1-12)
MODEL        ?= default
NAME         ?=
LLMS_DIR     ?=# mlir-air programming_examples/llms; empty: ./workspace with the bundled runner
FUZZTIME     ?= 15s

# phase0 loads libpython at run time from the python it is given, so it builds
# without Python headers or libraries. The venv it finds by itself is made
# from the newest CPython 3.10–3.14 here with a shared libpython (PATH, then
# pyenv); BASE_PYTHON=/path/to/python3.N picks another. Found once, on first use.
PY_FOUND      = $(eval PY_FOUND := $$(shell scripts/find-python 3.10 3.14))$(PY_FOUND)
BASE_PYTHON  ?= $(word 2,$(PY_FOUND))
PY_MINOR     ?= $(if $(filter command line environment,$(origin BASE_PYTHON)),$(shell $(BASE_PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'),$(word 1,$(PY_FOUND)))
# Keyed by requirements.txt and the Python minor: a changed requirement or
# another Python gets a fresh venv, an unchanged one is reused by every clone.
VENV         ?= $(CACHE_DIR)/venv-$(REQ_HASH)-py$(PY_MINOR)
VENV_PY       = $(VENV)/bin/python

# The other supported minors, each in a NumPy-only venv, for the bridge tests.
ALL_MINORS   := 3.10 3.11 3.12 3.13 3.14
TEST_MINORS  ?= $(filter-out $(PY_MINOR),$(ALL_MINORS))
TEST_VENVS    = $(foreach m,$(TEST_MINORS),$(CACHE_DIR)/venv-min-$(MIN_HASH)-py$(m))
TEST_PYTHONS  = $(subst $(eval) ,:,$(strip $(foreach v,$(TEST_VENVS),$(if $(wildcard $(v)/.phase0-installed),$(v)/bin/python))))

# black, unpinned like mlir-air's CI, in a small venv of its own: the generated
# Python must pass `black --check`. Keyed by the year as well, since black
# changes its stable style once a year (each January release).
BLACK_VENV   := $(CACHE_DIR)/venv-black-$(BLACK_HASH)-$(shell date +%Y)
BLACK         = $(BLACK_VENV)/bin/black

# xmlschema, a real XSD validator, in a small venv of its own: the JUnit
# report (--junit) is checked against the JUnit schema CI systems read.
XSD_VENV     := $(CACHE_DIR)/venv-xsd-$(XSD_HASH)
XSD_PY        = $(XSD_VENV)/bin/python

# staticcheck for make lint, pinned (installed by its rule below).
STATICCHECK_VERSION := v0.8.2
STATICCHECK  := $(CACHE_DIR)/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck

# The binary finds make's venv by itself (internal/pyenv); --python and
# PHASE0_PYTHON still take precedence.
LDFLAGS       = -X phase0/internal/pyenv.makeVenv=$(VENV)

.PHONY: help build test test-prereqs chroots pytest-venvs test-short test-orchestrator test-go test-py bench calibrate fuzz venv pyvenvs black-venv xsd-venv print-python print-test-env phase0 clean check-xrt check-py314 python-package test-python-package lint

help: ## show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/phase0
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/phase0

# No file prerequisite on the stamps: a fresh clone's mtimes must not trigger
# a reinstall.
$(CACHE_DIR)/venv-$(REQ_HASH)-py%/.phase0-installed:
	@test -n "$(BASE_PYTHON)" || { echo "phase0: no CPython 3.10–3.14 with a shared libpython on PATH or in pyenv;" \
	  "install one (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install 3.12) or pass BASE_PYTHON=/path/to/python3" >&2; exit 2; }
	@echo "phase0: preparing the Python environment in $(@D) from $(BASE_PYTHON) (first time only: torch is large)"
	$(BASE_PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet --upgrade pip
	$(@D)/bin/python -m pip install --quiet -r requirements.txt
	@touch $@

# A minor that is not on this machine is reported and left out; the bridge
# test then fails if fewer than three minors remain.
$(CACHE_DIR)/venv-min-$(MIN_HASH)-py%/.phase0-installed:
	@if found=$$(scripts/find-python $* $*); then \
	  set -e; py=$${found#* }; echo "phase0: NumPy-only test venv $(@D) from $$py"; \
	  $$py -m venv $(@D); $(@D)/bin/python -m pip install --quiet -r requirements-min.txt; touch $@; \
	else echo "phase0: no CPython $* with a shared libpython here: the bridge is not tested with $*"; fi

$(BLACK_VENV)/.phase0-installed:
	@test -n "$(BASE_PYTHON)" || { echo "phase0: no CPython 3.10–3.14 for black's venv; pass BASE_PYTHON=/path/to/python3" >&2; exit 2; }
	$(BASE_PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet -r requirements-black.txt
	@touch $@

black-venv: $(BLACK_VENV)/.phase0-installed ## create or reuse the small venv holding black (for the black-clean test)

$(XSD_VENV)/.phase0-installed:
	@test -n "$(BASE_PYTHON)" || { echo "phase0: no CPython 3.10–3.14 for the XSD validator's venv; pass BASE_PYTHON=/path/to/python3" >&2; exit 2; }
	$(BASE_PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet -r requirements-xsd.txt
	@touch $@

xsd-venv: $(XSD_VENV)/.phase0-installed ## create or reuse the small venv holding xmlschema (for the JUnit schema test)

venv: $(VENV)/.phase0-installed ## create or reuse the Python venv (outside the clone)

pyvenvs: $(foreach v,$(TEST_VENVS),$(v)/.phase0-installed) ## create or reuse the NumPy-only venvs of the other Python minors

print-python: ## print the venv's python (use with make -s)
	@echo $(VENV_PY)

# The Go tests read this when run without make (internal/testenv): the one
# place that knows where the venvs are is this file.
print-test-env: ## print the interpreters the Go tests use, one KEY=value a line (use with make -s)
	@printf '%s\n' $(GO_TEST_ENV)

test: ## run every test (make lint, Go incl. fuzz seeds, the bridge in every Python minor, black on generated Python, mypy --strict, pytest, the XRT build check, 3.14 in a chroot)
	@# First what the tests need, side by side: on a fresh machine these are
	@# mostly downloads (torch, the sid chroots, Go modules), so four at once.
	@$(MAKE) --no-print-directory -j4 --output-sync=target test-prereqs
	@# Then five independent groups, three at a time on this 2-core target:
	@# each group waits on its children part of the time (a worker starting,
	@# a run's sleep), which a third group fills. The longest first; each
	@# group's output is printed whole when it ends.
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-orchestrator test-python-package test-py test-go lint

# Everything make test installs or builds before it tests; each is a no-op
# once done.
test-prereqs: venv pyvenvs black-venv xsd-venv build $(STATICCHECK) chroots pytest-venvs

# The sid chroots of the XRT and 3.14 checks (made once, cached outside the clone).
chroots: ## make or reuse the sid chroots of check-xrt and check-py314
	CACHE_DIR=$(CACHE_DIR) ./npu/check-xrt.sh --skip-if-unavailable --prepare
	CACHE_DIR=$(CACHE_DIR) ./scripts/check-py314.sh --skip-if-unavailable --prepare

# Test binaries are linked without DWARF (-w): ~30 binaries, a third of
# their link time (10 CPU-s of every make test); a failing test's stack
# trace still names every function and line.
GO_TEST_FLAGS = -count=1 -ldflags=-w
GO_TEST_ENV = PHASE0_PYTHON=$(VENV_PY) PHASE0_TEST_PYTHONS=$(TEST_PYTHONS) PHASE0_BLACK=$(BLACK) PHASE0_XSD_PYTHON=$(XSD_PY)

test-orchestrator: venv build ## go test ./run/orchestrator: the end-to-end runs (its slow tests run in parallel on shared warm sessions)
	$(GO_TEST_ENV) $(GO) test $(GO_TEST_FLAGS) -parallel 3 -timeout 60m ./run/orchestrator

test-go: venv pyvenvs black-venv xsd-venv build ## the rest of the Go side of make test: the XRT and 3.14 chroot checks, go test of every other package (make lint runs vet)
	./npu/check-xrt.sh --skip-if-unavailable
	./scripts/check-py314.sh --skip-if-unavailable
	$(GO_TEST_ENV) $(GO) test $(GO_TEST_FLAGS) -timeout 60m $$($(GO) list ./... | grep -v '^phase0/run/orchestrator$$')

# mypy's cache lives outside the clone, beside the venv it reads torch's
# stubs from: a clean clone (CI) otherwise re-analyses torch and
# transformers, 117 s instead of 3 s. mypy checks each cached file against
# its source, so a changed file is analysed again.
MYPY_CACHE = $(CACHE_DIR)/mypy-$(notdir $(VENV))

test-py: venv ## the Python side of make test: mypy --strict and pytest of python/pyshim/, the generated code's pytests
	cd python/pyshim && MYPY_CACHE_DIR=$(MYPY_CACHE)/pyshim $(VENV_PY) -m mypy
	cd python/pyshim && $(VENV_PY) -m pytest -q
	$(VENV_PY) -m pytest -q output/scaffold/pytests

test-short: ## the Go tests that need no Python (vet + go test -short), for a quick loop
	$(GO) vet ./...
	$(GO) test -short -count=1 ./...

# staticcheck, pinned, installed once through the Go module proxy into the
# cache (outside the clone). Its default checks; a //lint:ignore names its reason.
# -tags pyext is checked with the extension's Python headers; -tags xrt is
# not: it needs XRT's headers (pkg-config xrt), which only check-xrt's chroot has.

$(STATICCHECK):
	GOFLAGS= GOBIN=$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK) ## staticcheck over ./... (and -tags pyext with Python headers); gofmt; go vet; go.mod tidy
	@test -z "$$(gofmt -l .)" || { echo "phase0: gofmt -l lists:" >&2; gofmt -l . >&2; exit 1; }
	@$(GO) mod tidy -diff || { echo "phase0: go.mod or go.sum is not tidy (the diff above): run go mod tidy" >&2; exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@if [ -n "$(PYEXT_HDR_PY)" ]; then \
	  set -x; CGO_CFLAGS="-I$$($(PYEXT_HDR_PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" $(STATICCHECK) -tags pyext ./...; \
	else echo "phase0: no CPython 3.10+ for the extension's headers: -tags pyext not linted"; fi

bench: venv build ## print the benchmark table
	PHASE0_PYTHON=$(VENV_PY) $(GO) run ./cmd/phase0bench

# Gate 2's perplexity rule, calibrated on 21 real models (the default, the
# trained tiny model of each family, random inits of each family at four
# sigmas): prints their table and compares it with the pinned figures in
# run/orchestrator/testdata/calibration.json, of which `make test` re-measures
# four. PIN=1 re-pins the figures (after changing the passage).
calibrate: venv ## gate 2's calibration sweep: 21 models' passage perplexity against the pinned figures (PIN=1 re-pins them)
	PHASE0_PYTHON=$(VENV_PY) PHASE0_CALIBRATE=$(if $(PIN),pin,1) $(GO) test -count=1 -timeout 60m -run '^TestGate2PerplexityCalibration$$' -v ./run/orchestrator

fuzz: ## run each fuzz target briefly (FUZZTIME=…)
	@set -e; $(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read pkg dir; do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | cut -c6-); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

# MODEL, LLMS_DIR and NAME reach phase0 as one argument each (spaces and
# quotes included); a leading ~/, which zsh leaves as is in VAR=~/x, is $(HOME).
home_expanded = $(if $(filter ~/%,$(firstword $(1))),$(HOME)/$(patsubst ~/%,%,$(1)),$(1))
shell_arg     = '$(subst ','\'',$(call home_expanded,$(1)))'

phase0: venv build ## run all of Phase 0 on MODEL (a folder, a hub id, or @FILE: each model of a list; default: the bundled SmolLM2-135M-Instruct)
	PHASE0_PYTHON=$(VENV_PY) ./$(BIN) run $(call shell_arg,$(MODEL)) $(if $(LLMS_DIR),--llms-dir $(call shell_arg,$(LLMS_DIR))) $(if $(NAME),--name $(call shell_arg,$(NAME)))

# `import phase0` (cmd/pyext/): the Go core as one abi3 CPython extension for every
# Python 3.10+, plus the phase0 binary its worker child runs, in one wheel.
# Rebuilt only when a source changed (the stamp), so `make test` stays cheap.
PYPKG_VERSION := 0.1.0.dev0
PYPKG_STAMP   := dist/.phase0-$(PYPKG_VERSION)-wheel
PYPKG_SRC     := $(shell find . \( -path ./dist -o -path ./workspace -o -path ./.git -o -path ./cmd/pyext/tests -o -name __pycache__ -o -name '.*cache' \) -prune -o \
                   -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.py' -o -name '*.pyi' -o -name '*.yaml' \
                   -o -name '*.txt' -o -name go.sum -o -name py.typed \) -print)
# Headers of the oldest supported minor: Py_LIMITED_API 3.10 then cannot
# reach anything newer. Nothing is linked: the host python provides the symbols.
# pyext/ builds only with -tags pyext (and the headers), so `go build ./...`
# and `go test ./...` need no Python.
PYEXT_HDR_PY   = $(or $(word 2,$(shell scripts/find-python 3.10 3.10)),$(BASE_PYTHON))
PYPKG_LDFLAGS  = $(LDFLAGS) -X main.version=$(PYPKG_VERSION)
# The minors the package is tested in (each in its own pytest venv).
PYPKG_MINORS  ?= 3.10 3.12

python-package: $(PYPKG_STAMP) ## build the abi3 wheel dist/phase0-*.whl (pip install it into any Python 3.10+ venv)

$(PYPKG_STAMP): $(PYPKG_SRC) Makefile
	@test -n "$(PYEXT_HDR_PY)" || { echo "phase0: no CPython 3.10+ for the extension's headers" >&2; exit 2; }
	@mkdir -p dist/.build
	export CGO_CFLAGS="-I$$($(PYEXT_HDR_PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"; \
	  $(GO) vet -tags pyext ./cmd/pyext && \
	  $(GO) build -tags pyext -buildmode=c-shared -ldflags "$(PYPKG_LDFLAGS) -s -w" -o dist/.build/_native.abi3.so ./cmd/pyext
	$(GO) build -ldflags "$(PYPKG_LDFLAGS) -s -w" -o dist/.build/phase0 ./cmd/phase0
	rm -f dist/phase0-$(PYPKG_VERSION)-*.whl
	$(PYEXT_HDR_PY) cmd/pyext/build_wheel.py --native dist/.build/_native.abi3.so --cli dist/.build/phase0 --version $(PYPKG_VERSION) --out dist
	@touch $@

# pytest runs inside venvs of two Python minors holding nothing but pytest
# and the wheel; torch work goes to make's venv (PHASE0_PYTHON) in the worker.
# The first minor runs every test; the others run a whole run on one family
# only and skip the API-vs-CLI run comparison, the worker crash and the
# worker's death on Ctrl-C (marker first_minor; each starts torch in a child,
# ~8 s): the family logic, the report and the worker's lifetime are Go's, the
# same in every minor, while the extension's boundary (arguments, threads,
# Ctrl-C during a call in Go, fork) runs in full.
# One pytest venv per minor of PYPKG_MINORS; a minor not on this machine is
# left out here and reported by test-python-package.
$(CACHE_DIR)/venv-pytest-py%/.phase0-installed:
	@if found=$$(scripts/find-python $* $*); then \
	  set -e; $${found#* } -m venv $(@D); $(@D)/bin/python -m pip install --quiet pytest; touch $@; fi

pytest-venvs: $(foreach m,$(PYPKG_MINORS),$(CACHE_DIR)/venv-pytest-py$(m)/.phase0-installed) ## create or reuse the pytest venvs test-python-package installs the wheel into

test-python-package: python-package venv pytest-venvs ## test the wheel in fresh-installed venvs of several Python minors
	@set -e; tested=0; whl=$$(ls dist/phase0-$(PYPKG_VERSION)-*.whl); families=; select=(); \
	for m in $(PYPKG_MINORS); do \
	  v=$(CACHE_DIR)/venv-pytest-py$$m; \
	  if [ ! -f $$v/.phase0-installed ]; then echo "phase0: no CPython $$m here: the package is not tested with it"; continue; fi; \
	  $$v/bin/python -m pip install --quiet --no-deps --force-reinstall $$whl; \
	  echo "phase0: pytest cmd/pyext/tests in $$v"; \
	  (cd cmd/pyext/tests && PHASE0_PYTHON=$(VENV_PY) PHASE0_WHEEL=$(CURDIR)/$$whl PHASE0_REPO=$(CURDIR) \
	    env $${families:+PHASE0_PYEXT_RUN_FAMILIES=$$families} $$v/bin/python -m pytest -q -p no:cacheprovider "$${select[@]}" .); \
	  tested=$$((tested + 1)); families=qwen3; select=(-m "not first_minor"); \
	done; \
	[ $$tested -ge 2 ] || { echo "phase0: the package was tested in $$tested Python minor(s), need 2" >&2; exit 1; }
	cd cmd/pyext/python && MYPY_CACHE_DIR=$(MYPY_CACHE)/pyext $(VENV_PY) -m mypy --strict phase0
	cd cmd/pyext/tests && MYPY_CACHE_DIR=$(MYPY_CACHE)/pyext-tests MYPYPATH=../python $(VENV_PY) -m mypy --strict .

check-xrt: ## build, vet and test npu/ with -tags xrt against XRT 2.25 in a cached sid chroot
	CACHE_DIR=$(CACHE_DIR) ./npu/check-xrt.sh

check-py314: ## run the bridge and worker tests against CPython 3.14 (Debian sid's, NumPy only) in a cached sid chroot
	CACHE_DIR=$(CACHE_DIR) ./scripts/check-py314.sh

clean: ## remove build outputs (the venv and model cache stay)
	rm -rf bin
