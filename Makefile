# Ragloom: `make run` starts the app, `make test` runs every test. Both set everything up
# first: a .venv with both libraries installed editable, pinned by requirements/constraints.txt.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ragloom-installed
LLAMA_STAMP := $(VENV)/.llama-cpp-built
# llama.cpp's own default build (-march=native) enables AMX on CPUs that have it, and that
# build crashed on every first token on such a CPU (docs/models.md, "Building llama.cpp").
# Build it for AVX2, plus AVX-512 where this CPU has it; override to choose otherwise.
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	$(if $(filter avx512f,$(CPU_FLAGS)),-DGGML_AVX512=ON) \
	$(if $(filter avx512vbmi,$(CPU_FLAGS)),-DGGML_AVX512_VBMI=ON) \
	$(if $(filter avx512_vnni,$(CPU_FLAGS)),-DGGML_AVX512_VNNI=ON) \
	$(if $(filter avx512_bf16,$(CPU_FLAGS)),-DGGML_AVX512_BF16=ON)
INSTALL_INPUTS := requirements/constraints.txt requirements/dev.txt \
	libs/ragloom/pyproject.toml libs/ragloom_app/pyproject.toml

.PHONY: setup run test lint bench browser servers clean

setup: $(STAMP)

# Compiled once per venv (about 6 minutes on 2 cores), never from pip's cache of wheels:
# one built by a plain `pip install` elsewhere on this machine would be the native build.
$(LLAMA_STAMP):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip==25.3"
	CMAKE_ARGS="$(strip $(LLAMA_CMAKE_ARGS))" $(BIN)/python -m pip install --quiet \
		--no-cache-dir --no-deps -c requirements/constraints.txt llama-cpp-python
	touch $(LLAMA_STAMP)

$(STAMP): $(INSTALL_INPUTS) $(LLAMA_STAMP)
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
	@scripts/ensure-haproxy

test: setup browser servers
	$(BIN)/python -m pytest

# mypy reads its settings (strict for libs/ragloom) from pyproject.toml.
lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

bench: setup
	for script in benchmarks/[!_]*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
