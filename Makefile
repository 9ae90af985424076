# bnviz: developer tasks. `make test` is what CI runs (via .ci/run).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run serve test bench lint lock clean check-python replication replication-docs bytecode \
	image image-test image-check

# One line, not a pip traceback, when the interpreter is one bnviz does not support.
check-python:
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 11) <= v < (3, 14) else "bnviz needs Python 3.11 to 3.13 (found %d.%d): set PYTHON=python3.11, e.g. make run PYTHON=python3.11" % v)'

# The locks are complete for torch's CPU-only build (PyPI's torch for Linux brings ~20 CUDA
# packages they do not list): it comes from PyTorch's CPU index where that answers (5 s), else
# from pip's own sources, e.g. a local torch-2.13.0+cpu wheel through pip's find-links, as on
# machines without that index. `make run TORCH_INDEX=` never asks it.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_SOURCE = $$($(PY) -c 'import sys, urllib.request as r; r.urlopen(sys.argv[1] + "/torch/", timeout=5); print("--extra-index-url", sys.argv[1])' '$(TORCH_INDEX)' 2>/dev/null)
# The environment is exactly the lock (installed with --no-deps), so a lock that misses a
# package fails here, in one line, instead of pip fetching it unpinned.
PIP_CHECK = @$(PIP_CHECK_CMD) > /dev/null 2>&1 || { $(PIP_CHECK_CMD); echo "bnviz: the lock is not complete here (above); its torch is the CPU build: from $(TORCH_INDEX) or a local wheel (README, Installing)"; exit 1; }

# The installer: uv (pinned; pip installs it into the venv first), which installs a lock in
# seconds where pip took 50 s (warm) to minutes (a fresh machine), writing the same bytecode
# pip writes (--compile-bytecode). It reads no pip configuration, so pip's find-links
# (PIP_FIND_LINKS: a local torch wheel on machines without PyTorch's index) are passed on.
UV_VERSION = 0.13.9
UV = $(VENV)/bin/uv
INSTALL = $(UV) pip install --python $(PY) --no-deps --compile-bytecode --quiet \
	$(foreach d,$(PIP_FIND_LINKS),--find-links $(d))
PIP_CHECK_CMD = $(UV) pip check --python $(PY)

# Stamps: (re)install a pinned lock when it or pyproject changes, then the bnviz package itself
# (editable, no dependencies: the lock has them all). `run` needs the runtime lock; `test` the
# test lock, a superset (its urllib3 is older, for selenium), which also satisfies `run`: a venv
# `make test` made keeps the test lock when `run` reinstalls (RUN_LOCK). Both locks hold every
# extra (web, onnx, geo, video; the test lock also test).
RUN_LOCK = $(if $(wildcard $(VENV)/.installed-test),requirements-test.txt,requirements.txt)
$(VENV)/.installed: requirements.txt pyproject.toml | check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(INSTALL) $(TORCH_SOURCE) -r $(RUN_LOCK)
	$(INSTALL) --no-build-isolation -e .
	$(PIP_CHECK)
	touch $@

$(VENV)/.installed-test: requirements-test.txt requirements.txt pyproject.toml | check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(INSTALL) $(TORCH_SOURCE) -r requirements-test.txt
	$(INSTALL) --no-build-isolation -e .
	$(PIP_CHECK)
	touch $@ $(VENV)/.installed

# Compiled bytecode for the project's own modules, as `pip install` writes it for every
# installed package. Where PYTHONDONTWRITEBYTECODE is set (CI images, these machines) nothing
# else writes it, and every process (a CLI command, a gunicorn worker, each test's subprocess)
# compiled bnviz's sources again: 25 ms of a 0.21 s `bnviz partition` (bench/cli.py). Only
# stale files are recompiled; a stale .pyc is never used (Python checks the source's mtime).
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q -j 0 bnviz > /dev/null

