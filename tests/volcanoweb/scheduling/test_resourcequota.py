"""Namespace ResourceQuotas (``v1``): stored through the API (tenant admins only, strict fields), fed into
the scheduler's snapshot (used summed from the namespace's pods), enforced by the resourcequota plugin."""

from __future__ import annotations

from typing import Any

import yaml

from tests.volcanoweb.conftest import post_yaml
from tests.volcanoweb.scheduling.cycling import cycle_and_sync
from tests.volcanoweb.scheduling.test_fidelity_cycles import _phases, _submit
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Event, PodGroup, ResourceQuota
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.scheduling.snapshots import build_snapshot
from volcanoweb.tenancy.access import SYSTEM

URL = "/api/v1/namespaces/team-a/resourcequotas"


def quota(name: str = "compute", namespace: str = "team-a", **hard: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": hard or {"requests.cpu": "2", "pods": "10"}},
        }
    )


def test_a_tenant_admin_creates_lists_and_deletes_a_quota(client_for: Any, cast: Any) -> None:
    alice = client_for(cast.alice)
    created = post_yaml(alice, URL, quota())
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["kind"], body["apiVersion"]) == ("ResourceQuota", "v1")
    assert body["spec"]["hard"] == {"requests.cpu": "2", "pods": "10"}
    assert body["status"]["hard"] == {"requests.cpu": "2", "pods": "10"}
    listed = alice.get(URL).json()
    assert [item["metadata"]["name"] for item in listed["items"]] == ["compute"]
    assert client_for(cast.bob).get(f"{URL}/compute").status_code == 200  # members read it
    assert alice.delete(f"{URL}/compute").status_code == 200
    assert not ResourceQuota.objects.exists()


def test_only_tenant_admins_of_the_namespace_write_quotas(client_for: Any, cast: Any) -> None:
    bob = client_for(cast.bob)  # a member of team-a: may submit jobs, not set quotas
    refused = post_yaml(bob, URL, quota())
    assert refused.status_code == 403
    assert refused.json()["kind"] == "Status"
    assert 'cannot create resource "resourcequotas"' in refused.json()["message"]
    charlie = client_for(cast.charlie)  # admin of team-b only
    assert post_yaml(charlie, URL, quota()).status_code == 403
    assert client_for(cast.charlie).get(URL).status_code == 403  # not even readable across tenants
    assert client_for(None).get(URL).status_code in (401, 403)
    assert post_yaml(client_for(cast.alice), URL, quota()).status_code == 201
    assert client_for(cast.bob).delete(f"{URL}/compute").status_code == 403
    assert client_for(cast.victor).delete(f"{URL}/compute").status_code == 403
    assert ResourceQuota.objects.count() == 1
    # The cross-namespace list shows each caller only its tenants' quotas.
    assert client_for(cast.charlie).get("/api/v1/resourcequotas").json()["items"] == []


def test_bad_quotas_are_refused_naming_the_field(client_for: Any, cast: Any) -> None:
    alice = client_for(cast.alice)
    bad = post_yaml(alice, URL, quota(**{"requests.cpu": "two"}))
    assert bad.status_code == 400
    causes = bad.json()["details"]["causes"]
    assert causes[0]["field"] == "spec.hard[requests.cpu]"
    doc = yaml.safe_load(quota())
    doc["spec"]["hardd"] = {"cpu": "1"}
    unknown = post_yaml(alice, URL, yaml.safe_dump(doc))
    assert unknown.status_code == 400
    assert 'unknown field "spec.hardd"' in unknown.json()["message"]
    doc = yaml.safe_load(quota())
    doc["spec"]["scopes"] = ["BestEffort"]
    scoped = post_yaml(alice, URL, yaml.safe_dump(doc))
    assert scoped.json()["details"]["causes"][0]["field"] == "spec.scopes"
    assert not ResourceQuota.objects.exists()


def test_the_snapshot_carries_quotas_with_used_summed_from_pods(sim: Any, cast: Any, client_for: Any) -> None:
    cluster_services.sync_from_backend()
    assert post_yaml(client_for(cast.alice), URL, quota(**{"requests.cpu": "4", "memory": "8Gi"})).status_code == 201
    _submit("small", 2)  # 2 x 1 CPU, 1 GiB
    cycle_and_sync()
    both = quota("both", **{"cpu": "5", "requests.cpu": "3", "limits.memory": "1Gi"})
    assert post_yaml(client_for(cast.alice), URL, both).status_code == 201
    q, other = sorted(build_snapshot().snapshot.resource_quotas, key=lambda x: x.name != "compute")
    assert (other.name, other.hard, other.used) == ("both", {"cpu": 3000}, {"cpu": 2000})  # the lower; no limits
    assert (q.namespace, q.name) == ("team-a", "compute")
    # requests.cpu is the same limit as cpu (Kubernetes); the core gets it as cpu, the name in minResources.
    assert q.hard == {"cpu": 4000, "memory": 8 * 1024**3}
    assert q.used == {"cpu": 2000, "memory": 2 * 1024**3}


RQ_CONFIG = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: resourcequota
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


def test_a_job_over_its_namespace_quota_stays_pending_with_the_plugins_reason(
    sim: Any, cast: Any, client_for: Any
) -> None:
    scheduling_services.save_config(SYSTEM, RQ_CONFIG)
    cluster_services.sync_from_backend()
    assert post_yaml(client_for(cast.alice), URL, quota(**{"requests.cpu": "3", "limits.cpu": "1"})).status_code == 201
    _submit("fits", 2)  # minResources 2 CPUs: within the 3-CPU quota
    for _ in range(2):
        cycle_and_sync()
    _submit("over", 2)  # another 2 CPUs: 2 used + 2 > 3
    for _ in range(3):
        cycle_and_sync()
    assert _phases() == {"fits": "Running", "over": "Pending"}
    over = next(g for g in PodGroup.objects.all() if g.name.startswith("over-"))
    reason = over.status["unschedulableReason"]
    assert (reason["kind"], reason["plugin"]) == ("enqueue-rejected", "resourcequota")
    expected = "resource quota team-a/compute insufficient, requested: {cpu: 2}, used: {cpu: 2}, limited: {cpu: 3}"
    assert reason["message"] == expected
    assert Event.objects.filter(involved_name=over.name, reason="Unschedulable", message=expected).exists()

    # Deleting the quota lets the job in.
    assert client_for(cast.alice).delete(f"{URL}/compute").status_code == 200
    cycle_and_sync()
    assert _phases()["over"] in ("Inqueue", "Running")
