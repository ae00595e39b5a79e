"""End-to-end benchmark on the stack: REST API submission to bound pods, and WebSocket fan-out.

Starts ``manage.py runstack`` (ASGI server, Celery workers and beat, DB-backed sim cluster) on a fresh
PostgreSQL database ``volcanoweb_bench_<pid>`` and an empty Redis DB, then

* submits N single-pod jobs with ``POST /api/v1/apply`` from C concurrent clients (threads + httpx),
  timed from the first request to the last pod bound (polling the database), and checks that no job
  is lost or duplicated (jobs, pods, bound pods, sim pods);
* connects W WebSocket clients (session cookies of a tenant member and a platform admin) and measures
  the delivery latency of broadcasts published to the cluster group from this process.

Needs DATABASE_URL (PostgreSQL) and REDIS_URL (``scripts/with-services.sh`` provides both).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from volcanoweb.core import stageprof

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "bench"
logging.getLogger("httpx").setLevel(logging.WARNING)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


#: The name of every probe PriorityClass (the sockets note the first frame naming each).
PROBE_PREFIX = "bench-probe-"
#: PriorityClass rows the socket probes write in turn (each row's writes are PROBE_ROWS probe intervals apart).
PROBE_ROWS = 50


def _summary(values: list[float]) -> dict[str, Any]:
    ms = [v * 1000 for v in values]
    return {
        "count": len(ms),
        "Perc50": _pct(ms, 50),
        "Perc90": _pct(ms, 90),
        "Perc99": _pct(ms, 99),
        "max": max(ms) if ms else None,
        "mean": statistics.fmean(ms) if ms else None,
        "unit": "ms",
    }


def _pg_counters(db_name: str) -> dict[str, int]:
    """pg_stat_database's counters of the bench database (statistics are flushed by each backend at its
    transaction end, and by PostgreSQL every second or so: read after a short pause)."""
    import psycopg

    from bench import cpuprof

    time.sleep(1.0)
    with psycopg.connect(**_pg_dsn(), autocommit=True) as conn:
        return cpuprof.pg_counters(conn, db_name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _with_db(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _free_redis_db(url: str) -> str:
    """Return REDIS_URL pointing at an empty database number (the bench flushes it afterwards)."""
    import redis

    parts = urlsplit(url)
    for n in range(15, 0, -1):
        candidate = urlunsplit((parts.scheme, parts.netloc, f"/{n}", parts.query, parts.fragment))
        client = redis.Redis.from_url(candidate)
        if client.dbsize() == 0 and client.set(f"volcanoweb-bench-lock-{n}", os.getpid(), nx=True, ex=7200):
            return candidate
    raise SystemExit("no empty Redis database number found for the bench")


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def job_manifest(i: int, cpu: str, memory: str) -> dict[str, Any]:
    """A single-pod Volcano job, as a user would apply it."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"e2e-{i:06d}", "namespace": NAMESPACE},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox:1.36",
                                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                                }
                            ],
                            "restartPolicy": "Never",
                        }
                    },
                }
            ],
        },
    }


