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

# Compiled once per machine, Python and set of flags (6 to 11 minutes on 2 cores), into a
# cache of our own keyed by all three, never pip's: a wheel built by a plain `pip install`
# elsewhere on this machine would be the native build. A new clone or `make clean` then
# installs the wheel in seconds. Built into a temporary folder of its own, moved in whole
# when done: of two builds at once, the first to finish is kept (a crashed build's folder
# is removed 3 hours later).
# Expanded only when this recipe runs (`=`), not on every `make`: it starts a Python.
LLAMA_VERSION = $(shell sed -n 's/^llama_cpp_python==//p' requirements/constraints.txt)
LLAMA_WHEELS = $(HOME)/.cache/ragloom/llama-cpp-wheels/$(LLAMA_VERSION)-$(shell \
	$(PYTHON) -c 'import sys; print(sys.implementation.cache_tag)')-$(shell \
	printf '%s' "$(strip $(LLAMA_CMAKE_ARGS))" | sha256sum | cut -c1-12)

$(LLAMA_STAMP):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip==25.3"
	wheels="$(LLAMA_WHEELS)"; \
	if [ ! -d "$$wheels" ]; then \
		mkdir -p "$${wheels%/*}" || exit 1; \
		find "$${wheels%/*}" -maxdepth 1 -name '*.part.*' -mmin +180 -exec rm -rf {} +; \
		part=$$(mktemp -d "$$wheels.part.XXXXXX") || exit 1; \
		CMAKE_ARGS="$(strip $(LLAMA_CMAKE_ARGS))" $(BIN)/python -m pip wheel --quiet \
			--no-cache-dir --no-deps -w "$$part" "llama-cpp-python==$(LLAMA_VERSION)" \
			|| { rm -rf "$$part"; exit 1; }; \
		mv -T "$$part" "$$wheels" 2>/dev/null || rm -rf "$$part"; \
	fi; \
	$(BIN)/python -m pip install --quiet --no-deps --no-index "$$wheels"/*.whl
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

# The tests without the real model in two processes (pytest-xdist, each test file kept in
# one), then the modules with it alone: llama.cpp beside any busy process ran 4x slower.
TEST_PROCESSES ?= 2

# Both parts run whatever the first's outcome; either one failing fails the target.
test: setup browser servers
	$(BIN)/python -m pytest -m "not llm" -n $(TEST_PROCESSES) --dist loadfile --durations=15; \
	status=$$?; $(BIN)/python -m pytest -m llm --durations=15 && exit $$status

# mypy reads its settings (strict for libs/ragloom) from pyproject.toml.
lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

bench: setup
	for script in benchmarks/[!_]*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
