"""Who writes the database: the services, the reconcilers, the simulated cluster's store (ADR 0015).

The check reads the source (no Django, no database): a model write is a ``.save(...)``, a ``.delete()``
without arguments, a call of ``execute_batch`` or ``copy_rows`` (``volcanoweb.core.batchsql``), or a
``create`` / ``bulk_create`` / ``update`` / ``delete`` / ``bulk_update`` /
``get_or_create`` / ``update_or_create`` call on a chain through ``.objects``. Such a call outside
:data:`WRITERS` fails the test; in the reconcilers, whose rows other writers also touch, a ``.save()``
must name its columns (``update_fields``) or be an insert (``force_insert``), unless its line says why
the whole row is safe (``# whole row: ...``). The detector reads names, not types: a write through a
queryset held in a variable is not seen, which is why the rule is also in CONTRIBUTING.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Modules that may write models. Every app's ``services.py``, or the modules of its ``services/`` package
#: (user-initiated changes: transaction, audit entry, live notification), is allowed by name; these are the
#: others, each with its reason.
WRITERS = {
    "volcanoweb/runtime/controllers/job.py": "the job controller's armed actions (timers)",
    "volcanoweb/runtime/controllers/job_actions.py": "the job controller's kills drop the job's PodGroup",
    "volcanoweb/runtime/controllers/job_base.py": "the job controller's record of a job",
    "volcanoweb/runtime/controllers/job_events.py": "the job controller's pod records, cluster-deleted pods, timers",
    "volcanoweb/runtime/controllers/job_pods.py": "the job controller's pod rows (created, deleted) and records",
    "volcanoweb/runtime/controllers/job_writes.py": "the job controller's batched job, task, record and pod rows",
    "volcanoweb/runtime/controllers/podgroup.py": "the podgroup controller's status writes",
    "volcanoweb/runtime/controllers/queue.py": "the queue controller's status writes",
    "volcanoweb/scheduling/cycles.py": "the scheduling cycle records its run",
    "volcanoweb/scheduling/lease.py": "the scheduling cycle's lease (claim and release)",
    "volcanoweb/scheduling/decisions.py": "the scheduling cycle applies its decisions",
    "volcanoweb/scheduling/intents.py": "the scheduling cycle's cluster calls settle their intents",
    "volcanoweb/workflows/controllers/cronjob.py": "the CronJob controller's status writes",
    "volcanoweb/workflows/controllers/jobflow.py": "the JobFlow and JobTemplate controllers' status writes",
    "volcanoweb/insights/recording.py": "observation rows (samples, inputs) and the run's record_ms",
    "volcanoweb/insights/timeline.py": "observation rows: the jobs' wait intervals and milestones",
    "volcanoweb/clusters/backends/simdb.py": "the simulated cluster's database store",
    "volcanoweb/queues/builtin.py": "the built-in root and default queues at start",
    "volcanoweb/feed/log.py": "compaction of the change log (its entries and head; the triggers write the rest)",
}
#: Reconcilers: rows they write are also written elsewhere, so a save names its columns.
RECONCILERS = {
    path for path in WRITERS if path not in ("volcanoweb/clusters/backends/simdb.py", "volcanoweb/feed/log.py")
}
QUERYSET_WRITES = {"create", "bulk_create", "update", "delete", "bulk_update", "get_or_create", "update_or_create"}
#: volcanoweb.core.batchsql's writers of plain SQL (the recording's hot path).
SQL_WRITES = {"execute_batch", "copy_rows"}


def _chain(node: ast.expr) -> list[str]:
    names: list[str] = []
    while isinstance(node, ast.Attribute | ast.Call):
        if isinstance(node, ast.Call):
            node = node.func
            continue
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
    return names[::-1]


def writes(source: str) -> list[tuple[int, str, bool]]:
    """(line, what, names its columns) for every model write the detector sees in ``source``."""
    found = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SQL_WRITES:
            found.append((node.lineno, node.func.id, True))
            continue
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        attr = node.func.attr
        keywords = {k.arg for k in node.keywords}
        if attr == "save":
            commit_false = any(
                k.arg == "commit" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.keywords
            )
            if commit_false:
                continue
            explained = "# whole row:" in lines[node.lineno - 1]
            found.append((node.lineno, "save", bool(keywords & {"update_fields", "force_insert"}) or explained))
        elif attr in QUERYSET_WRITES and "objects" in _chain(node.func)[:-1]:
            found.append((node.lineno, f"objects...{attr}", True))
        elif attr == "delete" and not node.args and not node.keywords:
            found.append((node.lineno, "delete", True))
    return found


def _modules() -> list[Path]:
    return [
        p
        for p in sorted((ROOT / "volcanoweb").rglob("*.py"))
        if "migrations" not in p.parts and "__pycache__" not in p.parts
    ]


def test_only_the_allowed_modules_write_models() -> None:
    outside = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if path.name == "services.py" or path.parent.name == "services" or rel in WRITERS:
            continue
        outside += [f"{rel}:{line} {what}" for line, what, _ in writes(path.read_text())]
    assert not outside, "model writes outside the services and reconcilers (ADR 0015):\n" + "\n".join(outside)


def test_reconcilers_name_the_columns_they_save() -> None:
    bare = []
    for rel in sorted(RECONCILERS):
        source = (ROOT / rel).read_text()
        bare += [f"{rel}:{line}" for line, what, named in writes(source) if what == "save" and not named]
    assert not bare, "save() without update_fields in a reconciler:\n" + "\n".join(bare)


def test_every_listed_writer_exists_and_writes() -> None:
    for rel in WRITERS:
        assert writes((ROOT / rel).read_text()), f"{rel} is listed as a writer but writes nothing: drop it"


def test_the_detector_sees_each_kind_of_write() -> None:
    sample = """
Job.objects.create(name="a")
Job.objects.filter(pk=1).update(phase="Running")
Pod.objects.filter(job=job).delete()
pod.save()
pod.save(update_fields=["phase"])
run.save()  # whole row: only the cycle writes runs
form.save(commit=False)
group.delete()
settings.update({"a": 1})
execute_batch([insert_statement(rows)])
copy_rows(TimelineEntry, columns, rows)
"""
    found = writes(sample)
    assert [(line, what) for line, what, _ in found] == [
        (2, "objects...create"),
        (3, "objects...update"),
        (4, "objects...delete"),
        (5, "save"),
        (6, "save"),
        (7, "save"),
        (9, "delete"),
        (11, "execute_batch"),
        (12, "copy_rows"),
    ]
    assert [named for line, what, named in found if what == "save"] == [False, True, True]
