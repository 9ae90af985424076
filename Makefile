# bnviz: developer tasks. `make test` is what CI runs (via .ci/run).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test bench lint clean

# Stamp: (re)install the pinned dependencies when a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-test.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements-test.txt
	touch $@

run: $(VENV)/.installed
	$(PY) app.py

lint: $(VENV)/.installed
	$(PY) -m ruff check .

test: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m pytest

bench: $(VENV)/.installed
	$(PY) bench/partition.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
	find . -path ./.git -prune -o -type d -name __pycache__ -exec rm -rf {} +
