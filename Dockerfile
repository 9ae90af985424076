# bnviz dashboard image (issue 7 completes it: gunicorn config, HEALTHCHECK, CUDA build arg).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
RUN useradd --create-home bnviz && chown -R bnviz /app
USER bnviz
EXPOSE 8050
CMD ["gunicorn", "app:server", "--bind", "0.0.0.0:8050", "--workers", "2", "--threads", "2", "--timeout", "60"]
