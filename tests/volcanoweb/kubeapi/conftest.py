"""The official Kubernetes Python client against a live test server (plain HTTP: the client sends its token).

``official(user)`` returns a ``kubernetes.client.ApiClient`` for that user of the cast; the simulated cluster
is the in-memory one of the CLI tests (4 nodes), so pods get logs. Tests that use it are transactional.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.volcanoweb.clusters.helpers import make_sim
from tests.volcanoweb.conftest import Cast
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.tenancy.services import create_token

Official = Callable[[Any], client.ApiClient]


@pytest.fixture
def sim_backend() -> Iterator[Any]:
    """A synced in-memory simulated cluster (cpu-0..cpu-3) and its clock, restored afterwards."""
    ensure_builtin_queues()
    backend, clock = make_sim()
    previous = backend_module.set_backend(backend)
    cluster_services.sync_from_backend()
    yield backend, clock
    backend_module.set_backend(previous)


@pytest.fixture
def official(live_server: Any, cast: Cast, sim_backend: Any) -> Iterator[Official]:
    """Return ``official(user)``: an ApiClient of the official client for that user's new token."""
    made: list[client.ApiClient] = []

    def make(user: Any) -> client.ApiClient:
        configuration = client.Configuration(host=live_server.url)
        if user is not None:
            configuration.api_key = {"authorization": create_token(user, "kube-tests")[1]}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        api = client.ApiClient(configuration)
        made.append(api)
        return api

    yield make
    for api in made:
        api.close()
