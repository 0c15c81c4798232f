# Ragloom: `make run` starts the app, `make test` runs every test. Both set everything up
# first: a .venv with both libraries installed editable, pinned by requirements/constraints.txt.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ragloom-installed
INSTALL_INPUTS := requirements/constraints.txt requirements/dev.txt \
	libs/ragloom/pyproject.toml libs/ragloom_app/pyproject.toml

.PHONY: setup run test lint bench browser servers clean

setup: $(STAMP)

$(STAMP): $(INSTALL_INPUTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip==25.3"
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt \
		-r requirements/dev.txt -e "libs/ragloom[server]" -e libs/ragloom_app
	$(BIN)/ragloom models
	touch $(STAMP)

run: setup
	$(BIN)/ragloom serve --host 127.0.0.1 --port 7860

browser:
	@scripts/ensure-chromium

servers:
	@scripts/ensure-postgres

test: setup browser servers
	$(BIN)/python -m pytest

# mypy reads its settings (strict for libs/ragloom) from pyproject.toml.
lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

bench: setup
	for script in benchmarks/[!_]*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
