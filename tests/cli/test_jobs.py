"""vcctl job run|list|view|suspend|resume|delete, with bad input and another tenant's jobs."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Vcctl, manifest, run
from tests.volcanoweb.builders import job_manifest
from volcanoweb.jobs.models import Command, Job

pytestmark = pytest.mark.django_db(transaction=True)


def test_job_lifecycle(vc: Vcctl) -> None:
    quick = vc.ok(
        "job", "run", "-N", "hello", "-n", "team-a", "-i", "nginx", "-r", "3", "-m", "2",
        "-R", "cpu=500m,memory=64Mi", "-L", "cpu=1,memory=128Mi", "-q", "default",
    )  # fmt: skip
    assert quick.out.strip() == "run job hello successfully"
    job = Job.objects.get(namespace="team-a", name="hello")
    task = job.spec["tasks"][0]
    assert (job.min_available, task["replicas"], task["name"]) == (2, 3, "default0")
    container = task["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx"
    assert container["name"] == "hello"
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "64Mi"},
        "limits": {"cpu": "1", "memory": "128Mi"},
    }
    assert task["template"]["metadata"]["labels"] == {"job.volcano.sh": "hello"}
    # From a file; the namespace defaults to the caller's (alice: team-a).
    path = vc.write("train.yaml", manifest(job_manifest("train")))
    assert vc.ok("job", "run", "-f", path).out.strip() == "run job train successfully"

    table, everywhere, filtered, as_json, as_yaml = vc.batch(
        run("job", "list"),
        run("job", "list", "--all-namespaces", user="root"),
        run("job", "list", "-n", "team-a", "--selector", "hel", "--queue", "default"),
        run("job", "list", "-o", "json"),
        run("job", "list", "-o", "yaml"),
    )
    header = table.lines()[0].split()
    assert header == [
        "Name", "Creation", "Phase", "JobType", "Replicas", "Min",
        "Pending", "Running", "Succeeded", "Failed", "Unknown", "RetryCount",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in table.lines()[1:]}
    assert set(rows) == {"hello", "train"}
    assert rows["hello"][3:6] == ["Batch", "3", "2"]
    assert everywhere.lines()[0].split()[0] == "Namespace", everywhere
    assert "team-a" in everywhere.out, everywhere
    assert [line.split()[0] for line in filtered.lines()[1:]] == ["hello"], filtered
    assert {j["metadata"]["name"] for j in as_json.json()["items"]} == {"hello", "train"}
    assert as_yaml.yaml()["kind"] == "JobList"

    view, view_json, other_tenant, missing_name, missing_job = vc.batch(
        run("job", "view", "-N", "hello"),
        run("job", "view", "-N", "hello", "-o", "json"),
        run("job", "view", "-N", "hello", "-n", "team-a", user="charlie"),
        run("job", "view"),
        run("job", "view", "-N", "nope"),
    )
    assert view.code == 0
    assert "Name:  hello" in view.out
    assert "Min Available:  2" in view.out
    assert "Events:" in view.out
    assert view_json.json()["spec"]["minAvailable"] == 2
    other_tenant.expect(1, "team-a")
    assert missing_name.code == 2
    assert "job name (specified by --name or -N) is mandatory to view a particular job" in missing_name.err
    assert missing_job.code == 1
    assert "nope" in missing_job.err
    assert "not found" in missing_job.err

    assert vc.ok("job", "suspend", "-N", "hello").out.strip() == "suspend job hello successfully"
    assert vc.ok("job", "resume", "-N", "hello", "-n", "team-a").out.strip() == "resume job hello successfully"
    actions = list(Command.objects.filter(target_name="hello").order_by("id").values_list("action", flat=True))
    assert actions == ["AbortJob", "ResumeJob"]

    assert vc.ok("job", "delete", "-N", "train").out.strip() == "delete job train successfully"
    gone, blank = vc.batch(run("job", "delete", "-N", "train"), run("job", "delete"))
    assert gone.code == 1
    assert "not found" in gone.err
    assert blank.code == 2
    assert "job name is mandatory to delete a particular job" in blank.err


def test_job_bad_input_and_permissions(vc: Vcctl) -> None:
    text = vc.write("notes.txt", "x")
    invalid = vc.write("invalid.yaml", manifest(job_manifest("bad", minAvailable=5)))
    two = vc.write("two.yaml", manifest(job_manifest("a"), job_manifest("b")))
    broken = vc.write("broken.yml", "kind: Job\nmetadata: [\n")
    results = vc.batch(
        run("job", "run"),
        run("job", "run", "-f", text),
        run("job", "run", "-f", "absent.yaml"),
        run("job", "run", "-f", invalid),
        run("job", "run", "-f", two),
        run("job", "run", "-f", broken),
        run("job", "run", "-N", "x", "-R", "cpu"),
        run("job", "run", "-N", "x", "--replicas", "many"),
        run("job", "run", "-N", "x", "-n", "team-a", user="victor"),
        run("job", "run", "-N", "x", "-n", "team-a", user="charlie"),
        run("job", "suspend", "-N", "x", "-n", "team-b"),
    )
    blank, not_yaml, absent, bad_min, several, malformed, bad_requests, bad_int, viewer, stranger, other_ns = results
    for result in results:
        assert "Traceback" not in result.err, result
    assert blank.code == 2
    assert "job name cannot be left blank" in blank.err
    assert not_yaml.code == 2
    assert "only support yaml file" in not_yaml.err
    assert absent.code == 2
    assert "absent.yaml does not exist" in absent.err
    bad_min.expect(2, "minAvailable")  # the server's 400 names the field
    assert several.code == 2
    assert "exactly one Job" in several.err
    assert malformed.code == 2
    assert "not valid YAML" in malformed.err
    assert "line" in malformed.err
    assert bad_requests.code == 2
    assert "--requests" in bad_requests.err
    assert bad_int.code == 2
    assert "invalid int value" in bad_int.err
    viewer.expect(1, "error: ")
    stranger.expect(1, "team-a")
    other_ns.expect(1, "error: ")
    assert not Job.objects.exists()
