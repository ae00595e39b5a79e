"""A Volcano Job's task partition policy reaches its PodGroup as a sub-group policy, network topology included
(Volcano's job controller copies it: getSubGroupPolicy), so the scheduler keeps each partition inside its tier."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Job, PodGroup
from volcanoweb.runtime import services as runtime

pytestmark = pytest.mark.django_db


def test_a_partition_s_network_topology_reaches_the_podgroup(cast: Any) -> None:
    task = builders.task("worker", 4)
    task["partitionPolicy"] = {
        "totalPartitions": 2,
        "partitionSize": 2,
        "minPartitions": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    job = builders.make_job("team-a", "ring", tasks=[task])
    runtime.on_job_submitted(job.pk)
    spec = PodGroup.objects.get(job=Job.objects.get(pk=job.pk)).spec
    assert spec["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": 2,
            "minSubGroups": 2,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        }
    ]
