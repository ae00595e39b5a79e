"""vcctl apply (multi-document, dry run, stdin), simulate (what-if), sim fault injection, node and pod lists."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Vcctl, manifest, run
from tests.volcanoweb.builders import job_manifest, queue_manifest, task
from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Job, Pod
from volcanoweb.queues.models import Queue

pytestmark = pytest.mark.django_db(transaction=True)


def test_apply(vc: Vcctl) -> None:
    text = manifest(queue_manifest("batch", allowed=("team-a",)), job_manifest("etl", queue="batch"))
    path = vc.write("stack.yaml", text)
    dry = vc.ok("apply", "-f", path, "--dry-run", user="root", env={"VOLCANOWEB_NAMESPACE": "team-a"})
    assert dry.lines() == [
        "queue.scheduling.volcano.sh/batch created (dry run)",
        "job.batch.volcano.sh/etl created (dry run)",
    ]
    assert not Queue.objects.filter(name="batch").exists()
    assert not Job.objects.exists()
    applied = vc.ok("apply", "-f", "-", "-n", "team-a", stdin=text, user="root")
    assert applied.lines() == ["queue.scheduling.volcano.sh/batch created", "job.batch.volcano.sh/etl created"]
    assert Job.objects.get(name="etl").namespace == "team-a"
    again = vc.ok("apply", "-f", path, "-n", "team-a", "-o", "json", user="root").json()
    assert [item["action"] for item in again["items"]] == ["unchanged", "unchanged"]

    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    results = vc.batch(
        run("apply", "-f", vc.write("bad.yaml", manifest(job_manifest("x", tasks=[task(replicas=-1)])))),
        run("apply", "-f", vc.write("deploy.yaml", manifest(deployment))),
        run("apply", "-f", vc.write("broken.yaml", "a: [1,\n")),
        run("apply", "-f", "missing.yaml"),
        run("apply", "-f", vc.write("list.yaml", "- 1\n- 2\n")),
        run("apply", "-f", path, "-n", "team-b", user="charlie"),
        run("apply"),
    )
    invalid, unsupported, malformed, missing, not_object, forbidden, no_file = results
    invalid.expect(2, "spec.tasks[0].replicas")
    unsupported.expect(2, "Deployment", "Job")
    assert malformed.code == 2
    assert "not valid YAML" in malformed.err
    assert missing.code == 2
    assert "missing.yaml does not exist" in missing.err
    assert not_object.code == 2
    assert "not an object" in not_object.err
    forbidden.expect(1, "error: ")
    assert no_file.code == 2
    assert Job.objects.count() == 1


def test_simulate(vc: Vcctl) -> None:
    fits = job_manifest("small", tasks=[task("worker", 2, cpu="2", memory="1Gi")], minAvailable=2)
    huge = job_manifest("huge", tasks=[task("worker", 2, cpu="100", memory="1Gi")], minAvailable=2)
    report = vc.ok("simulate", "-f", vc.write("small.yaml", manifest(fits)))
    assert "Job team-a/small: admitted and scheduled" in report.out, report
    assert "small-worker-0" in report.out
    assert "cpu-" in report.out
    data = vc.ok("simulate", "-f", vc.write("both.yaml", manifest(fits, huge)), "-o", "json").json()
    by_name = {job["name"]: job for job in data["jobs"]}
    assert by_name["small"]["scheduled"]
    assert len(by_name["small"]["placements"]) == 2
    assert not by_name["huge"]["scheduled"]
    assert by_name["huge"]["placements"] == []
    assert by_name["huge"]["reason"]["message"], data
    text = vc.ok("simulate", "-f", str(vc.home / "both.yaml")).out
    assert "Job team-a/huge: NOT admitted" in text or "Job team-a/huge: admitted, not" in text
    assert "why not:" in text
    assert not Job.objects.exists()  # a what-if changes nothing
    bad = vc.fails(2, "simulate", "-f", vc.write("bad.yaml", manifest(job_manifest("x", minAvailable=9))))
    assert "minAvailable" in bad.err


def test_sim_node_and_pod_commands(vc: Vcctl) -> None:
    make_gang("g", 1, tenant=vc.cast.team_a)
    cluster_services.sync_from_backend()
    vc.backend.bind("team-a", "g-0", "cpu-1")
    cluster_services.sync_from_backend()

    failed = vc.ok("sim", "fail-node", "cpu-0", user="root")
    assert failed.out.strip() == "fail node cpu-0 successfully (NotReady)"
    nodes, pods, pods_json, tenant_admin, no_node, bad_code = vc.batch(
        run("node", "list"),
        run("pod", "list", "-n", "team-a"),
        run("pod", "list", "--all-namespaces", "-o", "json", user="root"),
        run("sim", "fail-node", "cpu-1"),
        run("sim", "recover-node", "cpu-9", user="root"),
        run("sim", "end-pod", "-n", "team-a", "g-0", "--exit-code", "300"),
    )
    rows = {line.split()[0]: line.split() for line in nodes.lines()[1:]}
    assert (rows["cpu-0"][1], rows["cpu-1"][1]) == ("NotReady", "Ready"), nodes
    assert pods.lines()[1].split()[:3] == ["g-0", "Running", "cpu-1"], pods
    assert [p["metadata"]["name"] for p in pods_json.json()["items"]] == ["g-0"]
    tenant_admin.expect(1, "error: ")
    assert no_node.code == 1
    assert "cpu-9" in no_node.err
    assert bad_code.code == 2
    assert "--exit-code" in bad_code.err
    assert "(Ready)" in vc.ok("sim", "recover-node", "cpu-0", user="root").out

    stranger = vc.fails(1, "sim", "end-pod", "-n", "team-a", "g-0", "--exit-code", "3", user="charlie")
    assert "g-0" in stranger.err or "team-a" in stranger.err
    # --restart-container: the pod's restartPolicy (Never here) decides, so the pod ends
    ended = vc.ok("sim", "end-pod", "-n", "team-a", "g-0", "--exit-code", "3", "--restart-container")
    assert ended.out.strip() == "end pod team-a/g-0 successfully (phase Failed, exit code 3)"
    assert Pod.objects.get(name="g-0").exit_code == 3


def test_apply_and_list_hypernodes(vc: Vcctl) -> None:
    """``vcctl apply`` takes HyperNodes (platform admins); ``vcctl hypernode list`` shows the tree's rows."""
    racks = [
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "rack1"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^cpu-[01]$"}}}]},
        },
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "spine"},
            "spec": {
                "tier": 2,
                "tierName": "spine",
                "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "rack1"}}}],
            },
        },
    ]
    applied = vc.ok("apply", "-f", vc.write("topology.yaml", manifest(*racks)), user="root")
    assert applied.lines() == [
        "hypernode.topology.volcano.sh/rack1 created",
        "hypernode.topology.volcano.sh/spine created",
    ]
    listed = vc.ok("hypernode", "list")
    assert [line.split() for line in listed.lines()[1:]] == [
        ["rack1", "1", "/^cpu-[01]$/"],
        ["spine", "2", "spine", "rack1"],
    ]
    vc.fails(1, "apply", "-f", vc.write("mine.yaml", manifest({**racks[0], "metadata": {"name": "rack9"}})))
