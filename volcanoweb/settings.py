"""Django settings for volcanoweb, read from the environment (see .env.example).

With no variables set this is the embedded mode: SQLite, an in-memory channel
layer, Celery tasks run eagerly and the scheduling and controller loops run
in-process against the simulated cluster. Setting REDIS_URL (and usually
DATABASE_URL) switches to the stack mode: Redis channel layer and Celery broker,
with a separate worker and beat.
"""

from __future__ import annotations

import ipaddress
import zoneinfo
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from volcanoweb.core.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_secret,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_secret("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY: must be set when DEBUG is off")
    SECRET_KEY = "insecure-dev-key-change-me"  # development default only; refused when DEBUG is off
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# a stale form's post gets the product's answer, never Django's page (with DEBUG, its help section)
CSRF_FAILURE_VIEW = "volcanoweb.dashboard.errors.csrf_failure"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "channels",
    "volcanoweb.core",
    "volcanoweb.serve",
    "volcanoweb.tenancy",
    "volcanoweb.queues",
    "volcanoweb.jobs",
    "volcanoweb.workflows",
    "volcanoweb.audit",
    "volcanoweb.scheduling",
    "volcanoweb.insights",
    "volcanoweb.clusters",
    "volcanoweb.runtime",
    "volcanoweb.demo",
    "volcanoweb.dashboard",
    "axes",  # failed sign-ins, per user and per client address (docs/adr/0025)
    "volcanoweb.feed",  # last: its post_migrate (re)creates the log triggers on every other app's tables
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "volcanoweb.api.errors.NulBytesMiddleware",  # %00 in a path or query: 400 on both databases
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    "volcanoweb.dashboard.middleware.LiveSocketCSPMiddleware",  # after CSPMiddleware: it reads our answer
    "volcanoweb.dashboard.middleware.LiveRevisionMiddleware",  # the revision a page's socket starts from
    "volcanoweb.api.errors.ApiErrorMiddleware",
    "volcanoweb.dashboard.errors.ErrorPagesMiddleware",
    "volcanoweb.dashboard.errors.AuditSourceMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out user or address before the password check
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "volcanoweb.urls"
WSGI_APPLICATION = "volcanoweb.wsgi.application"
ASGI_APPLICATION = "volcanoweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "volcanoweb.dashboard.context.sim_clock",
                "volcanoweb.dashboard.context.live_socket",
            ],
        },
    },
]

# --- database -------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except Exception as exc:  # dj_database_url raises several types for bad URLs
    raise ImproperlyConfigured(f"DATABASE_URL: cannot parse {DATABASE_URL!r}: {exc}") from exc
# PostgreSQL's JIT compiler (on by default) compiles any statement whose estimated cost passes jit_above_cost:
# the drift check's correlated subqueries spent 1.1 s of 1.13 s compiling and 20 ms running (ADR 0032). The
# product's statements are short; JIT stays off unless DATABASE_JIT is true.
DATABASE_JIT = env_bool("DATABASE_JIT", False)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, stamping the change log's revisions just before COMMIT (core/backends/postgresql).
    DATABASES["default"]["ENGINE"] = "volcanoweb.core.backends.postgresql"
    if not DATABASE_JIT:
        _pg_options = DATABASES["default"].setdefault("OPTIONS", {})
        _pg_options["options"] = f"{_pg_options.get('options', '')} -c jit=off".strip()
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's backend, with this process's write transactions served in arrival order (core/backends/sqlite3).
    DATABASES["default"]["ENGINE"] = "volcanoweb.core.backends.sqlite3"
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})
    # Writers queue at BEGIN (IMMEDIATE) for at most 20 s (the busy timeout); WAL lets readers go on while one
    # writes, and synchronous=NORMAL (safe with WAL: a crash of the process loses nothing committed) spares an
    # fsync per commit. The journal mode is stored in the file; the other pragmas are per connection.
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Full garbage collections in the ASGI processes after this many middle-generation ones (Python: 10); 0 leaves
# Python's settings (volcanoweb.core.gctune, ADR 0034).
GC_GEN2_THRESHOLD = env_int("GC_GEN2_THRESHOLD", 1000, minimum=0)
# PostgreSQL connections the ASGI server keeps in a pool for its request threads (volcanoweb/asgi.py; 0: none).
ASGI_DB_POOL_SIZE = env_int("ASGI_DB_POOL_SIZE", 10, minimum=0)
# Group commit (ADR 0030): single-Job applies of a process that arrive within this many milliseconds of each
# other are applied together in one transaction, each keeping its own answer (0: each on its own).
GROUP_COMMIT_WINDOW_MS = env_float("GROUP_COMMIT_WINDOW_MS", 2.0)
if GROUP_COMMIT_WINDOW_MS < 0:
    raise ImproperlyConfigured(f"GROUP_COMMIT_WINDOW_MS: must not be negative, not {GROUP_COMMIT_WINDOW_MS}")
