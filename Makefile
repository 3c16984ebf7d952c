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
	@echo "Installing MemoryHub into $(VENV): first time only, about a minute with uv (several with pip, its fallback)."
	@$(BIN)/python memoryhub/plumbing/install_steps.py packages $(BIN)/python -- -c constraints.txt -e '.[dev]' -e ./sdk/python
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@$(BIN)/python manage.py run

# Two pytest-xdist workers, each with its own test database (test_memoryhub_gw0, _gw1): about 7 min
# against 12.5 in one process on a slow 2-core VM. `--dist load` hands each worker its tests in
# the suite's order, so that, as in one process, tests that flush the tables (transactional ones,
# which pytest-django puts last) never run before tests that read the rows the migrations seeded.
# TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2

test: lint
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist load $(PYTEST_ARGS)

# ruff, and the import contracts (pyproject.toml): data flows accounts <- memoryhub <- retrieval <-
# scheduling, the Python client apart, no import cycle in any package at any depth.
lint: $(STAMP)
	@$(BIN)/ruff format --check .
	@$(BIN)/ruff check .
	@PYTHONPATH=sdk/python/src $(BIN)/lint-imports --no-logo --no-cache

bench: $(STAMP)
	@$(BIN)/python bench/ingest.py

# Stops nothing: make sure `make run` is not running first.
clean-data:
	rm -rf .memoryhub
