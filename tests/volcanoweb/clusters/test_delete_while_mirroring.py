"""Deleting a job never deadlocks with the cluster mirror writing its pods (PostgreSQL).

Found by the browser suite (tests/browser/test_deleted_object.py): a user deleted a JobFlow while the embedded
server's sync mirrored its step job's pods. The mirror locks the pods it writes in id order
(``clusters.services``); the job's delete removed its pods with one ``DELETE ... WHERE job_id = ...``, which
locks them in the order it finds them on disk. A pod updated since it was created lies after a later one, so the
delete held the later pod and waited for the earlier, which the mirror held while it waited for the later one:
deadlock, and the user's delete failed. The delete now locks the job's pods in id order first.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from tests.volcanoweb import builders
from tests.volcanoweb.feed.test_commit_deadlock import _wait_until_a_backend_waits_for_a_lock
from volcanoweb.jobs.models import Job, Pod
from volcanoweb.queues.builtin import ensure_builtin_queues

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql_only]


def test_deleting_a_job_never_deadlocks_with_the_mirror_locking_its_pods_in_id_order(cast) -> None:
    from volcanoweb.jobs import services as job_services
    from volcanoweb.tenancy.access import SYSTEM

    ensure_builtin_queues()  # the flush between transactional tests removed them
    job = builders.make_job("team-a", "train")
    first, second = (
        Pod.objects.create(namespace="team-a", name=f"train-w-{i}", job=job, tenant=job.tenant, task_name="w", index=i)
        for i in range(2)
    )
    Pod.objects.filter(pk=first.pk).update(phase="Running")  # a new tuple, on disk after the second pod's
    mirror_holds_first, delete_waits = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def mirror() -> None:
        try:
            with transaction.atomic():
                list(Pod.objects.select_for_update().filter(pk=first.pk))
                mirror_holds_first.set()
                delete_waits.wait(10)
                list(Pod.objects.select_for_update().filter(pk=second.pk))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def user() -> None:
        try:
            mirror_holds_first.wait(10)
            job_services.delete_job(SYSTEM, "team-a", "train")
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=mirror), threading.Thread(target=user)]
    for thread in threads:
        thread.start()
    assert _wait_until_a_backend_waits_for_a_lock()  # the delete waits for the first pod
    delete_waits.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert not Job.objects.filter(pk=job.pk).exists()
    assert not Pod.objects.filter(pk__in=[first.pk, second.pk]).exists()