# --- change log (volcanoweb/feed, ADR 0024) ---------------------------------------------------------------
# Compaction keeps at least this many revisions, for at least this long; a watch, list or continue token
# from an older revision answers 410 Expired.
FEED_RETENTION_ENTRIES = env_int("FEED_RETENTION_ENTRIES", 100_000, minimum=0)
FEED_RETENTION_SECONDS = env_float("FEED_RETENTION_SECONDS", 600.0, positive=True)
# How often a process's tailer (while anyone in the process watches) reads the last revision taken, and reads
# the new entries when it moved (ADR 0029: no NOTIFY, which would serialise PostgreSQL's commits).
FEED_POLL_SECONDS = env_float("FEED_POLL_SECONDS", 0.05, positive=True)
FEED_COMPACT_PERIOD = env_float("FEED_COMPACT_PERIOD", 30.0, positive=True)
# PostgreSQL: the compaction also vacuums the log once this many dead row versions have gathered (0: never;
# volcanoweb/feed/vacuum.py, ADR 0036).
FEED_VACUUM_DEAD_ROWS = env_int("FEED_VACUUM_DEAD_ROWS", 10_000, minimum=0)

# --- redis, channels, celery ---------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
EMBEDDED = not REDIS_URL
CHANNEL_LAYERS: dict[str, dict[str, object]]
if EMBEDDED:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout by default, which is exactly
                # channels_redis' blocking-pop timeout: give the socket room above it.
                "hosts": [{"address": env_str("CHANNELS_REDIS_URL", REDIS_URL), "socket_timeout": 15}],
                "capacity": 1000,
            },
        }
    }
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "memory://")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL or "cache+memory://")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", EMBEDDED)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"

# --- the scheduler and the cluster ---------------------------------------
SCHEDULE_PERIOD = env_float("SCHEDULE_PERIOD", 1.0, positive=True)
CONTROLLER_RESYNC_PERIOD = env_float("CONTROLLER_RESYNC_PERIOD", 5.0, positive=True)
# Every CONTROLLER_RESYNC_PERIOD the resync reconciles the jobs with work due (timers, commands, deletions);
# every CONTROLLER_DRIFT_RESYNC_PERIOD also those whose rows drifted from the controller's records (a missed
# notification); every CONTROLLER_FULL_RESYNC_PERIOD (0: never) every busy job.
CONTROLLER_DRIFT_RESYNC_PERIOD = env_float("CONTROLLER_DRIFT_RESYNC_PERIOD", 30.0)
# A queue sync the informer asks for (PodGroups created or deleted) starts this many seconds later, and serves
# every request made until it starts (runtime.dispatch.request_queue_sync with Redis; the embedded mode's drain).
CONTROLLER_QUEUE_SYNC_DELAY = env_float("CONTROLLER_QUEUE_SYNC_DELAY", 1.0)
CONTROLLER_FULL_RESYNC_PERIOD = env_float("CONTROLLER_FULL_RESYNC_PERIOD", 300.0)
CLUSTER_BACKEND = env_choice("CLUSTER_BACKEND", ("sim", "kubernetes"), "sim")
KUBECONFIG = env_str("KUBECONFIG", "")
KUBE_CONTEXT = env_str("KUBE_CONTEXT", "")
KUBE_IN_CLUSTER = env_bool("KUBE_IN_CLUSTER", False)
if CLUSTER_BACKEND == "kubernetes" and KUBE_IN_CLUSTER and KUBECONFIG:
    raise ImproperlyConfigured("KUBE_IN_CLUSTER: cannot be combined with KUBECONFIG; choose one")
SIM_NODE_POOL = env_str("SIM_NODE_POOL", "cpu:8x16c64Gi,gpu:4x32c256Gi4gpu")
try:
    from volcanoweb.clusters.backends.sim import parse_pool_spec

    parse_pool_spec(SIM_NODE_POOL)
except ValueError as exc:
    raise ImproperlyConfigured(f"SIM_NODE_POOL: {exc}") from exc
