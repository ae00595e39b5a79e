"""Committers never deadlock over the change log's stamp (PostgreSQL).

The stamp writes each changed row's ``resource_version`` at commit, and PostgreSQL re-runs the foreign-key
check of a row its own transaction wrote, which takes ``FOR KEY SHARE`` on the parent row (ADR 0029). The case
that deadlocked under load: T1 changed a PodGroup (its job's key unchanged); T2 locked that Job and changed it
while T1 committed. Every row lock of the product is ``FOR NO KEY UPDATE`` (CONTRIBUTING, "Row locks"), which a
key-share lock passes: T1 commits while T2 still holds the Job.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from tests.volcanoweb import builders
from volcanoweb.feed import log
from volcanoweb.jobs.models import Job, PodGroup
from volcanoweb.queues.builtin import ensure_builtin_queues

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql_only]


def test_a_commit_never_waits_for_a_writer_holding_the_parent_row(cast) -> None:
    ensure_builtin_queues()  # the flush between transactional tests removed them
    job = builders.make_job("team-a", "train")
    group = PodGroup.objects.get(job=job)
    t1_wrote, t2_locked, t1_committed = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []
    seen: list[bool] = []

    def first() -> None:
        try:
            with transaction.atomic():
                PodGroup.objects.filter(pk=group.pk).update(annotations={"t": "1"})
                t1_wrote.set()
                t2_locked.wait(10)
            t1_committed.set()
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def second() -> None:
        try:
            t1_wrote.wait(10)
            with transaction.atomic():
                locked = Job.objects.select_for_update(no_key=True).get(pk=job.pk)
                Job.objects.filter(pk=locked.pk).update(annotations={"t": "2"})
                t2_locked.set()
                seen.append(t1_committed.wait(10))  # T1 commits while this transaction holds the job
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    before = log.head()[0]
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert seen == [True]
    changes = log.changes(before, upto=log.head(wait=True)[0])
    assert [(c.kind, c.data["annotations"]) for c in changes] == [("podgroups", {"t": "1"}), ("jobs", {"t": "2"})]
    group.refresh_from_db()
    job.refresh_from_db()
    assert (group.resource_version, job.resource_version) == (changes[0].rev, changes[1].rev)


def _wait_until_a_backend_waits_for_a_lock() -> bool:
    """Poll pg_stat_activity until a backend of the test database waits for a lock (10 s at most)."""
    for _ in range(200):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return True
        threading.Event().wait(0.05)
    return False


def test_deleting_a_job_never_deadlocks_with_the_commit_of_a_change_to_its_podgroup(cast) -> None:
    """The case that deadlocked in the browser suite: a controller changed a job's PodGroup (T2) while a user
    deleted the job (T1). T1 locked the Job, then its delete of the PodGroup waited for T2's row; T2's commit
    takes ``FOR KEY SHARE`` on the PodGroup's job (the stamp's foreign-key locks) and waited for T1's ``FOR
    UPDATE``. The delete now holds the Job ``FOR NO KEY UPDATE`` (which a key-share lock passes) until it
    deletes the row itself: T2 commits, then T1 deletes."""
    from volcanoweb.jobs import services as job_services
    from volcanoweb.tenancy.access import SYSTEM

    ensure_builtin_queues()
    job = builders.make_job("team-a", "train")
    group = PodGroup.objects.get(job=job)
    t2_wrote, t1_waits = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def controller() -> None:
        try:
            with transaction.atomic():
                PodGroup.objects.filter(pk=group.pk).update(annotations={"t": "2"})
                t2_wrote.set()
                t1_waits.wait(10)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def user() -> None:
        try:
            t2_wrote.wait(10)
            job_services.delete_job(SYSTEM, "team-a", "train")
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=controller), threading.Thread(target=user)]
    for thread in threads:
        thread.start()
    assert _wait_until_a_backend_waits_for_a_lock()  # T1 waits for T2's PodGroup row
    t1_waits.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert not Job.objects.filter(pk=job.pk).exists()
    assert not PodGroup.objects.filter(pk=group.pk).exists()
