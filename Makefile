# tpu-serving. `make test` and `make render` need only Python; up/preview/destroy need the Pulumi CLI,
# gcloud and gke-gcloud-auth-plugin (see README "Deploying for real").
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= dev

# The no-account local backend (`pulumi login --local`) and passphrase secrets, unless you choose otherwise.
export PULUMI_BACKEND_URL ?= file://~
export PULUMI_SKIP_UPDATE_CHECK ?= true

.PHONY: venv test render preview up destroy stack clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: venv
	$(PY) -m pytest

render: venv
	$(PY) -m stacks.render $(STACK)

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

clean:
	rm -rf build .pytest_cache
