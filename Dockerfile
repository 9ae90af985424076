# bnviz: the dashboard, and (same image, another command) a job worker.
#
#   docker build -t bnviz .                                   # CPU torch (default)
#   docker build -t bnviz:cuda --build-arg TORCH_VARIANT=cu128 .   # CUDA torch for GPU hosts
#   docker run --init -p 8050:8050 -v bnviz-home:/data bnviz  # embedded default: one container
#   docker compose up                                         # web + worker + redis (compose file)
#
# The command is `bnviz serve`, what `make serve` runs on a machine: nginx on
# BNVIZ_HOST:BNVIZ_PORT (0.0.0.0:8050 here) buffering in front of gunicorn (gunicorn.conf.py)
# on a unix socket, and the job worker; `docker stop` (SIGTERM) stops the three gracefully.
# Settings come from environment variables (README, "Settings" and "Deploying").
FROM python:3.11-slim

ARG TORCH_VARIANT=cpu
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    BNVIZ_HOME=/data BNVIZ_HOST=0.0.0.0 BNVIZ_PORT=8050
# Debian's nginx: the reverse proxy of `bnviz serve` (its config is bnviz's, not /etc/nginx's)
RUN apt-get update \
    && apt-get install -y --no-install-recommends nginx \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt .
# torch==2.13.0 from PyTorch's index for the chosen variant (cpu, cu128, ...): the PyPI build
# would pull gigabytes of CUDA libraries into a CPU image.
RUN pip install --extra-index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" \
        -r requirements.txt
COPY . .
# The bnviz package itself (its dependencies are the lock above): the `bnviz` command.
RUN pip install --no-deps --no-build-isolation .
# The app runs from /app's sources, which PYTHONDONTWRITEBYTECODE leaves uncompiled: compile
# them once here, or every worker and job process compiles them again (`make bytecode`).
RUN python -m compileall -q bnviz layouts callbacks app.py > /dev/null
# The exact engine's compiled kernels (numba), compiled once here into the image (about a
# minute) rather than by the first server or job of each container.
ENV NUMBA_CACHE_DIR=/app/.numba-cache
RUN python -c "from bnviz.core.compiled_network import warm_up; warm_up(); from bnviz.slices.maxcells import warm_up as w; w()"
RUN useradd --create-home --uid 1000 bnviz && mkdir -p /data && chown -R bnviz /app /data
USER bnviz
VOLUME ["/data"]
EXPOSE 8050
# Healthy only while /healthz says "ok" ("degraded": the job store, broker or disk is not)
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import json, os, sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('BNVIZ_PORT', '8050'), timeout=4); sys.exit(0 if json.load(r).get('status') == 'ok' else 1)"]
CMD ["bnviz", "serve"]
