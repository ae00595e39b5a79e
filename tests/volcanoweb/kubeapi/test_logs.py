"""``pods/{name}/log`` (``kubectl logs``, ``CoreV1Api.read_namespaced_pod_log``) from the simulated cluster:
tail, container, previous, since, timestamps, limitBytes, follow, kube-apiserver's errors and tenant scope."""

from __future__ import annotations

import re
import threading
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.volcanoweb.dashboard.test_events import _running
from volcanoweb.jobs.models import Pod
from volcanoweb.kubeapi import logs

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z \[sim")


def _url(pod: Pod, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/log" + (f"?{query}" if query else "")


def _pod(name: str) -> Pod:
    job = _running(name)
    pod = Pod.objects.filter(job=job).order_by("name").first()
    assert pod is not None
    assert pod.phase == "Running"
    return pod


@pytest.mark.django_db
def test_the_log_as_text_with_tail_container_timestamps_and_limit(sim_backend, client_for, cast) -> None:
    pod = _pod("logs")
    api = client_for(cast.victor, "token")  # a viewer of team-a reads its pods' logs
    whole = api.get(_url(pod))
    assert whole.status_code == 200
    assert whole["Content-Type"].startswith("text/plain")
    text = whole.content.decode()
    assert f"scheduled to node {pod.node_name}" in text
    assert "container main started" in text
    assert api.get(_url(pod, tailLines="1")).content.decode().splitlines() == text.splitlines()[-1:]
    assert api.get(_url(pod, tailLines="0")).content == b""
    assert api.get(_url(pod, container="main")).content.decode() == text
    assert api.get(_url(pod, limitBytes="5")).content == text.encode()[:5]
    stamped = api.get(_url(pod, timestamps="true")).content.decode().splitlines()
    assert len(stamped) == len(text.splitlines())
    assert all(STAMP.match(line) for line in stamped), stamped
    assert api.get(_url(pod, sinceSeconds="3600")).content.decode() == text
    assert api.get(_url(pod, sinceTime="2999-01-01T00:00:00Z")).content == b""  # nothing after that
    # follow on a pod that has ended answers the whole log at once.
    sim_backend[0].fail_pod(pod.namespace, pod.name, 3)
    Pod.objects.filter(pk=pod.pk).update(phase="Failed", exit_code=3)
    ended = api.get(_url(pod, follow="true"))
    assert ended.status_code == 200
    assert "exited with code 3" in ended.content.decode().splitlines()[-1]


@pytest.mark.django_db
def test_kube_apiservers_errors(sim_backend, client_for, cast) -> None:
    pod = _pod("bad")
    api = client_for(cast.alice, "token")
    unknown = api.get(_url(pod, container="sidecar"))
    assert unknown.status_code == 400
    assert unknown.json()["message"] == f"container sidecar is not valid for pod {pod.name}"
    previous = api.get(_url(pod, previous="true"))
    assert previous.status_code == 400
    assert previous.json()["message"] == f'previous terminated container "main" in pod "{pod.name}" not found'
    assert api.get(_url(pod, tailLines="-1")).status_code == 400
    assert api.get(_url(pod, sinceSeconds="0")).status_code == 400
    both = api.get(_url(pod, sinceSeconds="5", sinceTime="2020-01-01T00:00:00Z"))
    assert both.status_code == 400
    assert "at most one of sinceTime or sinceSeconds" in both.json()["message"]
    assert api.get(_url(pod, sinceTime="yesterday")).status_code == 400
    missing = api.get(f"/api/v1/namespaces/{pod.namespace}/pods/nope/log")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"
    # Another tenant's namespace is refused; the anonymous caller is 401.
    assert client_for(cast.charlie, "token").get(_url(pod)).status_code == 403
    assert client_for(None).get(_url(pod)).status_code == 401


@pytest.mark.django_db
def test_two_containers_need_a_name(sim_backend, client_for, cast) -> None:
    pod = _pod("pair")
    Pod.objects.filter(pk=pod.pk).update(
        spec={**pod.spec, "containers": [*pod.spec["containers"], {"name": "sidecar", "image": "busybox"}]}
    )
    answer = client_for(cast.alice, "token").get(_url(pod))
    assert answer.status_code == 400
    assert (
        answer.json()["message"]
        == f"a container name must be specified for pod {pod.name}, choose one of: [main sidecar]"
    )


@pytest.mark.django_db
def test_follow_sends_new_lines_once_until_the_container_ends(sim_backend, cast) -> None:
    backend, clock = sim_backend
    pod = _pod("follow")
    key = (pod.namespace, pod.name)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.advance(5)  # one more progress line each time
        if len(sleeps) == 3:
            backend.fail_pod(*key, 3)

    lines = list(logs._poll(backend, key, "main", None, sleep))
    assert len(sleeps) == 3
    assert "exited with code 3" in lines[-1]
    assert len(lines) == len(set(lines)), lines  # no line twice
    final = backend.pod_log(*key, container="main").splitlines()
    assert len(lines) == len(final)
    tailed = list(logs._poll(backend, key, "main", 1, sleep))
    assert tailed == final[-1:]  # the container has ended: only the tail, then the stream ends


def test_a_replaced_placeholder_line_is_followed_by_its_replacement() -> None:
    sent = ["created", "scheduled", "container main waiting to start"]
    now = ["created", "scheduled", "container main started", "running: 5s"]
    assert logs._unsent(sent, now) == 2
    assert logs._unsent(["a", "running: 5s of 60s"], ["a", "running: 5s", "exited"]) == 2


@pytest.mark.django_db(transaction=True)
def test_the_official_clients_read_namespaced_pod_log_and_follow(official, sim_backend, cast) -> None:
    backend, _clock = sim_backend
    pod = _pod("py")
    core = client.CoreV1Api(official(cast.alice))
    text = core.read_namespaced_pod_log(pod.name, pod.namespace)
    assert "container main started" in text
    assert core.read_namespaced_pod_log(pod.name, pod.namespace, tail_lines=1, container="main") == (
        text.splitlines()[-1] + "\n"
    )
    with pytest.raises(ApiException) as refused:
        core.read_namespaced_pod_log(pod.name, pod.namespace, previous=True)
    assert refused.value.status == 400

    # follow=true streams: the lines so far, then the exit line when the pod ends, then the stream closes.
    stream = core.read_namespaced_pod_log(pod.name, pod.namespace, follow=True, _preload_content=False)
    text: list[str] = []

    def read() -> None:
        while chunk := stream.read1(4096):  # what has arrived (the live server does not chunk its body)
            text.append(chunk.decode())

    def received() -> list[str]:
        return "".join(text).splitlines()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 20
    while not any("container main started" in line for line in received()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any("container main started" in line for line in received()), received()
    assert reader.is_alive()  # still following
    backend.fail_pod(pod.namespace, pod.name, 3)
    reader.join(20)
    assert not reader.is_alive()
    assert "exited with code 3" in received()[-1], received()
    assert len(received()) == len(set(received()))
