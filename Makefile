# MemoryHub: `make run` serves everything, `make test` runs the test suite.
# Both create .venv and install on first use; later runs skip the install.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint bench clean-data

$(STAMP): pyproject.toml constraints.txt sdk/python/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "MemoryHub needs Python 3.11 (set PYTHON=/path/to/python3.11)")'
	@echo "Installing MemoryHub into $(VENV) (first time: about a minute)…"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e ./sdk/python
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@$(BIN)/python manage.py run

test: lint
	@$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff, and the import contracts: data flows accounts <- memoryhub <- retrieval <- scheduling, no cycles.
lint: $(STAMP)
	@$(BIN)/ruff check .
	@$(BIN)/lint-imports --no-logo --no-cache

bench: $(STAMP)
	@$(BIN)/python bench/ingest.py

# Stops nothing: make sure `make run` is not running first.
clean-data:
	rm -rf .memoryhub
