# Two commands: `make demo` runs the offline demo, `make test` runs lint, types and tests.
# Both create .venv and install on first use (and again when pyproject.toml changes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINTED := $(wildcard langgraph_topics tests benchmarks examples)

.PHONY: demo test lint typecheck pytest clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/langgraph-topics demo

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
