"""Dashboard page render benchmark (issue 6): every page's server time with 10,000 jobs in the database.

In-process Django test Client on a fresh PostgreSQL database ``volcanoweb_pages_<pid>`` (dropped
afterwards): the demo seed (tenants ml/data/dev, users, queues, cookbook jobs) and the node inventory
(the configured sim pool, mirrored as the runtime does), then N jobs bulk-created across the tenants'
namespaces with their tasks, PodGroups, pods (linked to their PodGroup, as the runtime links them) and
events, in a realistic phase mix.
Each page is fetched ``--repeat`` times per user (after one warm-up); the median server time and the
query count are reported, for a tenant admin (alice, ml) and a platform admin.
"""

from __future__ import annotations

import contextlib
import os
import random
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
PHASES = [("Running", 0.3), ("Pending", 0.2), ("Completed", 0.35), ("Failed", 0.1), ("Aborted", 0.05)]
POD_PHASE = {"Running": "Running", "Pending": "Pending", "Completed": "Succeeded", "Failed": "Failed",
             "Aborted": "Failed"}  # fmt: skip


def _setup(db_name: str) -> None:
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        raise SystemExit("bench pages needs DATABASE_URL (PostgreSQL); run via scripts/with-services.sh")
    parts = urlsplit(base)
    os.environ["DATABASE_URL"] = urlunsplit((parts.scheme, parts.netloc, "/" + db_name, parts.query, parts.fragment))
    os.environ.pop("REDIS_URL", None)  # embedded mode: eager Celery, in-memory channel layer
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "bench-pages-" + uuid.uuid4().hex)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "volcanoweb.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from volcanoweb.core.dbsetup import ensure_database

    ensure_database()
    call_command("migrate", interactive=False, verbosity=0)


def populate(n: int, seed: int) -> dict[str, Any]:
    """Seed the demo and bulk-create ``n`` jobs (tasks, PodGroups, pods, events) over the demo tenants."""
    from django.utils import timezone

    from volcanoweb.clusters.models import Node
    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Event, Job, Pod, PodGroup, Task
    from volcanoweb.tenancy.models import Namespace

    seed_demo()
    with contextlib.suppress(Exception):  # the node inventory, as the running system mirrors it
        from volcanoweb.clusters.services import resync_nodes

        resync_nodes()
    rng = random.Random(seed)
    templates = list(Job.objects.select_related("tenant").prefetch_related("tasks"))
    namespaces = {ns.name: ns.tenant_id for ns in Namespace.objects.all()}
    now = timezone.now()
    jobs = []
    for i in range(n):
        tpl = templates[i % len(templates)]
        phase = rng.choices([p for p, _ in PHASES], [w for _, w in PHASES])[0]
        created = now - timedelta(seconds=rng.uniform(0, 7 * 86400))
        spec = dict(tpl.spec)
        jobs.append(
            Job(
                name=f"bulk-{i:05d}",
                namespace=tpl.namespace,
                tenant_id=namespaces.get(tpl.namespace),
                queue_name=tpl.queue_name,
                phase=phase,
                min_available=tpl.min_available,
                max_retry=tpl.max_retry,
                spec=spec,
                status={"state": {"phase": phase}, "minAvailable": tpl.min_available, "running": 0},
                labels={"bench": "pages"},
                created_at=created,
                updated_at=created,
            )
        )
    Job.objects.bulk_create(jobs, batch_size=2000)
    jobs = list(Job.objects.filter(labels__bench="pages").order_by("pk"))
    tasks, groups, pods, events = [], [], [], []
    for k, job in enumerate(jobs):
        tpl = templates[k % len(templates)]
        for pos, t in enumerate(tpl.tasks.all()):
            tasks.append(
                Task(job=job, name=t.name, position=pos, replicas=min(t.replicas, 2), min_available=t.min_available,
                     template=t.template, policies=t.policies)
            )  # fmt: skip
        groups.append(
            PodGroup(name=f"{job.name}-{job.uid}", namespace=job.namespace, tenant_id=job.tenant_id, job=job,
                     queue_name=job.queue_name, min_member=job.min_available,
                     phase=job.phase if job.phase in ("Running", "Pending") else "Completed",
                     created_at=job.created_at)
        )  # fmt: skip
    Task.objects.bulk_create(tasks, batch_size=2000)
    PodGroup.objects.bulk_create(groups, batch_size=2000)  # PostgreSQL returns the primary keys
    for k, (job, group) in enumerate(zip(jobs, groups, strict=True)):
        pod_phase = POD_PHASE[job.phase]
        for r in range(2):  # linked to their PodGroup, as the runtime does (queue demand joins through it)
            pods.append(
                Pod(name=f"{job.name}-main-{r}", namespace=job.namespace, tenant_id=job.tenant_id, job=job,
                    podgroup=group, group_name=group.name, task_name="main", index=r, phase=pod_phase,
                    node_name="" if pod_phase == "Pending" else f"cpu-{(k + r) % 8}", scheduler_name="volcano",
                    requests={"cpu": 1000, "memory": 2 << 30, "pods": 1}, created_at=job.created_at)
            )  # fmt: skip
        for reason in ("Scheduled", "Started") if pod_phase != "Pending" else ("Unschedulable",):
            events.append(
                Event(namespace=job.namespace, tenant_id=job.tenant_id, involved_kind="Job",
                      involved_namespace=job.namespace, involved_name=job.name, involved_uid=job.uid,
                      type="Normal" if reason != "Unschedulable" else "Warning", reason=reason,
                      message=f"{reason} {job.name}", source="bench", first_timestamp=job.created_at,
                      last_timestamp=job.created_at)
            )  # fmt: skip
    Pod.objects.bulk_create(pods, batch_size=2000)
    Event.objects.bulk_create(events, batch_size=2000)
    with contextlib.suppress(Exception):
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("ANALYZE")
    return {
        "jobs": Job.objects.count(),
        "tasks": Task.objects.count(),
        "podgroups": PodGroup.objects.count(),
        "pods": Pod.objects.count(),
        "events": Event.objects.count(),
        "nodes": Node.objects.count(),
    }


