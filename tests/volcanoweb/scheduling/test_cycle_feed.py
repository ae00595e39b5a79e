"""A watch across the scheduling cycle's bulk update: every pod the cycle binds is one MODIFIED event with its
node, in revision order (the cycle writes the pods with one bulk statement; the log's trigger sees each row)."""

from __future__ import annotations

import json
from typing import Any

from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.scheduling import cycles
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle

PODS = 6
PODS_URL = "/api/v1/namespaces/team-a/pods"


def test_a_watch_sees_each_pod_the_cycles_bulk_update_binds(sim: Any, cast: Any, client_for: Any) -> None:
    cycles._memo.reset()
    cluster_services.sync_from_backend()
    make_gang("many", PODS, tenant=cast.team_a, cpu=100, memory=64 * 1024 * 1024)
    cluster_services.sync_from_backend()
    api = client_for(cast.alice, "token")
    listed = api.get(f"{PODS_URL}?resourceVersion=0").json()  # the Kubernetes list (the REST API shares the path)
    assert len(listed["items"]) == PODS
    assert not any(p["spec"].get("nodeName") for p in listed["items"])
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.binds == PODS
    rv = listed["metadata"]["resourceVersion"]
    response = api.get(f"{PODS_URL}?watch=1&timeoutSeconds=0&resourceVersion={rv}")
    events = [json.loads(line) for line in b"".join(response).decode().splitlines()]
    bound = {}
    for event in events:
        assert event["type"] == "MODIFIED", event["type"]
        pod = event["object"]
        if pod["spec"].get("nodeName"):
            bound.setdefault(pod["metadata"]["name"], pod["spec"]["nodeName"])
    assert len(bound) == PODS  # every pod's change, none merged into another's
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)
