# volcanoweb image: one image, three roles (web, worker, beat) chosen by the command.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 VAR_DIR=/data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
COPY volcanoweb ./volcanoweb
COPY templates ./templates
COPY static ./static
COPY manage.py ./
RUN pip install --no-cache-dir . && mkdir -p /data
EXPOSE 8000
# The web role as in docker-compose.yml and `manage.py runstack` (ADR 0007): uvicorn, two processes.
CMD ["uvicorn", "volcanoweb.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--workers", "2", "--loop", "uvloop", "--http", "httptools", "--ws", "websockets-sansio", "--lifespan", "off", "--no-access-log"]