def page_urls(user: Any) -> list[tuple[str, str]]:
    """(label, url) of every dashboard page, for what ``user`` can see."""
    from volcanoweb.jobs.models import Job
    from volcanoweb.queues.models import Queue

    job = Job.objects.filter(namespace="ml").order_by("pk").first()
    queue = Queue.objects.filter(name="ml-team").first() or Queue.objects.order_by("pk").first()
    urls = [
        ("overview", "/"),
        ("queues", "/queues/"),
        ("jobs", "/jobs/"),
        ("jobs filtered+sorted", "/jobs/?phase=Running&sort=-created&q=bulk"),
        ("jobs page 20", "/jobs/?page=20"),
        ("submit", "/submit/"),
        ("nodes", "/nodes/"),
        ("scheduler", "/scheduler/"),
        ("cronjobs", "/cronjobs/"),
        ("jobflows", "/jobflows/"),
        ("audit", "/audit/"),
    ]
    if job is not None:
        urls.append(("job detail", f"/jobs/{job.namespace}/{job.name}/"))
    if queue is not None:
        urls.append(("queue usage", f"/queues/{queue.name}/usage/"))
    return urls


def time_pages(username: str, repeat: int) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user = get_user_model().objects.get(username=username)
    client = Client()
    client.force_login(user)
    out = []
    for label, url in page_urls(user):
        client.get(url)  # warm-up
        times = []
        queries = 0
        status = 0
        size = 0
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as ctx:
                t0 = time.perf_counter()
                resp = client.get(url)
                times.append(time.perf_counter() - t0)
            queries, status, size = len(ctx.captured_queries), resp.status_code, len(resp.content)
        out.append(
            {
                "page": label,
                "url": url,
                "user": username,
                "status": status,
                "bytes": size,
                "queries": queries,
                "median_ms": round(statistics.median(times) * 1000, 1),
                "min_ms": round(min(times) * 1000, 1),
                "max_ms": round(max(times) * 1000, 1),
            }
        )
        print(f"  pages: {username:>6} {label:<22} {out[-1]['median_ms']:8.1f} ms  {queries:4d} queries  {status}",
              file=sys.stderr)  # fmt: skip
    return out


def run(args: Any) -> dict[str, Any]:
    """Populate, time every page for a tenant admin and a platform admin, drop the database."""
    db_name = f"volcanoweb_pages_{os.getpid()}"
    _setup(db_name)
    t0 = time.perf_counter()
    try:
        rows = populate(args.jobs, args.seed)
        populate_s = time.perf_counter() - t0
        uptime = os.getloadavg()
        results = [*time_pages("alice", args.repeat), *time_pages("admin", args.repeat)]
    finally:
        if not args.keep_db:
            _drop(db_name)
    worst = max((r["median_ms"] for r in results), default=None)
    return {
        "status": "measured",
        "params": {
            "jobs": args.jobs,
            "repeat": args.repeat,
            "seed": args.seed,
            "database": db_name,
            "users": {"alice": "tenant admin of ml", "admin": "platform admin"},
        },
        "rows": rows,
        "populate_seconds": round(populate_s, 1),
        "loadavg_before_timing": uptime,
        "loadavg_after": os.getloadavg(),
        "pages": results,
        "worst_median_ms": worst,
        "over_target": [f"{r['user']} {r['page']}" for r in results if r["median_ms"] >= 300],
        "ok": all(r["status"] == 200 for r in results),
    }


def _drop(db_name: str) -> None:
    import psycopg
    from django.conf import settings
    from django.db import connections

    connections.close_all()
    cfg = settings.DATABASES["default"]
    with contextlib.suppress(Exception), psycopg.connect(
        host=cfg.get("HOST") or "127.0.0.1", port=cfg.get("PORT") or 5432, user=cfg.get("USER") or None,
        password=cfg.get("PASSWORD") or None, dbname="postgres", autocommit=True,
    ) as conn:  # fmt: skip
        conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
