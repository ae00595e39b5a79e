"""KubernetesBackend over real HTTP (official client) against the kmock API double."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import kmock
import pytest
from kubernetes import client

from volcanoweb.clusters.backends.base import (
    GROUP_NAME_ANNOTATION,
    BackendEvent,
    Conflict,
    Container,
    EvictionBlocked,
    NodeInfo,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Unavailable,
    Volume,
    VolumeMount,
)
from volcanoweb.clusters.backends.grouping import group_pods
from volcanoweb.clusters.backends.kubernetes import (
    KubernetesBackend,
    node_from_k8s,
    pod_from_k8s,
    pod_to_k8s,
)

from .kmock_harness import KmockCluster

PODS = kmock.resource("v1/pods")


@pytest.fixture
def backend(kube: KmockCluster) -> Iterator[KubernetesBackend]:
    backend = KubernetesBackend(kube.configuration(), watch_timeout=30, request_timeout=2, backoff=(0.05, 0.3))
    try:
        yield backend
    finally:
        backend.close()  # stops the watch streams before the server goes


@pytest.fixture
def api(kube: KmockCluster) -> Iterator[client.CoreV1Api]:
    """A plain client playing the other actors (kubelet, operators)."""
    api_client = client.ApiClient(kube.configuration())
    yield client.CoreV1Api(api_client)
    api_client.close()


def make_node(api: client.CoreV1Api, name: str, ready: bool = True) -> None:
    api.create_node(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
            "status": {
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )


def make_spec(name: str, **annotations: str) -> PodSpec:
    return PodSpec(
        namespace="default",
        name=name,
        containers=[Container("main", "busybox", requests={"cpu": "500m", "memory": "1Gi"})],
        annotations=dict(annotations),
    )


def raw_pod(name: str, scheduler: str = "volcano", **annotations: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "spark", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def collect(
    backend: KubernetesBackend,
    done: Callable[[list[BackendEvent]], bool],
    timeout: float = 5.0,
) -> list[BackendEvent]:
    events: list[BackendEvent] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            events += backend.poll_events(timeout=0.1)
        except Unavailable:
            time.sleep(0.05)
        if done(events):
            return events
    raise AssertionError(f"timed out; got {[(e.kind, e.type, e.object.name) for e in events]}")


def pod_summary(events: list[BackendEvent]) -> list[tuple[str, str, str, str]]:
    return [
        (e.type, e.object.name, e.object.phase, e.object.node_name) for e in events if isinstance(e.object, PodInfo)
    ]


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


# ---------------------------------------------------------------- conversions


def test_pod_manifest_round_trip() -> None:
    spec = PodSpec(
        namespace="team-a",
        name="job-worker-0",
        containers=[
            Container(
                "worker",
                "pytorch:2",
                command=["python", "train.py"],
                env={"VC_TASK_INDEX": "0"},
                requests={"cpu": "2", "nvidia.com/gpu": "1"},
                limits={"cpu": "2", "memory": "8Gi"},
                volume_mounts=[VolumeMount("hosts", "/etc/volcano", read_only=True)],
            )
        ],
        labels={"volcano.sh/job-name": "job"},
        annotations={GROUP_NAME_ANNOTATION: "job-uid1"},
        volumes=[Volume("hosts", {"configMap": {"name": "job-svc"}})],
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        priority_class_name="high",
        owner=OwnerReference(kind="Job", name="job", uid="uid1"),
        hostname="job-worker-0",
        subdomain="job",
    )
    manifest = pod_to_k8s(spec)
    assert manifest["spec"]["schedulerName"] == "volcano"
    assert manifest["spec"]["containers"][0]["env"] == [{"name": "VC_TASK_INDEX", "value": "0"}]
    assert manifest["spec"]["volumes"] == [{"name": "hosts", "configMap": {"name": "job-svc"}}]
    assert manifest["metadata"]["ownerReferences"][0]["controller"] is True
    manifest["metadata"]["uid"] = "pod-uid"
    manifest["status"] = {
        "phase": "Failed",
        "containerStatuses": [{"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}],
    }
    info = pod_from_k8s(manifest)
    assert (info.phase, info.exit_code, info.reason) == ("Failed", 137, "OOMKilled")
    assert info.requests == {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}
    assert info.group_name == "job-uid1"
    assert info.owner is not None
    assert info.owner.uid == "uid1"
    assert info.priority_class_name == "high"
    assert info.restart_count == 0
    manifest["status"] = {
        "phase": "Running",
        "initContainerStatuses": [{"restartCount": 1}],
        "containerStatuses": [{"restartCount": 2, "state": {"running": {}}}, {"restartCount": 1}],
    }
    assert pod_from_k8s(manifest).restart_count == 4  # summed over init and app containers (TaskFailed)


def test_node_conversion_ready_condition() -> None:
    node = node_from_k8s(
        {
            "metadata": {"name": "n"},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
        }
    )
    assert (node.ready, node.unschedulable) == (False, True)
    assert node_from_k8s({"metadata": {"name": "bare"}}).ready is True


# ---------------------------------------------------------------- API calls


def test_create_bind_and_conflict(kube: KmockCluster, backend: KubernetesBackend, api: client.CoreV1Api) -> None:
    make_node(api, "n1")
    make_node(api, "n2", ready=False)
    nodes = backend.list_nodes()
    assert [(n.name, n.ready) for n in nodes] == [("n1", True), ("n2", False)]
    assert nodes[0].allocatable["cpu"] == "8"
    assert nodes[0].taints[0].key == "gpu"

    spec = make_spec("p1", **{GROUP_NAME_ANNOTATION: "pg1"})
    spec.owner = OwnerReference(kind="Job", name="job", uid="job-uid")
    created = backend.create_pod(spec)
    assert created.uid
    assert created.resource_version
    assert created.phase == "Pending"
    stored = kube.emu.objects[PODS, "default", "p1"]
    assert stored["spec"]["schedulerName"] == "volcano"
    assert stored["metadata"]["annotations"][GROUP_NAME_ANNOTATION] == "pg1"
    assert stored["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    with pytest.raises(Conflict):
        backend.create_pod(spec)

    backend.bind("default", "p1", "n1")
    assert kube.emu.objects[PODS, "default", "p1"]["spec"]["nodeName"] == "n1"
    assert backend.get_pod("default", "p1").node_name == "n1"
    with pytest.raises(Conflict):
        backend.bind("default", "p1", "n2")
    with pytest.raises(NotFound):
        backend.bind("default", "missing", "n1")
    with pytest.raises(NotFound):
        backend.get_pod("default", "missing")

    pod = backend.patch_pod_annotations("default", "p1", {"volcano.sh/x": "1"})
    assert pod.annotations == {GROUP_NAME_ANNOTATION: "pg1", "volcano.sh/x": "1"}
    assert backend.delete_pod("default", "p1") is True
    assert backend.delete_pod("default", "p1") is False


def test_eviction_api(kube: KmockCluster, backend: KubernetesBackend) -> None:
    backend.create_pod(make_spec("victim"))
    backend.create_pod(make_spec("protected"))
    kube.emu.eviction_blocked.add(("default", "protected"))
    backend.evict("default", "victim")
    assert [p.name for p in backend.list_pods()] == ["protected"]
    with pytest.raises(EvictionBlocked):
        backend.evict("default", "protected")
    with pytest.raises(NotFound):
        backend.evict("default", "victim")
    evictions = [r for r in list(kube.emu) if r.subresource == "eviction"]
    assert evictions[0].data["apiVersion"] == "policy/v1"


def test_cordon_and_uncordon_patch_the_nodes_spec(
    kube: KmockCluster, backend: KubernetesBackend, api: client.CoreV1Api
) -> None:
    """``cordon`` is kubectl's: a merge patch of ``spec.unschedulable``, seen by the next node list; the
    node's taints stay."""
    make_node(api, "n-cordon")
    backend.cordon("n-cordon")
    assert api.read_node("n-cordon").spec.unschedulable is True
    [node] = [n for n in backend.list_nodes() if n.name == "n-cordon"]
    assert node.unschedulable
    assert [t.key for t in node.taints] == ["gpu"]
    backend.cordon("n-cordon", False)
    assert not api.read_node("n-cordon").spec.unschedulable
    patches = [r for r in list(kube.emu) if str(r.method).upper().endswith("PATCH") and "n-cordon" in str(r.url)]
    assert patches
    assert patches[-1].data == {"spec": {"unschedulable": False}}
    with pytest.raises(NotFound):
        backend.cordon("no-such-node")


