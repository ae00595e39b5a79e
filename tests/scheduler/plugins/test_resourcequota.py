"""The resourcequota plugin over ResourceQuota manifests: used, admitted-this-session, names."""

from __future__ import annotations

import pytest

from scheduler import parse_config, run_cycle
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests

CONF = parse_config('actions: "enqueue"\ntiers:\n- plugins: [{name: resourcequota}]\n')

QUOTA = """---
apiVersion: v1
kind: ResourceQuota
metadata: {name: team, namespace: ml}
spec: {hard: {cpu: "10", memory: 20Gi, requests.nvidia.com/gpu: "1"}}
status: {hard: {cpu: "10", memory: 20Gi, requests.nvidia.com/gpu: "1"}, used: {cpu: "4", memory: 1Gi}}
"""


def _group(name: str, cpu: str, ns: str = "ml", gpus: int = 0) -> str:
    extra = f", nvidia.com/gpu: {gpus}" if gpus else ""
    return f"""---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: {ns}}}
spec: {{minMember: 1, minResources: {{cpu: "{cpu}", memory: 1Gi{extra}}}}}
"""


def test_used_and_jobs_admitted_earlier_in_the_session_count() -> None:
    # 10 CPUs hard, 4 used: a (4) is admitted, then b (4) would make 12.
    snap = snapshot_from_manifests(load_manifests(QUOTA + _group("a", "4") + _group("b", "4")))
    assert snap.resource_quotas[0].used == {"cpu": 4000, "memory": 1024**3}
    result = run_cycle(snap, CONF)
    assert result.podgroups == {"ml/a": "Inqueue"}
    reason = result.unschedulable["ml/b"]
    assert reason.kind == "enqueue-rejected"
    assert "resource quota ml/team insufficient" in reason.message
    assert reason.numbers["exceeded"] == ["cpu"]


def test_other_namespaces_and_differently_named_resources_are_not_limited() -> None:
    # requests.nvidia.com/gpu is not the name minResources uses (nvidia.com/gpu), as Volcano's Mask.
    text = QUOTA + _group("big", "40", ns="web") + _group("gpu", "1", gpus=4)
    assert run_cycle(snapshot_from_manifests(load_manifests(text)), CONF).podgroups == {
        "web/big": "Inqueue",
        "ml/gpu": "Inqueue",
    }


def test_a_bad_quantity_names_the_field() -> None:
    with pytest.raises(ManifestError) as err:
        snapshot_from_manifests(load_manifests(QUOTA.replace('used: {cpu: "4"', 'used: {cpu: "4x"')))
    assert err.value.field == "status.used.cpu"