SIM_CLOCK_SPEED = env_float("SIM_CLOCK_SPEED", 10.0, positive=True)
SIM_DEFAULT_DURATION = env_float("SIM_DEFAULT_DURATION", 60.0, positive=True)
RUN_LOOPS_IN_PROCESS = env_bool("RUN_LOOPS_IN_PROCESS", EMBEDDED)
# The stack's ASGI server (runstack, docker-compose.yml): uvicorn with WEB_WORKERS processes, or daphne (one).
WEB_SERVER = env_choice("WEB_SERVER", ("uvicorn", "daphne"), "uvicorn")
WEB_WORKERS = env_int("WEB_WORKERS", 2, minimum=1)
# runstack: Celery worker processes consuming the controllers' queue (worker, worker2, ...; issue 17's bench).
CONTROLLER_WORKERS = env_int("CONTROLLER_WORKERS", 1, minimum=1)
# The stack's live processes (issue 26): LIVE_WORKERS uvicorn processes of their own serve the dashboard's
# WebSockets on LIVE_PORT (runstack: PORT + 1 unless set), so that no request's sync view takes their CPU.
# Pages open their socket on LIVE_PORT of the host they came from (0: on their own origin, as the embedded
# mode and LIVE_WORKERS=0 do). Behind a proxy that routes /ws/ to the live processes, leave LIVE_PORT 0.
LIVE_WORKERS = env_int("LIVE_WORKERS", 1, minimum=0)
LIVE_PORT = env_int("LIVE_PORT", 0, minimum=0)
# Periodic work: (name, Celery task, period in seconds). Celery beat runs these in the stack
# mode; the embedded mode calls the same tasks from in-process loops (volcanoweb.serve.loops).
CRONJOB_TICK_PERIOD = env_float("CRONJOB_TICK_PERIOD", 10.0, positive=True)
CRONJOB_DEFAULT_TIME_ZONE = env_str("CRONJOB_DEFAULT_TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(CRONJOB_DEFAULT_TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
    raise ImproperlyConfigured(f"CRONJOB_DEFAULT_TIME_ZONE: unknown time zone {CRONJOB_DEFAULT_TIME_ZONE!r}") from exc
# Insights (volcanoweb/insights): how many recent cycle inputs to keep (0: none), and how long queue
# history is kept per roll-up (per cycle, per minute, per hour) and job wait timelines, in seconds.
INSIGHTS_RECORD = env_bool("INSIGHTS_RECORD", True)  # off: cycles record nothing (for A/B benchmarks)
# Record each cycle in a writer thread beside the loop (off: in line, inside the cycle's time); the writer
# takes at most BACKLOG waiting cycles, and a cycle waits at most WAIT seconds for room (then it is dropped).
INSIGHTS_RECORD_ASYNC = env_bool("INSIGHTS_RECORD_ASYNC", True)
INSIGHTS_RECORD_BACKLOG = env_int("INSIGHTS_RECORD_BACKLOG", 2, minimum=1)
INSIGHTS_RECORD_WAIT = env_float("INSIGHTS_RECORD_WAIT", 30.0, positive=True)
INSIGHTS_KEEP_CYCLE_INPUTS = env_int("INSIGHTS_KEEP_CYCLE_INPUTS", 50, minimum=0)
# cycles that bound or evicted pods or first found a job unschedulable: their inputs are kept this long (seconds)
INSIGHTS_DECIDED_CYCLE_RETENTION = env_float("INSIGHTS_DECIDED_CYCLE_RETENTION", 86400.0, positive=True)
INSIGHTS_CYCLE_RETENTION = env_float("INSIGHTS_CYCLE_RETENTION", 3600.0, positive=True)
INSIGHTS_MINUTE_RETENTION = env_float("INSIGHTS_MINUTE_RETENTION", 86400.0, positive=True)
INSIGHTS_HOUR_RETENTION = env_float("INSIGHTS_HOUR_RETENTION", 90 * 86400.0, positive=True)
INSIGHTS_TIMELINE_RETENTION = env_float("INSIGHTS_TIMELINE_RETENTION", 90 * 86400.0, positive=True)
INSIGHTS_PRUNE_PERIOD = env_float("INSIGHTS_PRUNE_PERIOD", 60.0, positive=True)
# How often node metrics (metrics-server, or the simulated cluster's usage model) are read into the Node rows.
NODE_METRICS_PERIOD = env_float("NODE_METRICS_PERIOD", 15.0, positive=True)
PERIODIC_TASKS: list[tuple[str, str, float]] = [
    ("scheduling-cycle", "volcanoweb.scheduling.tasks.run_cycle", SCHEDULE_PERIOD),
    ("cluster-sync", "volcanoweb.clusters.tasks.sync_backend", max(SCHEDULE_PERIOD / 2, 0.2)),
    ("controller-resync", "volcanoweb.runtime.resync_controllers", CONTROLLER_RESYNC_PERIOD),
    ("cronjob-tick", "volcanoweb.workflows.tasks.tick_cronjobs", CRONJOB_TICK_PERIOD),
    ("jobflow-sync", "volcanoweb.workflows.tasks.sync_jobflows", CONTROLLER_RESYNC_PERIOD),
    ("insights-prune", "volcanoweb.insights.tasks.prune", INSIGHTS_PRUNE_PERIOD),
    ("feed-compact", "volcanoweb.feed.tasks.compact", FEED_COMPACT_PERIOD),
    ("node-metrics", "volcanoweb.clusters.tasks.record_node_usage", NODE_METRICS_PERIOD),
]
CELERY_BEAT_SCHEDULE = {
    name: {"task": task, "schedule": period, "options": {"expires": max(period * 2, 1.0)}}
    for name, task, period in PERIODIC_TASKS
}
# Periodic work has its own queue and worker (runstack's "scheduler" process), so that a burst of
# controller tasks on the default queue never delays a scheduling cycle or the backend sync past
# its beat expiry.
PERIODIC_QUEUE = "periodic"
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {task: {"queue": PERIODIC_QUEUE} for _name, task, _period in PERIODIC_TASKS}
MAX_MANIFEST_BYTES = env_int("MAX_MANIFEST_BYTES", 1_048_576, minimum=1024)
# Objects one apply may carry (at least manifests.parse.MAX_DOCUMENTS = 100; the issue-17 bench applies 500).
# Failed authentication (docs/adr/0025). Sign-ins (django-axes, counted in the database): after
# LOGIN_FAILURE_LIMIT failures for one username, or from one client address, that user or address is refused
# (429 with Retry-After) for LOGIN_LOCKOUT_SECONDS, even with the right password. Bearer tokens: after
# API_AUTH_FAILURE_LIMIT unknown, revoked or expired tokens from one client address (or for one user) within
# API_AUTH_FAILURE_WINDOW seconds, every token from it is answered 429 until the window ends. The client address
# is the connection's (REMOTE_ADDR); forwarded headers are not trusted.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10, minimum=1)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 900, minimum=1)
API_AUTH_FAILURE_LIMIT = env_int("API_AUTH_FAILURE_LIMIT", 20, minimum=1)
API_AUTH_FAILURE_WINDOW = env_int("API_AUTH_FAILURE_WINDOW", 300, minimum=1)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=LOGIN_LOCKOUT_SECONDS)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "volcanoweb.tenancy.throttling.lockout_response"
AXES_CLIENT_IP_CALLABLE = "volcanoweb.tenancy.throttling.client_address"
AXES_SENSITIVE_PARAMETERS = ["password"]
AXES_DISABLE_ACCESS_LOG = True  # failures are what is counted; successful sign-ins are not logged in a table
# The failure counters of bearer tokens: Redis in the stack mode (shared by its processes), else this process.
CACHES = {
    "default": (
        {
            "BACKEND": "volcanoweb.core.cache.SharedRedisCache",  # one client per process (ADR 0035)
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": f"volcanoweb:{DATABASES['default'].get('NAME') or ''}",
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "volcanoweb"}
    )
}