class Stack:
    """A fresh database + Redis DB, and ``manage.py runstack`` in its own process group."""

    def __init__(
        self,
        nodes: int,
        period: float,
        log_dir: Path,
        *,
        embedded: bool = False,
        controller_workers: int = 1,
        max_documents: int = 100,
        profile: bool = True,
        insights: bool = True,
    ) -> None:
        self.embedded = embedded
        self.port = _free_port()
        #: the stack's live processes (the dashboard's sockets; runstack's LIVE_PORT); embedded: the one port
        self.live_port = self.port if embedded else _free_port()
        self.log_dir = log_dir
        self.profile_dir = log_dir / "stageprof" if profile else None
        base = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_URL", "CHANNELS_", "CELERY_"))}
        if embedded:  # as `make run`: SQLite, in-memory channel layer, eager Celery, loops in the web process
            self.db_name = str(log_dir / "bench.sqlite3")
            self.database_url = f"sqlite:///{self.db_name}"
            self.redis_url = ""
            services: dict[str, str] = {"DATABASE_URL": self.database_url}
            os.environ.pop("REDIS_URL", None)
        else:
            base_db = os.environ.get("DATABASE_URL", "")
            base_redis = os.environ.get("REDIS_URL", "")
            if not base_db.startswith("postgres") or not base_redis:
                raise SystemExit("bench e2e needs DATABASE_URL (PostgreSQL) and REDIS_URL (scripts/with-services.sh)")
            self.db_name = f"volcanoweb_bench_{os.getpid()}"
            self.database_url = _with_db(base_db, self.db_name)
            self.redis_url = _free_redis_db(base_redis)
            services = {
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis_url,
                "CHANNELS_REDIS_URL": self.redis_url,
                "CELERY_BROKER_URL": self.redis_url,
                "CELERY_RESULT_BACKEND": self.redis_url,
            }
        self.env = {
            **base,
            **services,
            "CONTROLLER_WORKERS": str(controller_workers),
            "MAX_MANIFEST_DOCUMENTS": str(max(100, max_documents)),
            "MAX_MANIFEST_BYTES": str(max(1_048_576, max_documents * 2048)),
            **({stageprof.ENV: str(self.profile_dir)} if self.profile_dir else {}),
            "DEBUG": "false",
            "SECRET_KEY": "bench-only-" + os.urandom(16).hex(),
            "VAR_DIR": str(log_dir),
            "SCHEDULE_PERIOD": str(period),
            # Big enough for every pod; pods run for an hour of simulated time so nothing finishes mid-run.
            "SIM_NODE_POOL": f"cpu:{nodes}x64c256Gi",
            "SIM_DEFAULT_DURATION": "36000",
            "SIM_CLOCK_SPEED": "1",
            "PYTHONUNBUFFERED": "1",
            "INSIGHTS_RECORD": "true" if insights else "false",  # issue 19's recording, for A/B runs
            **({} if embedded else {"LIVE_PORT": str(self.live_port)}),
        }
        self.proc: subprocess.Popen[str] | None = None

    def setup_django(self) -> None:
        """Point this process's Django at the bench database, create and migrate it."""
        os.environ.update({k: self.env[k] for k in ("DATABASE_URL", "DEBUG", "SECRET_KEY", "VAR_DIR")})
        if self.redis_url:
            os.environ["REDIS_URL"] = self.redis_url
        os.environ.update({k: self.env[k] for k in ("SIM_NODE_POOL", "SIM_DEFAULT_DURATION", "SIM_CLOCK_SPEED")})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "volcanoweb.settings")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        from volcanoweb.core.dbsetup import ensure_database

        ensure_database()
        call_command("migrate", interactive=False, verbosity=0)

    def start(self) -> None:
        log = open(self.log_dir / "stack.log", "w")  # noqa: SIM115 - closed with the process
        command = (
            ["runembedded", "--no-seed", "--https-port", "0", "--port", str(self.port)]
            if self.embedded
            else ["runstack", "--port", str(self.port)]
        )
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        import httpx

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"runstack exited with {self.proc.returncode}; see {self.log_dir / 'stack.log'}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.3)
        raise SystemExit("the stack did not become ready within 120 s")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def drop(self) -> None:
        """Drop the bench database and flush the Redis DB."""
        from django.db import connections

        connections.close_all()
        if self.embedded:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    Path(self.db_name + suffix).unlink()
            return
        import redis

        with contextlib.suppress(Exception):
            redis.Redis.from_url(self.redis_url).flushdb()
        import psycopg
        from django.conf import settings

        cfg = settings.DATABASES["default"]
        with (
            contextlib.suppress(Exception),
            psycopg.connect(
                host=cfg.get("HOST") or "127.0.0.1",
                port=cfg.get("PORT") or 5432,
                user=cfg.get("USER") or None,
                password=cfg.get("PASSWORD") or None,
                dbname="postgres",
                autocommit=True,
            ) as conn,
        ):
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')


