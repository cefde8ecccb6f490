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

typecheck: $(STAMP)
	$(BIN)/mypy --strict context artifacts contracts activities workflows evals webconsole pressroom.py worker.py settings.py

# The suite runs as two pytest processes at once — most tests wait on Temporal, processes
# and timers, not on the CPU, and one process in a row took CI past 20 minutes. The side
# shard holds the folders that start their own servers and processes and touch no shared
# PostgreSQL database (the fault matrix, the scale test, the review console and its
# browser); everything else runs beside it. The side shard's output is printed after it
# ends (also in reports/pytest-side.log); either shard failing fails the target.
SIDE_SHARD := tests/faults tests/scale tests/webconsole

pytest: $(STAMP)
	@mkdir -p reports
	@$(BIN)/python -m pytest $(SIDE_SHARD) > reports/pytest-side.log 2>&1 & side=$$!; \
	$(BIN)/python -m pytest $(addprefix --ignore=,$(SIDE_SHARD)); main=$$?; \
	wait $$side; side_status=$$?; \
	echo "==== side shard: $(SIDE_SHARD) ===="; cat reports/pytest-side.log; \
	echo "==== main shard exit $$main, side shard exit $$side_status ===="; \
	test $$main -eq 0 && test $$side_status -eq 0

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
