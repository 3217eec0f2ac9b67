# Two commands on a fresh clone: `make plan` and `make test`. Both create and reuse .venv.
# `make plan` installs only what `plan` needs (requirements.txt, the Pulumi program's pinned runtime set); `make test`
# adds the test tools (requirements-dev.txt). Each set has its stamp, named after a checksum of its files, so an edit
# to a requirements file reinstalls on the next run.
# Stdout carries only the command's output (`make plan JSON=1 > plan.json` must parse): the install recipe is not
# echoed and sends pip's output to stderr. (`make -C DIR` and sub-makes print "Entering directory" to stdout before
# reading this file: add --no-print-directory there.)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
checksum = $(shell cat $(1) | cksum | cut -d' ' -f1)
RUNTIME_STAMP := $(VENV)/.installed-runtime-$(call checksum,requirements.txt)
TEST_STAMP := $(VENV)/.installed-test-$(call checksum,requirements.txt requirements-dev.txt)
STACK ?= dev

.PHONY: plan test bench clean

# $(1): the requirements file, $(2): the stamp's kind (stale stamps of that kind are removed).
define install
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpushare needs Python 3.11 or newer; run make PYTHON=python3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@echo "installing pinned dependencies ($(1)) into $(VENV)" >&2
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -r $(1) >&2
	@rm -f $(VENV)/.installed-$(2)-* && touch $@
endef

$(RUNTIME_STAMP): requirements.txt
	$(call install,requirements.txt,runtime)

$(TEST_STAMP): requirements.txt requirements-dev.txt | $(RUNTIME_STAMP)
	$(call install,requirements-dev.txt,test)

# JSON=1 (or any value but 0, no, false) prints JSON; JSON=0 and no JSON print the tables.
# DEPLOYED=pools.json runs the guard against saved `az aks nodepool list -o json` output.
plan: $(RUNTIME_STAMP)
	@$(BIN)/python -m gpushare plan $(STACK) $(if $(filter-out 0 no false,$(JSON)),--json) $(if $(DEPLOYED),--deployed $(DEPLOYED))

# The admission tests judge the tenant policies with the API server's own plugin (tools/vapcheck), and the
# control-plane tests run a real Kubernetes 1.34 (tools/controlplane): both built from the Go modules once and cached
# outside the clone (minutes the first time, progress on stderr). Without Go they skip with the reason; a build that
# fails stops here. tools/autoscalercheck (the cluster autoscaler's GPU readiness rule) also needs the
# cluster-autoscaler module, which the module proxy does not serve: without a clone of kubernetes/autoscaler (its
# build script says where) it exits 4 and its tests skip naming why (they fail under CI=true).
test: $(TEST_STAMP)
	@if tools/vapcheck/build --check >/dev/null 2>&1; then tools/vapcheck/build >/dev/null; fi
	@if tools/controlplane/build --check >/dev/null 2>&1; then tools/controlplane/build >/dev/null; fi
	@if tools/autoscalercheck/build --check >/dev/null 2>&1; then tools/autoscalercheck/build >/dev/null || [ $$? -eq 4 ]; fi
	$(BIN)/python -m pytest

bench: $(RUNTIME_STAMP)
	$(BIN)/python benchmarks/plan_benchmark.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
