# bnviz: developer tasks. `make test` is what CI runs (via .ci/run).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run serve test bench lint lock clean check-python replication replication-docs bytecode

# One line, not a pip traceback, when the interpreter is one bnviz does not support.
check-python:
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 11) <= v < (3, 14) else "bnviz needs Python 3.11 to 3.13 (found %d.%d): set PYTHON=python3.11, e.g. make run PYTHON=python3.11" % v)'

# Stamps: (re)install a pinned lock when it or pyproject changes, then the bnviz package itself
# (editable, no dependencies: the lock has them all). `run` needs the runtime lock; `test` the
# test lock, a superset (its urllib3 is older, for selenium), which also satisfies `run`.
$(VENV)/.installed: requirements.txt pyproject.toml | check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.installed-test: requirements-test.txt requirements.txt pyproject.toml | check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements-test.txt
	$(PY) -m pip install --no-deps --no-build-isolation -e .
	touch $@ $(VENV)/.installed

# Compiled bytecode for the project's own modules, as `pip install` writes it for every
# installed package. Where PYTHONDONTWRITEBYTECODE is set (CI images, these machines) nothing
# else writes it, and every process (a CLI command, a gunicorn worker, each test's subprocess)
# compiled bnviz's sources again: 25 ms of a 0.21 s `bnviz partition` (bench/cli.py). Only
# stale files are recompiled; a stale .pyc is never used (Python checks the source's mtime).
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q -j 0 bnviz layouts callbacks app.py > /dev/null

# The embedded single-machine default: gunicorn (threads and processes, gunicorn.conf.py), not
# Flask's development server, on BNVIZ_HOST:BNVIZ_PORT (127.0.0.1:8050), no server to install.
run: $(VENV)/.installed bytecode
	BNVIZ_BIND=$${BNVIZ_HOST:-127.0.0.1}:$${BNVIZ_PORT:-8050} $(VENV)/bin/gunicorn \
	    -c gunicorn.conf.py app:server

# The production stack on this machine, what the container runs (`bnviz serve`): nginx on
# BNVIZ_HOST:BNVIZ_PORT (127.0.0.1:8050) buffering in front of gunicorn on a unix socket, and
# the job worker; SIGTERM or Ctrl-C stops all three. Needs nginx (Debian: apt-get install nginx).
serve: $(VENV)/.installed bytecode
	$(PY) -m bnviz serve

lint: $(VENV)/.installed-test
	$(PY) -m ruff check .

test: $(VENV)/.installed-test bytecode
	$(PY) -m ruff check .
	$(PY) -m pytest

# The benches compare with Regioncam, which only the test lock installs.
bench: $(VENV)/.installed-test bytecode
	$(PY) bench/partition.py
	$(PY) bench/cli.py --skip-slow

# The replication report: rerun every entry into the outcomes shipped with bnviz (minutes),
# then regenerate docs/REPLICATION.md from them (never edit it by hand; a test compares them).
replication: $(VENV)/.installed
	$(PY) -m bnviz replicate --run all --store bnviz/replication/outcomes.json > /dev/null
	$(MAKE) replication-docs

replication-docs: $(VENV)/.installed
	$(PY) -m bnviz replicate --markdown --store bnviz/replication/outcomes.json \
	    --out docs/REPLICATION.md

# Regenerate the pinned locks from pyproject.toml (needs the package index; CI never runs it).
# Runtime and test locks are resolved separately: selenium's urllib3<2 stays in the test lock.
# torch's local version tag (+cpu) is dropped: the pin is torch==2.13.0, whichever build.
COMPILE = $(VENV)/bin/pip-compile --quiet --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links
lock: $(VENV)/.installed-test
	$(PY) -m pip install -q pip-tools
	$(COMPILE) --extra web --extra onnx -o requirements.txt pyproject.toml
	$(COMPILE) --extra web --extra onnx --extra test -o requirements-test.txt pyproject.toml
	sed -i 's/^torch==2\.13\.0+cpu/torch==2.13.0/' requirements.txt requirements-test.txt

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
	find . -path ./.git -prune -o -type d -name __pycache__ -exec rm -rf {} +
