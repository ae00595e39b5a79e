"""Dashboard test data: a team queue per tenant, jobs in each tenant, nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import Cast
from volcanoweb.clusters.models import Node
from volcanoweb.jobs.models import Job


@dataclass
class World:
    """Two tenants with one queue and one job each."""

    cast: Cast
    job_a: Job
    job_b: Job


def make_nodes(count: int = 3) -> None:
    """Create node rows (scheduler units: millicores, bytes)."""
    for i in range(count):
        Node.objects.create(
            name=f"node-{i}",
            allocatable={"cpu": 16000, "memory": 64 * 1024**3, "pods": 110, "nvidia.com/gpu": 4 if i == 0 else 0},
            capacity={"cpu": 16000, "memory": 64 * 1024**3, "pods": 110},
        )


@pytest.fixture
def world(cast: Cast) -> World:
    """Queues team-a-q (owned by team-a) and team-b-q (owned by team-b) with a job each, and 3 nodes."""
    builders.make_queue("team-a-q", tenant="team-a", weight=2, capability={"cpu": "32"})
    builders.make_queue("team-b-q", tenant="team-b", weight=1)
    job_a = builders.make_job("team-a", "train-a", queue="team-a-q")
    job_b = builders.make_job("team-b", "secret-b", queue="team-b-q")
    make_nodes()
    return World(cast=cast, job_a=job_a, job_b=job_b)


@pytest.fixture
def login() -> Any:
    """Return ``login(user)`` → a logged-in Django test client."""

    def make(user: Any) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make