def test_pod_logs_through_the_official_client(kube: KmockCluster, backend: KubernetesBackend) -> None:
    backend.create_pod(make_spec("logged"))
    kube.emu.pod_logs[("default", "logged", "main", False)] = "one\ntwo\nthree\n"
    kube.emu.pod_logs[("default", "logged", "main", True)] = "crashed\n"
    assert backend.pod_log("default", "logged", container="main") == "one\ntwo\nthree\n"
    assert backend.pod_log("default", "logged", container="main", tail_lines=2) == "two\nthree\n"
    assert backend.pod_log("default", "logged", container="main", previous=True) == "crashed\n"
    assert list(backend.follow_pod_log("default", "logged", container="main", tail_lines=1)) == ["three"]
    requests = [r for r in list(kube.emu) if r.subresource == "log"]
    assert requests[-1].params.get("follow") in ("true", "True")
    with pytest.raises(NotFound):
        backend.pod_log("default", "missing")
    with pytest.raises(NotFound):  # no earlier instance: the API's 400 is a NotFound for callers
        backend.pod_log("default", "logged", container="other", previous=True)


def test_services_configmaps_secrets_are_idempotent(kube: KmockCluster, backend: KubernetesBackend) -> None:
    owner = OwnerReference(kind="Job", name="job", uid="job-uid")
    service = ServiceSpec("default", "job", selector={"volcano.sh/job-name": "job"}, owner=owner)
    assert backend.ensure_service(service) is True
    assert backend.ensure_service(service) is False
    stored = kube.emu.objects[kmock.resource("v1/services"), "default", "job"]
    assert stored["spec"]["clusterIP"] == "None"
    assert stored["metadata"]["ownerReferences"][0]["kind"] == "Job"

    assert backend.ensure_config_map("default", "job-svc", {"worker.host": "job-worker-0.job"})
    assert not backend.ensure_config_map("default", "job-svc", {})
    assert backend.ensure_secret("default", "job-ssh", {"id_rsa": "KEY"}, owner=owner)
    assert not backend.ensure_secret("default", "job-ssh", {"id_rsa": "OTHER"})
    secret = kube.emu.objects[kmock.resource("v1/secrets"), "default", "job-ssh"]
    assert base64.b64decode(secret["data"]["id_rsa"]) == b"KEY"

    assert backend.delete_service("default", "job") is True
    assert backend.delete_service("default", "job") is False
    assert backend.delete_config_map("default", "job-svc") is True
    assert backend.delete_secret("default", "job-ssh") is True
    assert backend.delete_secret("default", "job-ssh") is False


