# volcanoweb: the commands humans and CI run. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed
WITH_SERVICES := scripts/with-services.sh
# pytest-xdist processes per pytest run of `make test` (each with its own test database and Redis database,
# tests/conftest.py); `make test PYTEST_WORKERS=0` runs each pass in one process. `worksteal` hands a worker
# that ran out of tests half of another's: the few long end-to-end tests no longer end a pass on one worker.
PYTEST_WORKERS ?= auto
XDIST := -n $(PYTEST_WORKERS) --dist worksteal
# Python writes the bytecode of what it compiles (into the gitignored __pycache__ folders) even where the machine
# asks it not to: without it every pytest worker and every process a test starts compiled the project's modules
# (and pytest rewrote the test modules' asserts) again, 5 s of each pass's collection.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install run stack test test-postgresql django-check test-browser test-sqlite test-fast check lint fmt type test-scheduler test-web bench bench-smoke bench-peer worker beat web up clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)  ## create .venv and install the project with its dev tools

run: $(STAMP)  ## set up and start the product (embedded: SQLite, sim cluster, in-process loops) on :8000
	@$(PY) manage.py runembedded --port $(PORT)

stack: $(STAMP)  ## start web (ASGI), Celery worker and beat against PostgreSQL and Redis
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/volcanoweb} \
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/0} \
	$(PY) manage.py runstack --seed --port $(PORT)

web: $(STAMP)  ## the ASGI server alone (stack mode): uvicorn with two processes, as runstack and compose (ADR 0007)
	$(BIN)/uvicorn volcanoweb.asgi:application --host 127.0.0.1 --port $(PORT) --workers 2 --loop uvloop \
	  --http httptools --ws websockets-sansio --lifespan off --no-access-log --timeout-graceful-shutdown 5

worker: $(STAMP)  ## a Celery worker for both queues: controllers (celery) and periodic work (stack mode)
	$(BIN)/celery -A volcanoweb worker --pool=threads --concurrency=4 --loglevel=INFO -Q celery,periodic

beat: $(STAMP)  ## Celery beat (stack mode)
	$(BIN)/celery -A volcanoweb beat --loglevel=INFO --schedule var/celerybeat-schedule

up:  ## the same topology in Docker (needs a Docker engine)
	docker compose up --build

fmt: $(STAMP)  ## format and autofix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

lint: $(STAMP)  ## ruff (with the size rules), formatting, import contracts, function and module lengths
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(PY) scripts/check_sizes.py

type: $(STAMP)  ## mypy (strict on scheduler/ and volcanoweb/, with the Django and DRF stubs)
	$(BIN)/mypy

check: lint type django-check  ## lint, types, Django system checks and migrations

django-check: $(STAMP)  ## Django's system checks (deployment warnings fail) and no missing migration
	$(PY) manage.py check --fail-level WARNING
	@mkdir -p var
	$(PY) manage.py makemigrations --check --dry-run

# mypy (one process, ~17 s from a fresh clone) runs beside the PostgreSQL pass rather than before it: `make -j2`
# starts both, waits for both and fails if either fails (the pass's summary line still appears).
test: $(STAMP)  ## everything: checks, the whole pytest suite on PostgreSQL and Redis, then the SQLite pass
	scripts/ensure-chromium.sh
	scripts/ensure-kubectl.sh
	scripts/ensure-slurm.sh
	$(MAKE) --no-print-directory lint django-check
	$(MAKE) --no-print-directory -j2 type test-postgresql
	$(MAKE) --no-print-directory test-browser
	$(MAKE) --no-print-directory test-sqlite

test-postgresql: $(STAMP)  ## the whole suite but the browser tests, on PostgreSQL and Redis
	$(WITH_SERVICES) $(BIN)/pytest $(XDIST) -m "not browser"

# The browser tests fork their ASGI server from the pytest process: they get a process of their own, so
# that the fork never inherits locks held by threads that earlier tests left running (a watch's thread,
# a live server), which made the forked server's WebSocket hang after the rest of the suite.
test-browser: $(STAMP)  ## the headless-Chromium tests alone
	$(WITH_SERVICES) $(BIN)/pytest $(XDIST) -m browser tests/browser

# The tests marked both_databases (tests/cli, tests/volcanoweb, or the marker) again, on a SQLite file with
# the options `make run` uses (see tests/conftest.py); the embedded e2e test covers `make run` itself.
test-sqlite: $(STAMP)  ## the both-database tests again on SQLite, the embedded default
	@tmp="$$(mktemp -d /tmp/volcanoweb-sqlite.XXXXXX)"; trap 'rm -rf "$$tmp"' EXIT; \
	DATABASE_URL="sqlite:///$$tmp/db.sqlite3" $(WITH_SERVICES) $(BIN)/pytest $(XDIST) -m "both_databases and not e2e and not browser"

test-fast: $(STAMP)  ## the pytest suite without the end-to-end and browser tests
	$(WITH_SERVICES) $(BIN)/pytest $(XDIST) -m "not e2e and not browser"

test-scheduler: $(STAMP)  ## the scheduling core alone (no Django, no services)
	$(BIN)/pytest tests/scheduler -p no:django -W ignore::pytest.PytestConfigWarning

bench: $(STAMP)  ## the benchmarks; JSON report in bench/results/
	$(WITH_SERVICES) $(PY) -m bench all --out bench/results/latest.json

bench-peer: $(STAMP)  ## the Slurm peer: installs Debian's slurm-wlm and munge if missing, then 2,000 jobs of `true` from 20 sbatch clients
	scripts/ensure-slurm.sh
	$(PY) -m bench peer-slurm

bench-smoke: $(STAMP)  ## a quick run of the benchmarks at size S, checking correctness only
	$(PY) -m bench smoke

clean:  ## remove the venv and local state
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
