# Two entry points for a fresh machine (Python 3.11, git, make): `make demo` and `make test`.
# Each creates or reuses .venv and (re)installs the project when pyproject.toml changes.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest venv clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/pressroom demo

lint: $(STAMP)
	$(BIN)/ruff check .

# bench/ scripts import each other as top-level modules and as `bench.…`: checked on their own,
# with package bases explicit, so each file is one module.
typecheck: $(STAMP)
	$(BIN)/mypy --strict context artifacts contracts activities workflows client presentation cli evals webconsole pressroom.py worker.py settings.py tests
	$(BIN)/mypy --strict --explicit-package-bases bench/*.py

# The suite runs as parallel pytest processes (tests/run_suite.sh says which and why).
pytest: $(STAMP)
	PYTHON=$(BIN)/python bash tests/run_suite.sh

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
