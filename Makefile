# phase0 — Phase 0 of bringing a HuggingFace decoder-only LLM up on AMD NPU2.
# `make phase0 [MODEL=…]` does the whole job; `make test` runs every test.

SHELL        := /bin/bash
GO           ?= go
PYTHON3      ?= python3
BIN          := bin/phase0
CACHE_DIR    ?= $(HOME)/.cache/phase0
REQ_HASH     := $(shell sha256sum requirements.txt | cut -c1-12)
VENV         ?= $(CACHE_DIR)/venv-$(REQ_HASH)
VENV_PY      := $(VENV)/bin/python
MODEL        ?= default
NAME         ?=
LLMS_DIR     ?= $(CURDIR)/workspace
FUZZTIME     ?= 15s

# libpython is linked the way python3-config says (it carries the rpath);
# pkg-config would pick Debian's 3.11.2 here and load the wrong library.
export CGO_CFLAGS  := $(shell $(PYTHON3)-config --includes)
export CGO_LDFLAGS := $(shell $(PYTHON3)-config --embed --ldflags)

.PHONY: help build test test-go test-py bench fuzz venv print-python phase0 clean check-xrt

help: ## show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/phase0
	$(GO) build -o $(BIN) ./cmd/phase0

VENV_STAMP   := $(VENV)/.phase0-installed

# The venv is keyed by the hash of requirements.txt, so a changed requirement
# gets a fresh venv and an unchanged one is reused by every clone and CI run
# (no file prerequisite: a fresh clone's mtimes must not trigger a reinstall).
$(VENV_STAMP):
	@echo "phase0: preparing the Python environment in $(VENV) (first time only: torch is large)"
	$(PYTHON3) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --upgrade pip
	$(VENV_PY) -m pip install --quiet -r requirements.txt
	@touch $@

venv: $(VENV_STAMP) ## create or reuse the Python venv (outside the clone)

print-python: ## print the venv's python (use with make -s)
	@echo $(VENV_PY)

test: venv build ## run every test (Go incl. fuzz seeds, mypy --strict, pytest, the XRT build check)
	$(GO) vet ./...
	./npu/check-xrt.sh --skip-if-unavailable
	PHASE0_PYTHON=$(VENV_PY) $(GO) test -count=1 -timeout 60m ./...
	cd pyshim && $(VENV_PY) -m mypy
	cd pyshim && $(VENV_PY) -m pytest -q
	$(VENV_PY) -m pytest -q scaffold/pytests

bench: venv build ## print the benchmark table
	PHASE0_PYTHON=$(VENV_PY) $(GO) run ./cmd/phase0bench

fuzz: ## run each fuzz target briefly (FUZZTIME=…)
	@set -e; $(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read pkg dir; do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | cut -c6-); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

phase0: venv build ## run all of Phase 0 on MODEL (default: the bundled SmolLM2-135M-Instruct)
	PHASE0_PYTHON=$(VENV_PY) ./$(BIN) run $(MODEL) --llms-dir $(LLMS_DIR) $(if $(NAME),--name $(NAME))

check-xrt: ## build, vet and test npu/ with -tags xrt against XRT 2.25 in a cached sid chroot
	CACHE_DIR=$(CACHE_DIR) ./npu/check-xrt.sh

clean: ## remove build outputs (the venv and model cache stay)
	rm -rf bin
