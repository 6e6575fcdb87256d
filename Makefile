# warprec: `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Fit -> evaluate -> recommend on the embedded synthetic data, against a popularity baseline.
demo: $(STAMP)
	$(VENV)/bin/warprec demo

# Lint (ruff), type-check the package (mypy; both configured in pyproject.toml), then the
# tests in two processes (pytest-xdist: most of the tests' time is the single-threaded
# compilation of kernels from a cold cache).
test: $(STAMP)
	$(VENV)/bin/ruff check warprec tests benchmarks data
	$(PY) -m mypy
	$(PY) -m pytest -q -n 2

# Side-by-side benchmark against LightFM and implicit (installs the bench extras), then the
# comparison of warprec's loss options on the ML-100K split. Results: benchmarks/results/.
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run.py
	$(PY) benchmarks/compare_losses.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
