# bnviz: the dashboard, and (same image, another command) a job worker.
#
#   make image                                                # localhost/bnviz:latest, any machine
#   docker build -t bnviz .                                   # CPU torch (default)
#   docker build -t bnviz:cuda --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
#   docker run --init -p 8050:8050 -v bnviz-home:/data bnviz  # embedded default: one container
#   docker compose up                                         # web + worker + redis (compose file)
#
# `make image` builds this file with Docker where a daemon answers, else with podman or buildah
# (no daemon); where the registry's python image cannot be pulled it first makes a base from
# Debian's packages (debootstrap: python3.11 and venv) and passes it as BASE_IMAGE. This file
# works on both bases: it runs from its own virtual environment (/opt/venv), never from the
# base's Python.
#
# The command is `bnviz serve`, what `make serve` runs on a machine: nginx on
# BNVIZ_HOST:BNVIZ_PORT (0.0.0.0:8050 here) buffering in front of gunicorn (gunicorn.conf.py)
# on a unix socket, and the job worker; `docker stop` (SIGTERM) stops the three gracefully.
# Settings come from environment variables (docs/settings.md; deploying: docs/deploying.md).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

# Layers from the least to the most often changed: the system packages, the lock's packages,
# then bnviz's own code, so that a code change rebuilds only the last layers.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH \
    BNVIZ_HOME=/data BNVIZ_HOST=0.0.0.0 BNVIZ_PORT=8050
# Debian's nginx: the reverse proxy of `bnviz serve` (its config is bnviz's, not /etc/nginx's)
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
    && python3 -m venv /opt/venv
WORKDIR /app
COPY requirements.txt .
# The lock `make run` installs, with --no-deps (it is complete) and pip check, less the extras
# the dashboard and the workers never use (LEAVE_OUT: GeoParquet's pyarrow and MP4's
# imageio-ffmpeg, 335 MB; `bnviz partition --geometry x.parquet` and `bnviz train --movie` say
# in one line what to install). torch==2.13.0 is the CPU build: from TORCH_INDEX where that
# index answers, and from any wheels a builder mounts at /wheels (podman build -v
# /opt/wheels:/wheels); PyPI's torch would pull gigabytes of CUDA libraries into a CPU image.
# No index is required that cannot be reached. Behind a proxy that signs with its own CA, the
# builder mounts that CA at /run/build-ca.crt (make image mounts the host's PIP_CERT or
# SSL_CERT_FILE); it is never copied into the image. Then what only building or testing
# needs goes: the packages' own test suites and torch's C++ headers.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG LEAVE_OUT="pyarrow imageio-ffmpeg"
RUN if [ -f /run/build-ca.crt ]; then export PIP_CERT=/run/build-ca.crt SSL_CERT_FILE=/run/build-ca.crt; fi; \
    source=""; \
    if python -c "import sys, urllib.request as r; r.urlopen(sys.argv[1] + '/torch/', timeout=5)" \
        "$TORCH_INDEX" 2>/dev/null; then source="--extra-index-url $TORCH_INDEX"; fi; \
    if [ -d /wheels ]; then source="$source --find-links /wheels"; fi; \
    cp requirements.txt /tmp/lock.txt; \
    for name in $LEAVE_OUT; do sed -i "/^$name==/d" /tmp/lock.txt; done; \
    pip install --no-deps $source -r /tmp/lock.txt && pip check \
    && site=$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") \
    && find "$site" -mindepth 2 -type d -name tests -prune -exec rm -rf {} + \
    && rm -rf "$site/torch/include" /tmp/lock.txt /root/.cache
COPY . /tmp/src
# The bnviz package itself (its dependencies are the lock above): the `bnviz` command and the
# dashboard (bnviz.web), installed into site-packages with their bytecode (pip compiles it;
# PYTHONDONTWRITEBYTECODE would leave every worker and job process compiling it again). The
# source tree goes: a second copy of bnviz in the working folder would be imported instead of
# the installed one by any `python -m` run there, with kernels cached for other paths. Then
# the exact engine's compiled kernels (numba), compiled once here for the installed files
# rather than by the first server or job of each container. matplotlib (the pictures of
# `--format png|svg` and the lecture's slides) keeps its font list in MPLCONFIGDIR: built
# here too, so that no container writes it into the user's home.
ENV NUMBA_CACHE_DIR=/app/.numba-cache MPLCONFIGDIR=/app/.matplotlib
RUN pip install --no-deps --no-build-isolation /tmp/src \
    && rm -rf /tmp/src /root/.cache \
    && python -c "from bnviz.core.compiled_network import warm_up; warm_up(); from bnviz.slices.maxcells import warm_up as w; w()" \
    && python -c "import matplotlib.font_manager"
# A user of its own: the image writes only to its data volume (/data) and /tmp. numba uses a
# cache directory only where it may write (else it compiles again into ~/.cache): the
# kernels' cache is the user's, though a container only reads it (tests/container checks).
RUN useradd --create-home --uid 1000 bnviz && mkdir -p /data \
    && chown bnviz /data && chown -R bnviz "$NUMBA_CACHE_DIR" "$MPLCONFIGDIR"
USER bnviz
VOLUME ["/data"]
EXPOSE 8050
# Healthy only while /healthz says "ok" ("degraded": the job store, broker or disk is not)
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import json, os, sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('BNVIZ_PORT', '8050'), timeout=4); sys.exit(0 if json.load(r).get('status') == 'ok' else 1)"]
CMD ["bnviz", "serve"]