def make_users() -> dict[str, Any]:
    """A tenant with the bench namespace, a tenant admin, a member, a platform admin; a token for the admin."""
    from django.contrib.auth import get_user_model

    from volcanoweb.tenancy.models import Membership, Namespace, Role, Tenant
    from volcanoweb.tenancy.services import create_token

    user_model = get_user_model()
    tenant = Tenant.objects.create(name="bench", display_name="Bench")
    Namespace.objects.update_or_create(name=NAMESPACE, defaults={"tenant": tenant})
    owner = user_model.objects.create_user("bench-owner", password="bench-pw-123456")
    member = user_model.objects.create_user("bench-member", password="bench-pw-123456")
    admin = user_model.objects.create_user("bench-admin", password="bench-pw-123456")
    admin.is_superuser = admin.is_staff = True
    admin.save(update_fields=["is_superuser", "is_staff"])
    Membership.objects.create(user=owner, tenant=tenant, role=Role.TENANT_ADMIN)
    Membership.objects.create(user=member, tenant=tenant, role=Role.MEMBER)
    _, raw = create_token(owner, "bench")
    return {"token": raw, "ws_users": [member, admin]}


def counts() -> dict[str, int]:
    from django.db.models import Count

    from volcanoweb.clusters.models import SimPod
    from volcanoweb.jobs.models import Job, Pod

    pods = Pod.objects.filter(namespace=NAMESPACE)
    dup_pods = pods.values("job_id").annotate(n=Count("id")).filter(n__gt=1).count()
    return {
        "jobs": Job.objects.filter(namespace=NAMESPACE).count(),
        "pods": pods.count(),
        "bound_pods": pods.exclude(node_name="").count(),
        "jobs_with_several_pods": dup_pods,
        "sim_pods": SimPod.objects.filter(namespace=NAMESPACE).count(),
        "sim_pods_bound": SimPod.objects.filter(namespace=NAMESPACE).exclude(node_name="").count(),
    }


def submit(
    base: str,
    token: str,
    n: int,
    clients: int,
    cpu: str,
    memory: str,
    timeout: float,
    batch: int = 1,
    responded: dict[str, float] | None = None,
    via: str = "rest",
) -> dict[str, Any]:
    """Submit n jobs from ``clients`` threads, ``batch`` jobs per apply (a ``List``: all or nothing), through
    ``POST /api/v1/apply`` (``via`` rest) or the Kubernetes API's create (``kubeapi``: one job per request, as
    client-go tools submit); return latencies, statuses and start/end times."""
    path = "/api/v1/apply" if via == "rest" else f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"
    if via != "rest":
        batch = 1
    import httpx

    latencies: list[float] = []
    statuses: dict[str, int] = {}
    errors: list[str] = []
    lock = threading.Lock()
    next_i = iter(range(0, n, max(1, batch)))
    accepted = [0]  # jobs in applies answered 2xx
    responded = {} if responded is None else responded  # job key -> epoch seconds of its apply's 2xx answer

    def worker() -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        with httpx.Client(base_url=base, headers=headers, timeout=timeout) as client:
            while True:
                with lock:
                    i = next(next_i, None)
                if i is None:
                    return
                size = min(n, i + batch) - i
                if batch > 1:
                    items = [job_manifest(j, cpu, memory) for j in range(i, i + size)]
                    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
                else:
                    body = json.dumps(job_manifest(i, cpu, memory))
                t0 = time.perf_counter()
                try:
                    r = client.post(path, content=body)
                    code = str(r.status_code)
                    if r.status_code >= 300 and len(errors) < 20:
                        errors.append(f"{i}: {r.status_code} {r.text[:300]}")
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                    if len(errors) < 20:
                        errors.append(f"{i}: {exc!r}")
                dt = time.perf_counter() - t0
                answered = time.time()
                with lock:
                    latencies.append(dt)
                    statuses[code] = statuses.get(code, 0) + 1
                    if code.startswith("2"):
                        accepted[0] += size
                        for j in range(i, i + size):
                            responded[f"{NAMESPACE}/e2e-{j:06d}"] = answered

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    end = time.perf_counter()
    return {
        "start": start,
        "end": end,
        "latencies": latencies,
        "statuses": statuses,
        "errors": errors,
        "accepted": accepted[0],
    }


