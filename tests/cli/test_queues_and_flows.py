"""vcctl queue create|list|get|operate|delete and jobflow/jobtemplate create|list|get|describe|delete."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Vcctl, manifest, run
from tests.volcanoweb.builders import job_manifest
from volcanoweb.queues.models import Queue
from volcanoweb.workflows.models import JobFlow, JobTemplate

pytestmark = pytest.mark.django_db(transaction=True)


def test_queue_commands(vc: Vcctl) -> None:
    created = vc.ok(
        "queue", "create", "-n", "research", "-w", "3", "--capability", "cpu=16,memory=64Gi",
        "--guarantee", "cpu=2,memory=4Gi", "--tenants", "team-a", user="root",
    )  # fmt: skip
    assert created.out.strip() == "create queue research successfully"
    vc.ok("queue", "create", "--name", "gpu", "--parent", "research", "--state", "Closed", user="root")
    research = Queue.objects.get(name="research")
    assert research.weight == 3
    assert research.spec["capability"] == {"cpu": "16", "memory": "64Gi"}
    assert Queue.objects.get(name="gpu").state in ("Closed", "Closing")

    table, one, one_yaml, member, bad_capability, over = vc.batch(
        run("queue", "list", user="root"),
        run("queue", "get", "-n", "research"),
        run("queue", "get", "-n", "research", "-o", "yaml"),
        run("queue", "create", "-n", "mine", user="bob"),
        run("queue", "create", "-n", "x", "--capability", "cpu", user="root"),
        run("queue", "create", "-n", "big", "--parent", "research", "--guarantee", "cpu=100", user="root"),
    )
    assert table.lines()[0].split() == [
        "Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in table.lines()[1:]}
    assert rows["research"][:4] == ["research", "3", "Open", "root"]
    assert rows["gpu"][3] == "research"
    assert {"default", "root"} <= set(rows)
    assert one.code == 0, one
    assert one.lines()[1].split()[:3] == ["research", "3", "Open"], one
    assert one_yaml.yaml()["spec"]["weight"] == 3
    member.expect(1, "error: ")
    assert bad_capability.code == 2
    assert "--capability" in bad_capability.err
    over.expect(2, "guarantee")  # the server's 400, field named

    assert (
        "close queue research successfully"
        in vc.ok("queue", "operate", "-n", "research", "-a", "close", user="root").out
    )
    assert Queue.objects.get(name="research").state in ("Closed", "Closing")
    assert (
        "open queue research successfully" in vc.ok("queue", "operate", "-N", "research", "-a", "open", user="root").out
    )
    assert Queue.objects.get(name="research").state == "Open"
    vc.ok("queue", "operate", "-n", "research", "-a", "update", "-w", "7", user="root")
    assert Queue.objects.get(name="research").weight == 7

    no_action, bad_action, no_weight, no_name, missing = vc.batch(
        run("queue", "operate", "-n", "research"),
        run("queue", "operate", "-n", "research", "-a", "drain"),
        run("queue", "operate", "-n", "research", "-a", "update"),
        run("queue", "delete"),
        run("queue", "get", "-n", "nope"),
    )
    assert no_action.code == 2
    assert "action can not be null" in no_action.err
    assert bad_action.code == 2
    assert "action drain invalid, valid actions are open, close and update" in bad_action.err
    assert no_weight.code == 2
    assert "when update queue research, weight must be specified, the value must be greater than 0" in no_weight.err
    assert no_name.code == 2
    assert "queue name must be specified" in no_name.err
    assert missing.code == 1
    assert "nope" in missing.err

    vc.ok("queue", "delete", "-n", "gpu", user="root")
    assert not Queue.objects.filter(name="gpu").exists()


def test_jobtemplate_and_jobflow_commands(vc: Vcctl) -> None:
    templates = []
    for name in ("prepare", "train"):
        doc = job_manifest(name)
        doc["apiVersion"], doc["kind"] = "flow.volcano.sh/v1alpha1", "JobTemplate"
        templates.append(doc)
    flow = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "pipeline"},
        "spec": {
            "jobRetainPolicy": "retain",
            "flows": [{"name": "prepare"}, {"name": "train", "dependsOn": {"targets": ["prepare"]}}],
        },
    }
    cyclic = {
        **flow,
        "metadata": {"name": "loop"},
        "spec": {
            "flows": [{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}]
        },
    }
    created = vc.ok("jobtemplate", "create", "-f", vc.write("templates.yaml", manifest(*templates)))
    assert created.lines() == ["create jobtemplate prepare successfully", "create jobtemplate train successfully"]
    vc.ok("jobflow", "create", "-f", vc.write("flow.yaml", manifest(flow)))
    assert JobTemplate.objects.count() == 2
    assert JobFlow.objects.filter(name="pipeline").exists()

    results = vc.batch(
        run("jobtemplate", "list"),
        run("jobtemplate", "get", "-N", "train"),
        run("jobtemplate", "describe", "-N", "train"),
        run("jobflow", "list", "--all-namespaces"),
        run("jobflow", "get", "-N", "pipeline", "-o", "json"),
        run("jobflow", "describe", "-N", "pipeline", "-o", "json"),
        run("jobflow", "create", "-f", vc.write("loop.yaml", manifest(cyclic))),
        run("jobflow", "create", "-f", vc.write("wrong.yaml", manifest(templates[0]))),
        run("jobflow", "get", "-N", "pipeline", "-n", "team-a", user="charlie"),
        run("jobtemplate", "get"),
    )
    t_list, t_get, t_describe, f_list, f_get, f_describe, loop, wrong_kind, stranger, no_name = results
    assert t_list.lines()[0].split() == ["Name", "Namespace", "Age"]
    assert sorted(line.split()[0] for line in t_list.lines()[1:]) == ["prepare", "train"]
    assert t_get.lines()[1].split()[:2] == ["train", "team-a"]
    assert t_describe.yaml()["kind"] == "JobTemplate"
    assert f_list.lines()[0].split() == ["Name", "Namespace", "Phase", "Age"]
    assert "pipeline" in f_list.out
    assert f_get.json()["spec"]["flows"][1]["dependsOn"]["targets"] == ["prepare"]
    assert f_describe.json()["metadata"]["name"] == "pipeline"
    loop.expect(2, "spec.flows", "DAG")
    assert wrong_kind.code == 2
    assert "expected JobFlow" in wrong_kind.err
    assert stranger.code == 1
    assert stranger.err.startswith("error: ")
    assert no_name.code == 2

    assert vc.ok("jobflow", "delete", "-N", "pipeline").out.strip() == "delete jobflow pipeline successfully"
    deleted = vc.ok("jobtemplate", "delete", "-f", str(vc.home / "templates.yaml"))
    assert deleted.lines() == ["delete jobtemplate prepare successfully", "delete jobtemplate train successfully"]
    assert not JobTemplate.objects.exists()
    assert vc.fails(1, "jobflow", "delete", "-N", "pipeline").err.startswith("error: ")


def test_vcctl_cannot_raise_a_tenants_top_level_queue(vc: Vcctl) -> None:
    """Issue 28 through vcctl: alice (tenant admin of team-a) splits her top-level queue, never raises it."""
    from tests.volcanoweb import builders

    builders.make_queue("team-a-top", tenant="team-a", weight=4)
    refused = vc.fails(1, "queue", "operate", "-n", "team-a-top", "-a", "update", "-w", "1000", user="alice")
    assert "set by a platform admin" in refused.err
    assert Queue.objects.get(name="team-a-top").weight == 4
    vc.ok("queue", "create", "-n", "team-a-sub", "--parent", "team-a-top", "-w", "3", user="alice")
    too_heavy = vc.fails(1, "queue", "operate", "-n", "team-a-sub", "-a", "update", "-w", "5", user="alice")
    assert "more than the weight of team-a-top (4)" in too_heavy.err
    vc.ok("queue", "operate", "-n", "team-a-top", "-a", "update", "-w", "1000", user="root")
    assert Queue.objects.get(name="team-a-top").weight == 1000
