# bnviz: the dashboard, and (same image, another command) a job worker.
#
#   docker build -t bnviz .                                   # CPU torch (default)
#   docker build -t bnviz:cuda --build-arg TORCH_VARIANT=cu128 .   # CUDA torch for GPU hosts
#   docker run -p 8050:8050 -v bnviz-home:/data bnviz         # embedded default: one container
#   docker compose up                                         # web + worker + redis (compose file)
#
# The web command is gunicorn with gunicorn.conf.py (workers, threads, timeouts); settings
# come from environment variables (README, "Settings").
FROM python:3.11-slim

ARG TORCH_VARIANT=cpu
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    BNVIZ_HOME=/data BNVIZ_BIND=0.0.0.0:8050
WORKDIR /app
COPY requirements.txt .
# torch==2.13.0 from PyTorch's index for the chosen variant (cpu, cu128, ...): the PyPI build
# would pull gigabytes of CUDA libraries into a CPU image.
RUN pip install --extra-index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" \
        -r requirements.txt
COPY . .
# The bnviz package itself (its dependencies are the lock above): the `bnviz` command.
RUN pip install --no-deps --no-build-isolation .
RUN useradd --create-home --uid 1000 bnviz && mkdir -p /data && chown -R bnviz /app /data
USER bnviz
VOLUME ["/data"]
EXPOSE 8050
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import json, sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8050/healthz', timeout=4); sys.exit(0 if json.load(r)['status'] in ('ok', 'degraded') else 1)"]
CMD ["gunicorn", "-c", "gunicorn.conf.py", "app:server"]