def test_volcano_pods_of_other_operators_are_listed_and_grouped(
    backend: KubernetesBackend, api: client.CoreV1Api
) -> None:
    ns = "spark"
    api.create_namespaced_pod(ns, raw_pod("driver", **{GROUP_NAME_ANNOTATION: "spark-pg"}))
    api.create_namespaced_pod(ns, raw_pod("exec-1", **{GROUP_NAME_ANNOTATION: "spark-pg"}))
    api.create_namespaced_pod(ns, raw_pod("bare"))
    api.create_namespaced_pod(ns, raw_pod("web", scheduler="default-scheduler"))

    pods = backend.list_pods(scheduler_name="volcano")
    assert [p.name for p in pods] == ["bare", "driver", "exec-1"]
    groups = group_pods(pods)
    bare = next(p for p in pods if p.name == "bare")
    assert sorted(groups) == [(ns, f"podgroup-{bare.uid}"), (ns, "spark-pg")]
    assert [p.name for p in groups[(ns, "spark-pg")]] == ["driver", "exec-1"]
    assert groups[(ns, "spark-pg")][0].requests == {"cpu": "1"}

    backend.patch_pod_annotations(ns, "bare", {GROUP_NAME_ANNOTATION: f"podgroup-{bare.uid}"})
    again = group_pods(backend.list_pods(scheduler_name="volcano", namespace=ns))
    assert [p.name for p in again[(ns, f"podgroup-{bare.uid}")]] == ["bare"]
    assert len(backend.list_pods()) == 4


