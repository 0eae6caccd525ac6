# FollowGraph developer commands. Every target sets up what it needs on a fresh machine.
SHELL  := bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PACKAGES := schema resolvers dataloaders store server
# The packages under their installed names, for mypy (which cannot follow the editable install).
TYPECHECK := $(VENV)/typecheck/followgraph

.PHONY: install run test lint typecheck pytest bench node-peer fmt schema clean

## install: create the virtualenv and install the project with its dev tools
install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	mkdir -p $(TYPECHECK)
	for p in $(PACKAGES); do ln -sfn ../../../$$p $(TYPECHECK)/$$p; done
	touch $(STAMP)

## run: serve the API on http://127.0.0.1:8000/graphql with an embedded Redis and demo data
run: $(STAMP)
	$(BIN)/followgraph serve --demo

## test: lint, type-check and run the whole test suite (real Redis included)
test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy | sed 's|^$(TYPECHECK)/||'

pytest: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

## bench: the benchmark harness (its own Redis and server; prints tables, writes bench/results/)
bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

## node-peer: install the benchmark's Node peer (bench/peers/node) with npm ci; make bench does it too
node-peer:
	@if command -v node >/dev/null && command -v npm >/dev/null; then \
		cd bench/peers/node && npm ci --no-audit --no-fund; \
	else \
		echo "node and npm are not both on PATH: make bench reports the Node peer as not built"; \
	fi

## fmt: apply ruff's formatting and safe fixes
fmt: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## schema: write the served schema to schema/schema.graphql (a test fails when it is stale)
schema: $(STAMP)
	$(BIN)/followgraph export-schema -o schema/schema.graphql

## clean: remove the virtualenv and caches
clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build *.egg-info bench/peers/node/node_modules