# API tokens (docs/adr/0025): every token expires, by default this many days after its creation; a caller
# may ask for less, never more than API_TOKEN_MAX_TTL_DAYS (nor past the token that minted it).
API_TOKEN_TTL_DAYS = env_int("API_TOKEN_TTL_DAYS", 90, minimum=1)
API_TOKEN_MAX_TTL_DAYS = env_int("API_TOKEN_MAX_TTL_DAYS", 365, minimum=1)
# POST /api/v1/simulate and the Submit dry run (docs/adr/0025): per request, at most this many simulated
# pods (the manifest's replicas and Pods) and hypothetical nodes; this many at a time per web process (a
# request waits SIMULATE_QUEUE_WAIT seconds for a slot, else 429); the cycle runs in a child process that is
# killed after SIMULATE_TIMEOUT seconds (413).
SIMULATE_MAX_PODS = env_int("SIMULATE_MAX_PODS", 5000, minimum=1)
SIMULATE_MAX_NODES = env_int("SIMULATE_MAX_NODES", 1000, minimum=0)
SIMULATE_CONCURRENCY = env_int("SIMULATE_CONCURRENCY", 2, minimum=1)
SIMULATE_QUEUE_WAIT = env_float("SIMULATE_QUEUE_WAIT", 5.0, positive=True)
SIMULATE_TIMEOUT = env_float("SIMULATE_TIMEOUT", 20.0, positive=True)
MAX_MANIFEST_DOCUMENTS = env_int("MAX_MANIFEST_DOCUMENTS", 100, minimum=1)
# The Kubernetes-shaped API (docs/kubernetes-api.md): kubectl sends tokens only over HTTPS. The embedded server
# listens on HTTPS_PORT (default PORT+443; 0 = no HTTPS) with a self-signed certificate under TLS_DIR;
# KUBE_API_URL is the server URL written into generated kubeconfigs (default: that HTTPS listener).
_HTTPS_PORT = env_int("HTTPS_PORT", -1, minimum=-1)
HTTPS_PORT: int | None = None if _HTTPS_PORT < 0 else _HTTPS_PORT
TLS_DIR = Path(env_str("TLS_DIR", str(VAR_DIR / "tls")))
KUBE_API_URL = env_str("KUBE_API_URL", "")

