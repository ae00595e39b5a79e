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
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "volcanoweb.asgi:application"]
