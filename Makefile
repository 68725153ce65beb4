# Development entry points. `make help` lists them.

.DEFAULT_GOAL := help
SHELL := /bin/bash

# python3.11 if it is installed, else python3 (checked to be 3.11 before use).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)
VENV := .venv
BIN := $(VENV)/bin
# The stamp is newer than the inputs once they are installed, so editing either reinstalls.
INSTALLED := $(VENV)/.installed
DEVSERVICES := $(BIN)/python scripts/devservices.py
PYTEST_ARGS ?=

.PHONY: help install run test pytest lint typecheck fmt bench clean

help: ## List the targets
	@echo "Usage: make <target> [PYTEST_ARGS='...']"
	@echo
	@grep -E '^[a-zA-Z_.-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-10s %s\n", $$1, $$2}'

$(INSTALLED): requirements.lock pyproject.toml clients/python/pyproject.toml
	@test -n "$(PYTHON)" || { echo "python3.11 not found" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
		|| { echo "$(PYTHON) is not Python 3.11; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -r requirements.lock
	$(BIN)/pip install --no-deps -e .
	$(BIN)/pip install --no-deps -e ./clients/python  # the Python client and `storage` CLI
	touch $@

install: $(INSTALLED) ## Create .venv and install the locked dependencies

run: $(INSTALLED) ## Run the API, Celery worker and beat with their services (Ctrl-C stops all)
	exec $(DEVSERVICES) run

test: lint typecheck ## Lint, type-check, then run the test suite against real services
	$(DEVSERVICES) exec -- $(BIN)/python -m pytest $(PYTEST_ARGS)

pytest: $(INSTALLED) ## Run only the test suite (quick loop; PYTEST_ARGS='-k name -x')
	$(DEVSERVICES) exec -- $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(INSTALLED) ## Check formatting and lint rules
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: $(INSTALLED) ## Run mypy (the service; the client strictly, as Python 3.9)
	$(BIN)/mypy .
	cd clients/python && ../../$(BIN)/mypy storage_client

fmt: $(INSTALLED) ## Format the code and apply safe lint fixes
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Skips a missing bench/ and helper modules (bench/_*.py), which are not benchmarks.
bench: $(INSTALLED) ## Run every bench/*.py against real services
	$(BIN)/pip install -q -r bench/requirements.txt  # peers compared against; not locked
	$(DEVSERVICES) exec -- sh -c 'for f in bench/*.py; do \
		case "$${f##*/}" in _*) continue ;; esac; [ -e "$$f" ] || continue; \
		$(BIN)/python "$$f" || exit 1; done'

clean: ## Remove var/ (local service data, services.env); keeps .venv
	rm -rf var
