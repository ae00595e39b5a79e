"""Job plugins env, svc, ssh, mpi, pytorch and tensorflow: the objects and the pod changes they make."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives import serialization

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import World
from volcanoweb.runtime.plugins import parse_flags

pytestmark = pytest.mark.django_db


def sim_spec(world: World, name: str) -> dict:
    """The pod spec the simulator received (from its JSON state)."""
    return next(p["spec"] for p in world.sim.to_state()["pods"] if p["spec"]["name"] == name)


def env_of(world: World, name: str) -> dict[str, str]:
    """The first container's environment as the cluster received it."""
    return dict(sim_spec(world, name)["containers"][0]["env"])


def test_01_svc_env_ssh_outputs(world: World) -> None:
    job = world.cookbook("01-pytorch-distributed.yaml")
    world.admit(job)
    hosts = [f"pytorch-distributed-worker-{i}.pytorch-distributed" for i in range(4)]
    config_map = world.sim.config_maps[("team-a", "pytorch-distributed-svc")]
    assert config_map["data"] == {
        "worker.host": "\n".join(hosts),
        "VC_WORKER_HOSTS": ",".join(hosts),
        "VC_WORKER_NUM": "4",
    }
    service = world.sim.services[("team-a", "pytorch-distributed")]
    assert service["headless"] is True
    assert service["selector"] == {"volcano.sh/job-name": "pytorch-distributed", "volcano.sh/job-namespace": "team-a"}
    env = env_of(world, "pytorch-distributed-worker-2")
    assert env["VC_TASK_INDEX"] == env["VK_TASK_INDEX"] == "2"
    assert env["VC_WORKER_HOSTS"] == ",".join(hosts)
    assert env["VC_WORKER_NUM"] == "4"
    spec = sim_spec(world, "pytorch-distributed-worker-2")
    assert (spec["hostname"], spec["subdomain"]) == ("pytorch-distributed-worker-2", "pytorch-distributed")
    mounts = {m["mount_path"]: m for m in spec["containers"][0]["volume_mounts"]}
    assert mounts["/etc/volcano"]["name"] == "pytorch-distributed-svc"
    assert mounts["/root/.ssh"]["sub_path"] == ".ssh"
    secret = world.sim.secrets[("team-a", "pytorch-distributed-ssh")]["data"]
    assert set(secret) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    key = serialization.load_pem_private_key(secret["id_rsa"].encode(), password=None)
    assert key.key_size == 2048
    assert secret["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert secret["authorized_keys"] == secret["id_rsa.pub"]
    assert secret["id_rsa.pub"].startswith("ssh-rsa ")
    block = "Host pytorch-distributed-worker-3\n  HostName pytorch-distributed-worker-3.pytorch-distributed\n  Port 22"
    assert block in secret["config"]
    pod_row = world.pods(job)["pytorch-distributed-worker-2"]
    env_rows = {e["name"]: e for e in pod_row.spec["containers"][0]["env"]}
    assert env_rows["VC_WORKER_HOSTS"]["valueFrom"]["configMapKeyRef"] == {
        "name": "pytorch-distributed-svc",
        "key": "VC_WORKER_HOSTS",
    }
    assert world.reload(job).status["controlledResources"] == {
        "plugin-env": "env",
        "plugin-ssh": "ssh",
        "plugin-svc": "svc",
    }


def test_a_restart_deletes_and_recreates_plugin_objects_with_new_keys(world: World) -> None:
    job = world.schedule(world.cookbook("01-pytorch-distributed.yaml"))
    first = world.sim.secrets[("team-a", "pytorch-distributed-ssh")]["data"]["id_rsa"]
    world.evict(job, "pytorch-distributed-worker-0")
    assert ("team-a", "pytorch-distributed-ssh") not in world.sim.secrets
    assert ("team-a", "pytorch-distributed") not in world.sim.services
    world.schedule(world.reload(job))
    assert world.sim.secrets[("team-a", "pytorch-distributed-ssh")]["data"]["id_rsa"] != first
    assert ("team-a", "pytorch-distributed") in world.sim.services


def framework_job(name: str, plugin: str, roles: tuple[str, str], replicas: tuple[int, int] = (1, 2)) -> dict:
    tasks = [builders.task(roles[0], replicas[0]), builders.task(roles[1], replicas[1])]
    return builders.job_manifest(name, queue="ml-training", tasks=tasks, plugins={plugin: []})


def test_pytorch_plugin_env(world: World) -> None:
    job = world.apply(framework_job("pt", "pytorch", ("master", "worker")))
    world.admit(job)
    master, worker = env_of(world, "pt-master-0"), env_of(world, "pt-worker-1")
    assert master["MASTER_ADDR"] == worker["MASTER_ADDR"] == "pt-master-0.pt"
    assert master["MASTER_PORT"] == "23456"
    assert master["WORLD_SIZE"] == "3"
    assert (master["RANK"], worker["RANK"]) == ("0", "2")
    assert "VC_MASTER_HOSTS" in worker  # svc was added by the admission defaults
    ports = world.pods(job)["pt-worker-1"].spec["containers"][0]["ports"]
    assert {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"} in ports


def test_tensorflow_plugin_tf_config(world: World) -> None:
    job = world.apply(framework_job("tf", "tensorflow", ("ps", "worker")))
    world.admit(job)
    config = json.loads(env_of(world, "tf-worker-1")["TF_CONFIG"])
    assert config == {
        "cluster": {"ps": ["tf-ps-0.tf:2222"], "worker": ["tf-worker-0.tf:2222", "tf-worker-1.tf:2222"]},
        "task": {"type": "worker", "index": 1},
    }


def test_mpi_plugin_master_gets_mpi_host(world: World) -> None:
    job = world.apply(framework_job("mpi", "mpi", ("master", "worker")))
    world.admit(job)
    assert env_of(world, "mpi-master-0")["MPI_HOST"] == "mpi-worker-0.mpi,mpi-worker-1.mpi"
    assert "MPI_HOST" not in env_of(world, "mpi-worker-0")
    assert ("team-a", "mpi-ssh") in world.sim.secrets  # ssh added by the admission defaults


def test_plugin_flags_parse_like_go() -> None:
    defaults = {"port": 22, "flag": False, "name": "x"}
    assert parse_flags(["--port=2022", "--flag", "--name", "y"], defaults) == {"port": 2022, "flag": True, "name": "y"}
    assert parse_flags(["--flag=false", "--nope", "--port=1"], defaults) == {"port": 22, "flag": False, "name": "x"}
