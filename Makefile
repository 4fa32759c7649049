# Developer commands. "make demo" and "make test" are all a fresh machine needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install db demo test lint bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) || { scripts/install-venv-support && $(PYTHON) -m venv --clear $(VENV); }
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,docs]'
	touch $@

db: install  ## start the development database (PostgreSQL 17 + pgvector + AGE)
	scripts/devdb up

demo: install  ## bring the database up, migrate it and run the demo
	$(BIN)/hello-pgmem demo

test: install  ## the test suite, against the real database (brought up by the tests)
	$(BIN)/pytest

lint: install  ## ruff and mypy (strict)
	$(BIN)/ruff check hello_pgmem tests bench
	$(BIN)/mypy

bench: install  ## the benchmark suite (long; see bench/README.md)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/suite.py