def wait_bound(n: int, deadline_s: float, progress: list[tuple[float, int]], t0: float) -> float | None:
    """Poll the database until n pods of the bench namespace are bound; return the time, or None."""
    from django.db import OperationalError, connection

    from volcanoweb.jobs.models import Pod

    deadline = time.perf_counter() + deadline_s
    last_print = 0.0
    while time.perf_counter() < deadline:
        try:
            bound = Pod.objects.filter(namespace=NAMESPACE).exclude(node_name="").count()
        except OperationalError:  # a shared server out of connections ("too many clients"): poll again
            connection.close()
            time.sleep(1.0)
            continue
        now = time.perf_counter()
        progress.append((round(now - t0, 2), bound))
        if now - last_print > 10:
            print(f"  e2e: {bound}/{n} pods bound at {now - t0:.1f} s  ({_uptime()})", file=sys.stderr)
            last_print = now
        if bound >= n:
            return now
        connection.close()
        time.sleep(0.25)
    return None


def websocket_fanout(
    stack: Stack,
    users: list[Any],
    clients: int,
    messages: int,
    interval: float,
    *,
    connected: threading.Event | None = None,
    until: threading.Event | None = None,
    responded: dict[str, float] | None = None,
    topics: list[list[str]] | None = None,
    processes: int = 4,
) -> dict[str, Any]:
    """Connect ``clients`` WebSockets (in ``processes`` child processes, ``bench.wsreaders``) and measure what they
    see: the delay of every change from its commit to its frame, of a probe published every ``interval`` (from
    this process, as a commit publishes it), and of each bench job from its API answer (``responded``: job key ->
    epoch seconds) to the first frame naming it.

    Without ``until``: ``messages`` probes every ``interval``. With it (fan-out during the run): sets
    ``connected`` once the clients are connected, then publishes until ``until`` is set. ``topics``: every
    client subscribes to these ([kind, id prefix] pairs), as a page does; default everything.
    """
    from django.test import Client

    from bench.wsreaders import Readers, probe_arrivals
    from volcanoweb.jobs.models import PriorityClass

    cookies = []
    written: list[tuple[str, int, float]] = []
    for user in users:
        c = Client()
        c.force_login(user)
        cookies.append(f"sessionid={c.cookies['sessionid'].value}")
    # A probe is a committed change of the log, which every socket reads (ADR 0024), of a kind every user may see:
    # the description of one of PROBE_ROWS PriorityClasses, in turn. Not a new class per probe: the scheduling
    # cycle's session cache starts afresh when the priority classes change (as the controllers re-read them), so
    # a class per probe made every cycle of the run open its session from scratch, a cost no user's page causes.
    rows = [f"{PROBE_PREFIX}{k}" for k in range(PROBE_ROWS)]
    PriorityClass.objects.bulk_create([PriorityClass(name=name, value=0) for name in rows])
    url = f"ws://127.0.0.1:{stack.live_port}/ws/live/"
    readers = Readers(url, stack.base, cookies, clients, processes, topics, PROBE_PREFIX)
    connected_count = readers.wait_connected()
    time.sleep(1.0)
    if connected is not None:
        connected.set()
    i = 0
    while (i < messages) if until is None else not until.is_set():
        # its commit time is when the write returned; its revision, the row's resourceVersion after it
        name = rows[i % PROBE_ROWS]
        PriorityClass.objects.filter(name=name).update(description=f"probe {i}")
        at = time.time()
        rev = PriorityClass.objects.filter(name=name).values_list("resource_version", flat=True).get()
        written.append((name, int(rev), at))
        i += 1
        time.sleep(interval)
    messages = i
    time.sleep(3.0)
    PriorityClass.objects.filter(name__startswith=PROBE_PREFIX).delete()
    readers.ask_stats()
    seen = readers.stop()  # each socket's stats answer follows every frame sent to it
    lat, superseded = [], 0
    for log in seen.clients:
        delays, later = probe_arrivals(log, written)
        lat += delays
        superseded += later
    counters = [log.counters for log in seen.clients]
    expected = len(seen.clients) * messages
    out: dict[str, Any] = {
        "clients": clients,
        "connected": connected_count,
        "reader_processes": len(readers.children),
        "connect_errors": seen.connect_errors,
        "subscribed_to": topics,
        "messages": messages,
        "interval_seconds": interval,
        "deliveries_expected": expected,
        "deliveries": len(lat),
        "deliveries_superseded": superseded,
        "delivery_latency": _summary(lat),
        "commit_to_frame": _summary([x for log in seen.clients for x in log.delays]),
        "frames": sum(c["frames"] for c in counters),
        "items": sum(c["items"] for c in counters),
        "markers": sum(c["markers"] for c in counters),
        "refresh_all": sum(c["refresh_all"] for c in counters),
        "closed_by_server": seen.closed,
        "other_messages_sample": seen.other[:20],
        "phase": "during the run (first request to last bind)" if until is not None else "after the run",
        "note": (
            "delivery_latency: a probe (a write to one of PROBE_ROWS PriorityClass rows, in turn) made every interval "
            "by the bench process, from its commit to the frame naming the row at that revision or a later one "
            "(deliveries_superseded: by a later one); "
            "commit_to_frame: per frame, now - t0 (the oldest commit in it); "
            "job_first_seen: API answer to the first frame naming the job, per client; "
            "the clients read in reader_processes processes of their own (bench/wsreaders.py)"
        ),
    }
    if responded:
        named = [
            log.first_seen[key] - at for log in seen.clients for key, at in responded.items() if key in log.first_seen
        ]
        out["job_first_seen"] = _summary(named)
        out["job_first_seen"]["not_named"] = len(seen.clients) * len(responded) - len(named)
    server = [log.stats for log in seen.clients if log.stats]
    if server:
        keys = ("changes", "merged", "collapsed", "refreshes", "frames", "items", "gaps")
        out["server_stats"] = {key: sum(int(s.get(key) or 0) for s in server) for key in keys}
        out["server_stats"]["clients_reporting"] = len(server)
        # the live process's own lags (every socket it serves; one process: LIVE_WORKERS=1), per bucket in seconds
        out["server_lags"] = next((s["process"] for s in server if isinstance(s.get("process"), dict)), None)
    return out