# The embedded single-machine default: gunicorn (threads and processes, gunicorn.conf.py), not
# Flask's development server, on BNVIZ_HOST:BNVIZ_PORT (127.0.0.1:8050), no server to install.
# `bnviz serve --no-nginx` is the same command outside a checkout (an installed wheel).
run: $(VENV)/.installed bytecode
	$(PY) -m bnviz serve --no-nginx

# The production stack on this machine, what the container runs (`bnviz serve`): nginx on
# BNVIZ_HOST:BNVIZ_PORT (127.0.0.1:8050) buffering in front of gunicorn on a unix socket, and
# the job worker; SIGTERM or Ctrl-C stops all three. Needs nginx (Debian: apt-get install nginx).
serve: $(VENV)/.installed bytecode
	$(PY) -m bnviz serve

# ruff, and the import contracts of .importlinter (layers, no cycles: import-linter)
lint: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports

# The suite on every core (pytest-xdist; TEST_WORKERS=0 runs it in this process): the browser
# tests share one worker (dash's test server has one port), the rest are spread.
TEST_WORKERS ?= auto
test: $(VENV)/.installed-test bytecode
	$(PY) -m ruff check .
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

# The container image, localhost/bnviz:latest (IMAGE_TAG): Docker where a daemon answers, else
# podman or buildah, with no daemon; on a base made from Debian's packages where the registry's
# python image cannot be pulled (.ci/image says how). image-test runs the built image from its
# root as its USER (tests/container: healthz, a page, a partition, a job, the HEALTHCHECK,
# compose's web and Celery worker against Redis); it needs root. .ci/run calls it.
IMAGE_TAG ?= localhost/bnviz:latest
image:
	IMAGE_TAG=$(IMAGE_TAG) .ci/image

image-test: image
	$(MAKE) image-check

# the image's test alone, on the image built last
image-check: $(VENV)/.installed-test
	BNVIZ_IMAGE_TEST=$(IMAGE_TAG) $(PY) -m pytest -q -s tests/container

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
# Resolved, like the installs, against torch's CPU build (TORCH_SOURCE: the CPU index, else a
# local wheel), so that neither lists CUDA packages; its local version tag (+cpu) is dropped:
# the pin is torch==2.13.0, which the CPU index (or the local wheel) answers with the CPU build.
# Each lock opens with what it is complete for.
COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(VENV)/bin/pip-compile --quiet --allow-unsafe \
	--strip-extras --no-emit-index-url --no-emit-find-links $(TORCH_SOURCE)
EXTRAS = --extra web --extra onnx --extra geo --extra video --extra map
# pip-compile resolves for this interpreter's patch release; what earlier 3.11 releases need
# besides (Debian bookworm's python3 is 3.11.2, the image's local base) is pinned here.
OLD_PATCH_PINS = 'async-timeout==5.0.1 ; python_full_version < "3.11.3"' \
	'    # via redis, on Python 3.11.0 to 3.11.2 (Debian bookworm: make image)'
lock: $(VENV)/.installed-test
	$(PY) -m pip install -q pip-tools
	$(COMPILE) $(EXTRAS) -o requirements.txt pyproject.toml
	$(COMPILE) $(EXTRAS) --extra test -o requirements-test.txt pyproject.toml
	sed -i 's/^torch==2\.13\.0+cpu/torch==2.13.0/' requirements.txt requirements-test.txt
	for f in requirements.txt requirements-test.txt; do printf '%s\n' $(OLD_PATCH_PINS) >> $$f; done
	for f in requirements.txt requirements-test.txt; do { printf '%s\n' \
	    '# Complete for CPython 3.11 on Linux x86_64 with torch'"'"'s CPU-only build (no CUDA' \
	    '# packages): pip install --no-deps --extra-index-url https://download.pytorch.org/whl/cpu' \
	    '# -r THIS_FILE (what make run and make test do; a local torch-2.13.0+cpu wheel through' \
	    '# --find-links serves too). A GPU: README, Installing.'; cat $$f; } > $$f.new \
	    && mv $$f.new $$f; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
	find . -path ./.git -prune -o -type d -name __pycache__ -exec rm -rf {} +