def test_watch_reports_added_modified_deleted(backend: KubernetesBackend, api: client.CoreV1Api) -> None:
    make_node(api, "n1")
    assert backend.wait_synced()
    events = collect(backend, lambda ev: any(e.kind == "node" for e in ev))
    assert [(e.kind, e.type, e.object.name) for e in events] == [("node", "ADDED", "n1")]

    backend.create_pod(make_spec("p"))
    backend.bind("default", "p", "n1")
    api.patch_namespaced_pod_status(  # the kubelet reports the container was killed
        "p",
        "default",
        {
            "status": {
                "phase": "Failed",
                "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}],
            }
        },
        _preload_content=False,
    )
    backend.delete_pod("default", "p")
    events = collect(backend, lambda ev: any(e.type == "DELETED" for e in ev))
    assert pod_summary(events) == [
        ("ADDED", "p", "Pending", ""),
        ("MODIFIED", "p", "Pending", "n1"),
        ("MODIFIED", "p", "Failed", "n1"),
        ("DELETED", "p", "Failed", "n1"),
    ]
    assert events[2].object.exit_code == 137
    assert [p.name for p in backend.cached_pods()] == []


def test_watch_restarts_after_stream_end_without_relisting(kube: KmockCluster, api: client.CoreV1Api) -> None:
    backend = KubernetesBackend(kube.configuration(), watch_timeout=1, backoff=(0.05, 0.3))
    try:
        assert backend.wait_synced()
        pod_reflector = backend._reflectors["pod"]
        wait_for(lambda: pod_reflector.watches >= 2, timeout=4)  # timeoutSeconds ended one
        wait_for(lambda: kube.emu.open_watches == 2)
        kube.call(kube.emu.drop_watches)  # the server closes every stream
        wait_for(lambda: pod_reflector.watches >= 3 and kube.emu.open_watches == 2)
        api.create_namespaced_pod("default", raw_pod("after"))
        events = collect(backend, lambda ev: len(ev) >= 1)
        time.sleep(0.2)
        events += backend.poll_events()
        assert pod_summary(events) == [("ADDED", "after", "Pending", "")]
        assert pod_reflector.lists == 1
    finally:
        backend.close()


def test_watch_410_gone_relists_and_reports_missed_changes(
    kube: KmockCluster, backend: KubernetesBackend, api: client.CoreV1Api
) -> None:
    api.create_namespaced_pod("default", raw_pod("a"))
    api.create_namespaced_pod("default", raw_pod("b"))
    assert backend.wait_synced()
    collect(backend, lambda ev: len(ev) == 2)
    pod_reflector = backend._reflectors["pod"]
    wait_for(lambda: kube.emu.open_watches == 2)

    def lose_history() -> None:
        # A change the watch never delivers, then etcd compaction past the
        # client's resourceVersion, then the stream breaks.
        kube.emu.objects[PODS, "default", "b"].delete()
        kube.emu.compact()
        pod_reflector.resource_version = "1"
        kube.emu.drop_watches()

    kube.call(lose_history)
    events = collect(backend, lambda ev: any(e.type == "DELETED" for e in ev))
    assert pod_summary(events) == [("DELETED", "b", "Pending", "")]
    assert pod_reflector.lists == 2
    api.create_namespaced_pod("default", raw_pod("c"))
    events = collect(backend, lambda ev: len(ev) >= 1)
    assert pod_summary(events) == [("ADDED", "c", "Pending", "")]