def _topics(spec: str | None) -> list[list[str]] | None:
    """``--ws-subscribe "job,pod:bench/e2e-0000"`` -> [["job", ""], ["pod", "bench/e2e-0000"]] (None: everything)."""
    if not spec:
        return None
    return [[part.partition(":")[0], part.partition(":")[2]] for part in spec.split(",") if part]


def _pg_dsn() -> dict[str, Any]:
    from django.conf import settings

    cfg = settings.DATABASES["default"]
    return {
        "host": cfg.get("HOST") or "127.0.0.1",
        "port": cfg.get("PORT") or 5432,
        "user": cfg.get("USER") or None,
        "password": cfg.get("PASSWORD") or None,
        "dbname": "postgres",
    }


def _cycle_summary(since: float) -> dict[str, Any]:
    """The stack's scheduling cycles during the run: how many, median and p90 durations (ms) by step."""
    from datetime import UTC, datetime

    from volcanoweb.insights.models import CycleInput
    from volcanoweb.scheduling.models import SchedulingRun

    # ``since`` is a perf_counter reading: the runs of the last (now - since) seconds
    start = datetime.now(UTC).timestamp() - (time.perf_counter() - since)
    runs = list(
        SchedulingRun.objects.filter(started_at__gte=datetime.fromtimestamp(start, UTC), status="succeeded").values(
            "duration_ms", "snapshot_ms", "core_ms", "apply_ms", "record_ms", "bind_ms", "binds"
        )
    )
    out: dict[str, Any] = {"cycles": len(runs), "binding_cycles": sum(1 for r in runs if r["binds"])}
    for key in ("duration_ms", "snapshot_ms", "core_ms", "apply_ms", "record_ms", "bind_ms"):
        values = sorted(r[key] or 0.0 for r in runs)
        if values:
            out[key] = {
                "median": round(statistics.median(values), 2),
                "p90": round(values[int(0.9 * (len(values) - 1))], 2),
            }
    out["cycle_inputs_recorded"] = CycleInput.objects.count()
    return out


