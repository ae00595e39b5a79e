"""``python -m bench watch-idle``: web CPU per change with 0, 100 and 1,000 idle Kubernetes watches open.

The stack (``runstack``: uvicorn, Celery, PostgreSQL, Redis) serves N watches of jobs in a namespace nobody
writes; then K merge patches change one job of the bench namespace through the Kubernetes API. The web
processes' CPU during the patches, per change, should not grow with N: each process's tailer wakes only the
watches of the kind and namespace that changed (``volcanoweb/feed/tailer.py``). Every idle watch is then
checked to have received nothing but bookmarks.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import cpuprof
from bench.e2e import NAMESPACE, Stack, _pg_dsn, make_users

IDLE_NAMESPACE = "bench-idle"


class IdleWatches(threading.Thread):
    """N streams held open by one asyncio loop; counts the events each receives."""

    def __init__(self, base: str, token: str, n: int) -> None:
        super().__init__(daemon=True)
        self.base, self.token, self.n = base, token, n
        self.events = 0
        self.open = 0
        self.errors: list[str] = []
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping: asyncio.Event | None = None

    async def _one(self, client: Any) -> None:
        url = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{IDLE_NAMESPACE}/jobs?watch=1&resourceVersion=0"
        try:
            async with client.stream("GET", url, headers={"Authorization": f"Bearer {self.token}"}) as response:
                if response.status_code != 200:
                    self.errors.append(f"HTTP {response.status_code}")
                    return
                self.open += 1
                if self.open == self.n:
                    self.ready.set()
                async for line in response.aiter_lines():
                    if line and json.loads(line)["type"] != "BOOKMARK":
                        self.events += 1
        except Exception as error:
            if self.stopping is not None and not self.stopping.is_set():
                self.errors.append(repr(error))

    async def _main(self) -> None:
        import httpx

        self.stopping = asyncio.Event()
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=self.base, timeout=httpx.Timeout(30.0, read=None), limits=limits) as c:
            tasks = [asyncio.ensure_future(self._one(c)) for _ in range(self.n)]
            if not self.n:
                self.ready.set()
            await self.stopping.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def run(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self._main())

    def stop(self) -> None:
        if self.loop is not None and self.stopping is not None:
            self.loop.call_soon_threadsafe(self.stopping.set)
        self.join(30)


def _patch_many(base: str, token: str, changes: int) -> float:
    import httpx

    url = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs/idle-probe"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/merge-patch+json"}
    t0 = time.perf_counter()
    with httpx.Client(base_url=base, timeout=30) as client:
        for i in range(changes):
            body = json.dumps({"metadata": {"labels": {"probe": str(i)}}})
            response = client.patch(url, content=body, headers=headers)
            response.raise_for_status()
    return time.perf_counter() - t0


def run(args: Any) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="volcanoweb-bench-watchidle-"))
    stack = Stack(20, 1.0, tmp, profile=False, insights=False)
    stack.setup_django()
    counts = [int(x) for x in str(args.watches).split(",") if x.strip()]
    report: dict[str, Any] = {"status": "measured", "params": {"watches": counts, "changes": args.changes}}
    try:
        users = make_users()
        from volcanoweb.jobs import services as jobs
        from volcanoweb.tenancy.access import SYSTEM
        from volcanoweb.tenancy.models import Namespace, Tenant

        Namespace.objects.update_or_create(name=IDLE_NAMESPACE, defaults={"tenant": Tenant.objects.get(name="bench")})
        manifest = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "idle-probe", "namespace": NAMESPACE},
            "spec": {
                "minAvailable": 1,
                "tasks": [
                    {
                        "name": "t",
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                    }
                ],
            },
        }
        jobs.apply_job(SYSTEM, manifest)
        stack.start()
        assert stack.proc is not None
        rows = []
        for n in counts:
            watches = IdleWatches(stack.base, users["token"], n)
            watches.start()
            watches.ready.wait(300)
            time.sleep(2.0)
            sampler = cpuprof.Sampler(stack.proc.pid, _pg_dsn(), stack.db_name)
            sampler.start()
            seconds = _patch_many(stack.base, users["token"], args.changes)
            time.sleep(1.0)
            stack_cpu, pg_cpu = sampler.stop()
            web = sum(cpu for pid, cpu in stack_cpu.items() if cpuprof.role(sampler.cmd.get(pid, "")) == "web")
            rows.append(
                {
                    "idle_watches": n,
                    "opened": watches.open,
                    "web_cpu_ms_per_change": round(web * 1000 / args.changes, 3),
                    "postgres_cpu_ms_per_change": round((pg_cpu or 0.0) * 1000 / args.changes, 3),
                    "patch_ms_mean": round(seconds * 1000 / args.changes, 2),
                    "events_at_idle_watches": watches.events,
                    "errors": watches.errors[:3],
                }
            )
            watches.stop()
        report["rows"] = rows
        base = rows[0]["web_cpu_ms_per_change"] if rows else None
        report["web_cpu_ratio_max_to_none"] = round(rows[-1]["web_cpu_ms_per_change"] / base, 3) if base else None
        report["ok"] = all(r["opened"] == r["idle_watches"] and r["events_at_idle_watches"] == 0 for r in rows)
    finally:
        stack.stop()
        stack.drop()
    return report
