# Two commands on a fresh clone: `make plan` and `make test`. Both create and reuse .venv.
# Stdout carries only the command's output (`make plan JSON=1 > plan.json` must parse): the install recipe is not
# echoed and sends pip's output to stderr. (`make -C DIR` and sub-makes print "Entering directory" to stdout before
# reading this file: add --no-print-directory there.)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)
STACK ?= dev

.PHONY: plan test bench clean

$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpushare needs Python 3.11 or newer; run make PYTHON=python3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@echo "installing pinned dependencies into $(VENV)" >&2
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt >&2
	@rm -f $(VENV)/.installed-* && touch $@

# JSON=1 (or any value but 0, no, false) prints JSON; JSON=0 and no JSON print the tables.
# DEPLOYED=pools.json runs the guard against saved `az aks nodepool list -o json` output.
plan: $(STAMP)
	@$(BIN)/python -m gpushare plan $(STACK) $(if $(filter-out 0 no false,$(JSON)),--json) $(if $(DEPLOYED),--deployed $(DEPLOYED))

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/plan_benchmark.py

clean:
	rm -rf $(VENV) .pytest_cache