def run(args: Any) -> dict[str, Any]:
    """Run the end-to-end benchmark and return its report section."""
    from bench import cpuprof

    n = args.jobs if not args.quick else min(args.jobs, 300)
    nodes = args.nodes or max(20, -(-n // 100))  # 100 pods per node at most (110 pod slots)
    batch = max(1, getattr(args, "apply_batch", 1))
    embedded = bool(getattr(args, "embedded", False))
    workers = max(1, getattr(args, "controller_workers", 1))
    ws_phase = getattr(args, "ws_phase", "during")
    tmp = Path(tempfile.mkdtemp(prefix="volcanoweb-bench-e2e-"))
    stack = Stack(
        nodes,
        args.period,
        tmp,
        embedded=embedded,
        controller_workers=workers,
        max_documents=batch,
        profile=not getattr(args, "no_profile", False),
        insights=not getattr(args, "no_insights", False),
    )
    stack.setup_django()
    ws_clients = 0 if embedded else args.ws_clients  # the in-memory layer is not reachable from the bench
    report: dict[str, Any] = {
        "status": "measured",
        "params": {
            "jobs": n,
            "clients": args.clients,
            "jobs_per_request": batch,
            "submitted_through": "POST /api/v1/apply"
            if getattr(args, "via", "rest") == "rest"
            else "Kubernetes API create",
            "group_commit_window_ms": float(os.environ.get("GROUP_COMMIT_WINDOW_MS") or 2.0),
            "sim_nodes": nodes,
            "node_shape": "64 CPU / 256 GiB / 110 pods",
            "pod_request": {"cpu": args.cpu, "memory": args.memory},
            "schedule_period_seconds": args.period,
            "database": stack.db_name,
            "redis": stack.redis_url,
            "mode": "embedded" if embedded else "stack",
            "controller_workers": None if embedded else workers,
            "stage_profile": stack.profile_dir is not None,
            "insights_recording": not getattr(args, "no_insights", False),
            "websocket_phase": ws_phase if ws_clients else None,
            "stack": (
                "manage.py runembedded: daphne, SQLite, in-memory channel layer, eager Celery, loops in-process"
                if embedded
                else f"manage.py runstack: {os.environ.get('WEB_SERVER') or 'uvicorn'}"
                f" (workers: {os.environ.get('WEB_WORKERS') or 2}) + {workers} x celery worker -Q celery (threads x4)"
                " + celery worker -Q periodic (threads x3) + beat, DEBUG=false"
            ),
        },
        "uptime_before": _uptime(),
    }
    try:
        users = make_users()
        stack.start()
        assert stack.proc is not None
        report["uptime_stack_up"] = _uptime()
        sub_result: dict[str, Any] = {}
        responded: dict[str, float] = {}
        progress: list[tuple[float, int]] = []
        ws_result: dict[str, Any] = {}
        ws_connected, ws_until = threading.Event(), threading.Event()
        ws_thread = None
        ws_topics = _topics(getattr(args, "ws_subscribe", None))
        kube_watchers: Any = None
        watch_since = 0
        if getattr(args, "kube_watchers", 0):
            from bench import watchers as kube_watch
            from volcanoweb.feed import log as feed_log

            watch_since = feed_log.head()[0]
            kube_watchers = kube_watch.start(
                stack.base, users["token"], NAMESPACE, args.kube_watchers, watch_since, args.watch_processes
            )
        if ws_clients and ws_phase == "during":

            def do_ws() -> None:
                ws_result.update(
                    websocket_fanout(
                        stack,
                        users["ws_users"],
                        ws_clients,
                        0,
                        args.ws_interval,
                        connected=ws_connected,
                        until=ws_until,
                        responded=responded,
                        topics=ws_topics,
                        processes=args.ws_processes,
                    )
                )

            ws_thread = threading.Thread(target=do_ws, daemon=True)
            ws_thread.start()
            ws_connected.wait(120)

        def do_submit() -> None:
            sub_result.update(
                submit(
                    stack.base,
                    users["token"],
                    n,
                    args.clients,
                    args.cpu,
                    args.memory,
                    300.0,
                    batch=batch,
                    responded=responded,
                    via=getattr(args, "via", "rest"),
                )
            )

        sampler = cpuprof.Sampler(stack.proc.pid, None if embedded else _pg_dsn(), stack.db_name)
        stages_before = cpuprof.read_stages(stack.profile_dir)
        pg_before = None if embedded else _pg_counters(stack.db_name)
        sampler.start()
        bench_cpu0 = time.process_time()
        t_sub = threading.Thread(target=do_submit)
        t0 = time.perf_counter()
        t_sub.start()
        t_sub.join()
        print(f"  e2e: submitted {n} jobs in {sub_result['end'] - t0:.1f} s", file=sys.stderr)
        accepted = int(sub_result["accepted"])  # refused applies (5xx, timeouts) are reported, not waited for
        t_bound = wait_bound(accepted, args.bind_timeout, progress, t0)
        ws_until.set()
        time.sleep(1.0)  # the stage files are written every 0.5 s
        stack_cpu, pg_cpu = sampler.stop()
        bench_cpu = time.process_time() - bench_cpu0
        stages_after = cpuprof.read_stages(stack.profile_dir)
        pg_after = None if embedded else _pg_counters(stack.db_name)
        final = counts()
        start = sub_result["start"]
        wall = (t_bound - start) if t_bound else None
        submit_wall = sub_result["end"] - start
        ok_requests = sum(v for k, v in sub_result["statuses"].items() if k.startswith("2"))
        lost = max(0, accepted - final["jobs"])
        report.update(
            {
                "jobs_per_second": (accepted / wall) if wall else None,
                "seconds_first_request_to_last_bound": wall,
                "submission": {
                    "seconds": submit_wall,
                    "requests_per_second": len(sub_result["latencies"]) / submit_wall if submit_wall else None,
                    "jobs_per_second": n / submit_wall if submit_wall else None,
                    "statuses": sub_result["statuses"],
                    "errors_sample": sub_result["errors"],
                    "ok_requests": ok_requests,
                },
                "api_latency": _summary(sub_result["latencies"]),
                "counts": final,
                "lost_jobs": lost,
                "refused_jobs": n - accepted,
                "jobs_of_refused_applies_present": max(0, final["jobs"] - accepted),
                "duplicated": final["jobs_with_several_pods"] + max(0, final["pods"] - final["jobs"]),
                "unbound_pods": final["pods"] - final["bound_pods"],
                "all_bound": t_bound is not None,
                "progress": progress[:: max(1, len(progress) // 60)],
                "uptime_after_bind": _uptime(),
                "bench_process_cpu_ms_per_job": round(bench_cpu * 1000 / n, 2),
                "postgres_activity": sampler.waits(),
                "cpu_profile": cpuprof.breakdown(
                    n,
                    stack_cpu,
                    sampler.cmd,
                    None if embedded else pg_cpu,
                    cpuprof.stage_diff(stages_before, stages_after) if stack.profile_dir else None,
                    (time.perf_counter() - start),
                ),
            }
        )
        report["statements"] = cpuprof.statements(stages_before, stages_after, sampler.cmd, n)
        if pg_before is not None and pg_after is not None:
            report["postgres_per_job"] = cpuprof.per_job(pg_before, pg_after, n)  # transactions, rows
        report["scheduling_cycles"] = _cycle_summary(start)
        if kube_watchers is not None:
            from bench import watchers as kube_watch

            report["kube_watchers"] = kube_watch.check(kube_watchers, NAMESPACE, watch_since)
        report["ok"] = bool(t_bound) and lost == 0 and report["duplicated"] == 0 and final["pods"] == n == accepted
        if ws_thread is not None:
            ws_thread.join(30)
            report["websocket"] = ws_result
        elif ws_clients:
            report["websocket"] = websocket_fanout(
                stack,
                users["ws_users"],
                ws_clients,
                args.ws_messages,
                args.ws_interval,
                topics=ws_topics,
                processes=args.ws_processes,
            )
            report["uptime_after_ws"] = _uptime()
    finally:
        stack.stop()
        report["stack_log"] = str(tmp / "stack.log")
        if not args.keep_db:
            stack.drop()
    return report
