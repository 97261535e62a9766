# Two commands: `make demo` runs the offline demo, `make test` runs lint, types, docs and tests.
# Both create .venv and install on first use (and again when pyproject.toml changes): `make demo`
# the package with its runtime dependencies only, `make test` the dev extra too.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
LOG := $(VENV)/install.log
LINTED := $(wildcard langgraph_topics tests benchmarks examples)

.PHONY: demo test lint typecheck docs pytest wheel-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip >$(LOG) 2>&1 || { cat $(LOG); exit 1; }

# pip's output (build-backend notes included) goes to $(LOG), shown only when the install fails.
$(RUNTIME): pyproject.toml | $(BIN)/python
	@echo "installing langgraph-topics and its runtime dependencies into $(VENV) (log: $(LOG))"
	@$(BIN)/python -m pip install -e . >$(LOG) 2>&1 || { cat $(LOG); exit 1; }
	@touch $@

$(DEV): pyproject.toml | $(BIN)/python
	@echo "installing langgraph-topics with the dev extra into $(VENV) (log: $(LOG))"
	@$(BIN)/python -m pip install -e ".[dev]" >$(LOG) 2>&1 || { cat $(LOG); exit 1; }
	@touch $@ $(RUNTIME)

demo: $(RUNTIME)
	$(BIN)/langgraph-topics demo

lint: $(DEV)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: $(DEV)
	$(BIN)/mypy

docs: $(DEV)
	$(BIN)/mkdocs build --strict --quiet --site-dir build/site

pytest: $(DEV)
	$(BIN)/pytest

test: lint typecheck docs pytest

# The wheel as users get it: built without warnings, installed in a fresh venv, the demo run.
wheel-check: $(DEV)
	PYTHON=$(PYTHON) BIN=$(BIN) .ci/wheel-check

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build/site
