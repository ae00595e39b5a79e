"""vcctl cronjob list|get|suspend|resume|run."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Vcctl, manifest
from tests.volcanoweb import builders
from tests.volcanoweb.builders import task
from volcanoweb.jobs.models import Job
from volcanoweb.workflows.models import CronJob

pytestmark = pytest.mark.django_db(transaction=True)

CRON = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "CronJob",
    "metadata": {"name": "nightly", "namespace": "team-a"},
    "spec": {
        "schedule": "0 2 * * *",
        "timeZone": "Europe/Riga",
        "jobTemplate": {"spec": {"queue": "qa", "tasks": [task()]}},
    },
}


def test_cronjob_commands(vc: Vcctl) -> None:
    builders.make_queue("qa", tenant="team-a")
    vc.ok("apply", "-f", vc.write("cron.yaml", manifest(CRON)))

    table = vc.ok("cronjob", "list", "-n", "team-a")
    assert table.lines()[0].split() == [
        "Name", "Namespace", "Schedule", "Timezone", "Suspend", "Active", "Last", "Schedule", "Age",
    ]  # fmt: skip
    assert table.lines()[1].split()[:5] == ["nightly", "team-a", "0", "2", "*"]
    assert "Europe/Riga" in table.lines()[1]
    assert "False" in table.lines()[1]

    assert vc.ok("cronjob", "suspend", "nightly", "-n", "team-a", user="bob").out.strip() == (
        "suspend cronjob nightly successfully"
    )
    assert CronJob.objects.get(name="nightly").suspend is True
    assert vc.ok("cronjob", "get", "-N", "nightly", "-n", "team-a", "-o", "json").json()["spec"]["suspend"] is True
    vc.ok("cronjob", "resume", "nightly", "-n", "team-a")
    assert CronJob.objects.get(name="nightly").suspend is False

    ran = vc.ok("cronjob", "run", "nightly", "-n", "team-a")
    job = Job.objects.get(controller_uid=CronJob.objects.get(name="nightly").uid)
    assert ran.out.strip() == f"job {job.name} created from cronjob nightly"
    shown = vc.ok("cronjob", "get", "nightly", "-n", "team-a")
    assert shown.lines()[1].split()[0] == "nightly"
    assert shown.lines()[3].split() == ["Job", "Phase", "Started", "Finished"]
    assert shown.lines()[4].split()[:2] == [job.name, job.phase]

    as_yaml = vc.ok("cronjob", "run", "nightly", "-n", "team-a", "-o", "yaml").yaml()
    assert as_yaml["kind"] == "Job"
    assert as_yaml["metadata"]["name"].startswith("nightly-manual-")
    assert Job.objects.count() == 2


def test_cronjob_errors(vc: Vcctl) -> None:
    builders.make_queue("qa", tenant="team-a")
    vc.ok("apply", "-f", vc.write("cron.yaml", manifest(CRON)))
    vc.fails(2, "cronjob", "run", "-n", "team-a")  # no name
    vc.fails(1, "cronjob", "run", "nightly", "-n", "team-a", user="victor")  # viewer: 403
    vc.fails(1, "cronjob", "suspend", "nightly", "-n", "team-a", user="charlie")  # other tenant: 403
    vc.fails(1, "cronjob", "get", "nope", "-n", "team-a")  # 404
    vc.fails(1, "cronjob", "resume", "nightly", "-n", "team-a", user=None)  # no token: 401
    assert Job.objects.count() == 0
    assert CronJob.objects.get(name="nightly").suspend is False