# --- auth, i18n, static ----------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
# WhiteNoise serves static files from the finders, so no collectstatic step is needed to run.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "volcanoweb.tenancy.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "EXCEPTION_HANDLER": "volcanoweb.api.errors.exception_handler",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "volcanoweb API",
    "DESCRIPTION": "Control plane API for Volcano-style batch scheduling.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- transport security (behind a TLS-terminating proxy; see README "Configuration") ----------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Health checks and Prometheus scrapes come over plain HTTP from inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^livez$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
_PROXY_SSL_HEADER = env_str("SECURE_PROXY_SSL_HEADER", "")
if _PROXY_SSL_HEADER:
    _header, _, _value = _PROXY_SSL_HEADER.partition("=")
    if not _header.strip():
        raise ImproperlyConfigured("SECURE_PROXY_SSL_HEADER: expected a header name such as X-Forwarded-Proto")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _header.strip().upper().replace("-", "_"), _value.strip() or "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): scripts only from our own static files, no inline scripts or
# handlers; inline style attributes stay allowed (the meters' widths). The WebSocket is same-origin, or on
# LIVE_PORT of the page's host (dashboard.middleware.LiveSocketCSPMiddleware adds that one origin).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# /metrics (it names every tenant's queues): a scrape needs the bearer token or a connection from an allowed
# network (by default the loopback addresses; never a request that came through a proxy); METRICS_PUBLIC=true
# opens it to everyone.
METRICS_PUBLIC = env_bool("METRICS_PUBLIC", False)
METRICS_TOKEN = env_secret("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
for _network in METRICS_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as exc:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {_network!r} is not a network: {exc}") from exc

# Embedded (`make run`): a newcomer's terminal shows the URL, the logins and real problems (warnings, errors) only
LOG_LEVEL = env_choice("LOG_LEVEL", ("DEBUG", "INFO", "WARNING", "ERROR"), "WARNING" if EMBEDDED else "INFO")
LOG_FORMAT = env_choice("LOG_FORMAT", ("text", "json"), "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "volcanoweb.core.logging.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Django's own console handler (DEBUG only) printed every request line a second time, bare: naming the
        # logger here drops it, and its lines reach the console above once, formatted
        "django": {"level": "INFO"},
        "django.db.backends": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        "celery": {"level": "INFO"},
        # Embedded (`make run`): tasks run in line, so Celery's "Task ... succeeded in ...: {result}" line per task
        # and kombu's "No hostname was supplied" about the in-memory broker are noise; so is "Not Found: /path" or
        # "Forbidden: /path" for each 4xx answer (the browser shows the product's page saying so); real problems
        # (server errors, django.security's warnings) still show.
        **(
            {
                "celery.app.trace": {"level": "WARNING"},
                "kombu.connection": {"level": "ERROR"},
                "django.request": {"level": "ERROR"},
            }
            if CELERY_TASK_ALWAYS_EAGER
            else {}
        ),
    },
}

if (BASE_DIR / "volcanoweb" / "local_settings.py").exists():
    from volcanoweb.local_settings import *  # noqa: F403 - optional, gitignored operator overrides
