# Two commands on a fresh clone: `make plan` and `make test`. Both create and reuse .venv.
# `make plan` installs only what `plan` needs (requirements.txt: the Pulumi program's pinned runtime set, and the
# clone itself editable, which maps gpushare.components to components/); `make test` adds the test tools
# (requirements-dev.txt). Each set has its stamp, named after a checksum of its files (pyproject.toml's too), so an
# edit to a requirements file or to the package list reinstalls on the next run.
# Stdout carries only the command's output (`make plan JSON=1 > plan.json` must parse): the install recipe is not
# echoed and sends pip's output to stderr. (`make -C DIR` and sub-makes print "Entering directory" to stdout before
# reading this file: add --no-print-directory there.)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
checksum = $(shell cat $(1) | cksum | cut -d' ' -f1)
RUNTIME_STAMP := $(VENV)/.installed-runtime-$(call checksum,requirements.txt pyproject.toml)
TEST_STAMP := $(VENV)/.installed-test-$(call checksum,requirements.txt requirements-dev.txt pyproject.toml)
STACK ?= dev

.PHONY: plan test bench bench-tenants bench-admission clean

# $(1): the requirements file, $(2): the stamp's kind (stale stamps of that kind are removed).
define install
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpushare needs Python 3.11 or newer; run make PYTHON=python3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@echo "installing pinned dependencies ($(1)) into $(VENV)" >&2
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -r $(1) >&2
	@rm -f $(VENV)/.installed-$(2)-* && touch $@
endef

$(RUNTIME_STAMP): requirements.txt pyproject.toml
	$(call install,requirements.txt,runtime)

$(TEST_STAMP): requirements.txt requirements-dev.txt pyproject.toml | $(RUNTIME_STAMP)
	$(call install,requirements-dev.txt,test)

# JSON=1 (or any value but 0, no, false) prints JSON; JSON=0 and no JSON print the tables.
# DEPLOYED=pools.json runs the guard against saved `az aks nodepool list -o json` output.
plan: $(RUNTIME_STAMP)
	@$(BIN)/python -m gpushare plan $(STACK) $(if $(filter-out 0 no false,$(JSON)),--json) $(if $(DEPLOYED),--deployed $(DEPLOYED))

# The admission tests judge the tenant policies with the API server's own plugin (tools/vapcheck, at the newest
# Kubernetes minor and at the oldest a stack may pin), the control-plane tests run a real Kubernetes 1.36
# (tools/controlplane), the node-selection model is checked against the scheduler's helpers (tools/nodeselect),
# the Kueue objects against Kueue's webhooks (tools/kueuecheck), what
# they let a tenant borrow against Kueue's scheduler cache (tools/kueueborrow) and against Kueue's own manager on that
# control plane (tools/kueuecontroller), the Kubernetes half of the program through the real Pulumi CLI and
# Kubernetes provider (tools/pulumi, tests/engine), and the autoscaler readiness model against the cluster autoscaler's own code
# (tools/autoscalercheck), the DRA pools' opaque configs and DeviceClass selectors against the NVIDIA DRA driver's own
# checks and the DRA CEL compiler (tools/dracheck), and the schema's patterns with Go's regexp (tools/re2check): each built from the Go modules
# once and cached outside the clone, one after another (on 2 cores builds side by side only take turns), all sharing
# Go's default build and module caches. tools/go_builds.py says first, on stderr, which are not cached yet and what
# each takes (docs/testing.md's table). Without Go they skip with the reason; a build that fails stops here, except
# autoscalercheck's exit 5: the module proxy does not serve the cluster-autoscaler module (these machines' proxy
# answers 403), and its tests skip naming why.
GO_TOOLS := vapcheck nodeselect controlplane kueuecheck kueueborrow kueuecontroller pulumi autoscalercheck dracheck re2check
test: $(TEST_STAMP)
	@$(BIN)/python tools/go_builds.py $(GO_TOOLS)
	@for tool in $(GO_TOOLS); do \
	  if tools/$$tool/build --check >/dev/null 2>&1; then \
	    tools/$$tool/build >/dev/null || { status=$$?; [ $$tool = autoscalercheck ] && [ $$status -eq 5 ] || exit $$status; }; \
	  fi; \
	done
	$(BIN)/python -m pytest

bench: $(RUNTIME_STAMP)
	$(BIN)/python benchmarks/plan_benchmark.py

# A plan's time against its tenants (0 to 1,000, the most a stack holds): linear, docs/benchmarks.md#tenants.
bench-tenants: $(RUNTIME_STAMP)
	$(BIN)/python -m benchmarks.tenant_benchmark

# The tenant policies' admission overhead on the real control plane (tools/controlplane, built on first use; needs Go
# and the test tools: the control plane's harness is in tests/).
bench-admission: $(TEST_STAMP)
	tools/controlplane/build >/dev/null
	$(BIN)/python benchmarks/admission_benchmark.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