def test_api_server_goes_away_and_comes_back(
    kube: KmockCluster, backend: KubernetesBackend, api: client.CoreV1Api
) -> None:
    make_node(api, "n1")
    api.create_namespaced_pod("default", raw_pod("a"))
    assert backend.wait_synced()
    collect(backend, lambda ev: len(ev) == 2)

    kube.stop_server()
    with pytest.raises(Unavailable):
        backend.create_pod(make_spec("during-outage"))
    with pytest.raises(Unavailable):
        backend.list_nodes()
    deadline = time.monotonic() + 5
    while True:  # the reflectors notice and report it, without dying
        try:
            assert backend.poll_events(timeout=0.1) == []
        except Unavailable:
            break
        assert time.monotonic() < deadline
    assert not backend.available
    kube.call(lambda: kube.emu.objects[PODS, "default", "a"].delete())  # missed while away

    kube.start_server()  # same port, same objects
    events = collect(backend, lambda ev: any(e.type == "DELETED" for e in ev))
    assert pod_summary(events) == [("DELETED", "a", "Pending", "")]
    wait_for(lambda: backend.available)
    backend.create_pod(make_spec("after-outage"))
    events = collect(backend, lambda ev: len(ev) >= 1)
    assert pod_summary(events) == [("ADDED", "after-outage", "Pending", "")]
    assert [n.name for n in backend.list_nodes()] == ["n1"]


def test_periodic_resync_relists(kube: KmockCluster, api: client.CoreV1Api) -> None:
    backend = KubernetesBackend(kube.configuration(), resync_period=0.5, watch_timeout=1)
    try:
        api.create_namespaced_pod("default", raw_pod("a"))
        assert backend.wait_synced()
        pod_reflector = backend._reflectors["pod"]
        kube.call(lambda: kube.emu.objects[PODS, "default", "a"].delete())  # silently
        events = collect(backend, lambda ev: any(e.type == "DELETED" for e in ev), timeout=5)
        assert pod_summary(events) == [("ADDED", "a", "Pending", ""), ("DELETED", "a", "Pending", "")]
        assert pod_reflector.lists >= 2
    finally:
        backend.close()


def test_kubeconfig_construction(kube: KmockCluster, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: kmock\n"
        f"clusters:\n- name: kmock\n  cluster:\n    server: {kube.url}\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: kmock\n  context:\n    cluster: kmock\n    user: u\n"
    )
    backend = KubernetesBackend(kubeconfig=str(kubeconfig))
    try:
        assert backend.list_nodes() == []
        assert isinstance(backend.list_nodes(), list)
        assert all(isinstance(n, NodeInfo) for n in backend.list_nodes())
    finally:
        backend.close()


def test_node_metrics_are_read_from_metrics_server(kube: KmockCluster, backend: KubernetesBackend) -> None:
    """metrics.k8s.io/v1beta1 NodeMetrics over HTTP through the client's CustomObjectsApi: cpu in millicores,
    memory in bytes, the sample's timestamp; an object naming no node is skipped."""
    assert backend.node_metrics() == []
    api_client = client.ApiClient(kube.configuration())
    custom = client.CustomObjectsApi(api_client)
    for name, cpu, memory in (("n2", "123456789n", "1024Ki"), ("n1", "2500m", "4Gi")):
        custom.create_cluster_custom_object(
            "metrics.k8s.io",
            "v1beta1",
            "nodes",
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "NodeMetrics",
                "metadata": {"name": name},
                "timestamp": "2026-12-03T12:00:00Z",
                "window": "20s",
                "usage": {"cpu": cpu, "memory": memory},
            },
        )
    api_client.close()
    got = backend.node_metrics()
    assert [(m.name, m.cpu, m.memory) for m in got] == [("n1", 2500, 4 * 2**30), ("n2", 124, 1024 * 1024)]
    assert got[0].time == 1796299200.0
    requests = [r for r in list(kube.emu) if "metrics.k8s.io" in str(r.url)]
    assert requests
