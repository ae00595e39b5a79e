"""Job plugins env, svc, ssh, mpi, pytorch and tensorflow (Volcano's job plugins of the same names).

Hooks, as in Volcano: ``on_job_add`` (initiation; guarded by ``controlledResources["plugin-<name>"]``),
``on_pod_create`` (each new pod, on its Kubernetes-shaped JSON spec), ``on_job_update`` (every sync after
initiation) and ``on_job_delete`` (every kill). Objects in the cluster go through the cluster backend.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from volcanoweb.clusters.backends.base import ClusterBackend, OwnerReference, ServiceSpec

log = logging.getLogger(__name__)
JOB_NAME_LABEL = "volcano.sh/job-name"
JOB_NAMESPACE_LABEL = "volcano.sh/job-namespace"
SVC_MOUNT_PATH = "/etc/volcano"


@dataclass
class JobContext:
    """What a plugin sees: the job's identity and spec, the backend, and the job's bookkeeping dicts."""

    name: str
    namespace: str
    uid: str
    spec: dict[str, Any]
    backend: ClusterBackend
    controlled: dict[str, str] = field(default_factory=dict)  # status.controlledResources
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)  # data by name, to inline env values

    @property
    def owner(self) -> OwnerReference:
        """The controller owner reference to the job."""
        return OwnerReference(kind="Job", name=self.name, uid=self.uid)

    def task(self, name: str) -> dict[str, Any] | None:
        """Return the task spec named ``name``."""
        return next((t for t in self.spec.get("tasks") or [] if t.get("name") == name), None)


def parse_flags(args: list[str] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """Parse Go-style flags (``--name=value``, ``--name value``, ``--flag``); stop at an unknown flag."""
    values = dict(defaults)
    items = list(args or [])
    i = 0
    while i < len(items):
        raw = items[i].lstrip("-")
        name, sep, value = raw.partition("=")
        if name not in defaults:
            log.warning("unknown plugin flag %r; parsing stops", items[i])
            break
        default = defaults[name]
        if isinstance(default, bool):
            values[name] = value.lower() in ("", "true", "1", "t") if sep else True
        else:
            if not sep:
                i += 1
                value = items[i] if i < len(items) else ""
            try:
                values[name] = type(default)(value)
            except ValueError:
                log.warning("bad value %r for plugin flag %s", value, name)
        i += 1
    return values


def containers(pod_spec: dict[str, Any], *, init: bool = True) -> list[dict[str, Any]]:
    """Return the containers (and init containers) of a pod spec, for in-place edits."""
    found = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
    if init:
        found += [c for c in pod_spec.get("initContainers") or [] if isinstance(c, dict)]
    return found


def add_env(container: dict[str, Any], name: str, value: str | None = None, value_from: Any = None) -> None:
    """Append an env var unless the container already defines it."""
    env = container.setdefault("env", [])
    if any(e.get("name") == name for e in env):
        return
    env.append({"name": name, "value": value} if value_from is None else {"name": name, "valueFrom": value_from})


def add_port(container: dict[str, Any], port: int, name: str) -> None:
    """Expose a container port unless one with that number exists."""
    ports = container.setdefault("ports", [])
    if not any(p.get("containerPort") == port for p in ports):
        ports.append({"name": name, "containerPort": port, "protocol": "TCP"})


def pod_index(pod_name: str) -> int:
    """Return the index from the last ``-``-separated segment of a pod name."""
    try:
        return int(pod_name.rsplit("-", 1)[-1])
    except ValueError:
        return 0


def task_hosts(ctx: JobContext, task: dict[str, Any]) -> list[str]:
    """Return ``<hostname>.<subdomain>`` for every pod of a task (one host if the template fixes it)."""
    pod_spec = (task.get("template") or {}).get("spec") or {}
    subdomain = pod_spec.get("subdomain") or ctx.name
    if pod_spec.get("hostname"):
        return [f"{pod_spec['hostname']}.{subdomain}"]
    return [f"{ctx.name}-{task['name']}-{i}.{subdomain}" for i in range(int(task.get("replicas") or 0))]


def env_task_key(task_name: str) -> str:
    """Return the task name as used in svc keys (``-`` → ``_``)."""
    return task_name.replace("-", "_")


class Plugin:
    """Base: every hook is a no-op, and add/delete toggle ``controlledResources``."""

    name = ""
    defaults: dict[str, Any] = {}

    def __init__(self, args: list[str] | None) -> None:
        self.flags = parse_flags(args, self.defaults)

    def on_job_add(self, ctx: JobContext) -> None:
        ctx.controlled[f"plugin-{self.name}"] = self.name

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        return None

    def on_job_update(self, ctx: JobContext) -> None:
        return None

    def on_job_delete(self, ctx: JobContext) -> None:
        ctx.controlled.pop(f"plugin-{self.name}", None)


class EnvPlugin(Plugin):
    """VK_TASK_INDEX and VC_TASK_INDEX in every container."""

    name = "env"

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        value = str(pod_index(pod["metadata"]["name"]))
        for container in containers(pod["spec"]):
            add_env(container, "VK_TASK_INDEX", value)
            add_env(container, "VC_TASK_INDEX", value)


class SvcPlugin(Plugin):
    """Headless Service ``<job>``, hosts ConfigMap ``<job>-svc`` mounted at /etc/volcano, VC_<TASK>_HOSTS/NUM."""

    name = "svc"
    defaults = {"publish-not-ready-addresses": False, "disable-network-policy": False, "inject-hosts-env": True}

    def config_map_name(self, ctx: JobContext) -> str:
        return f"{ctx.name}-svc"

    def data(self, ctx: JobContext) -> dict[str, str]:
        data: dict[str, str] = {}
        for task in ctx.spec.get("tasks") or []:
            key, hosts = env_task_key(task["name"]), task_hosts(ctx, task)
            data[f"{key}.host"] = "\n".join(hosts)
            data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
            data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
        return data

    def _ensure_config_map(self, ctx: JobContext) -> None:
        name, data = self.config_map_name(ctx), self.data(ctx)
        ctx.config_maps[name] = data
        labels = {JOB_NAME_LABEL: ctx.name, JOB_NAMESPACE_LABEL: ctx.namespace}
        if not ctx.backend.ensure_config_map(ctx.namespace, name, data, labels, ctx.owner):
            read = getattr(ctx.backend, "get_object", None)  # the simulated cluster's stored documents
            current = read("configmap", ctx.namespace, name) if read is not None else None
            if current is not None and current.get("data") != data:  # the interface has no update: replace
                ctx.backend.delete_config_map(ctx.namespace, name)
                ctx.backend.ensure_config_map(ctx.namespace, name, data, labels, ctx.owner)

    def on_job_add(self, ctx: JobContext) -> None:
        if f"plugin-{self.name}" in ctx.controlled:
            ctx.config_maps[self.config_map_name(ctx)] = self.data(ctx)
            return
        self._ensure_config_map(ctx)
        selector = {JOB_NAME_LABEL: ctx.name, JOB_NAMESPACE_LABEL: ctx.namespace}
        ctx.backend.ensure_service(
            ServiceSpec(
                namespace=ctx.namespace,
                name=ctx.name,
                selector=selector,
                labels=dict(selector),
                owner=ctx.owner,
                headless=True,
                publish_not_ready_addresses=bool(self.flags["publish-not-ready-addresses"]),
            )
        )
        super().on_job_add(ctx)

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        spec = pod["spec"]
        if not spec.get("hostname"):
            spec["hostname"] = pod["metadata"]["name"]
        if not spec.get("subdomain"):
            spec["subdomain"] = ctx.name
        cm_name = self.config_map_name(ctx)
        ctx.config_maps.setdefault(cm_name, self.data(ctx))
        volume_name = cm_name
        spec.setdefault("volumes", [])
        if not any(v.get("name") == volume_name for v in spec["volumes"]):
            spec["volumes"].append({"name": volume_name, "configMap": {"name": cm_name}})
        for container in containers(spec):
            if self.flags["inject-hosts-env"]:
                for other in ctx.spec.get("tasks") or []:
                    key = env_task_key(other["name"]).upper()
                    for suffix in ("HOSTS", "NUM"):
                        var = f"VC_{key}_{suffix}"
                        add_env(container, var, value_from={"configMapKeyRef": {"name": cm_name, "key": var}})
            mounts = container.setdefault("volumeMounts", [])
            if not any(m.get("name") == volume_name for m in mounts):
                mounts.append({"name": volume_name, "mountPath": SVC_MOUNT_PATH})

    def on_job_update(self, ctx: JobContext) -> None:
        self._ensure_config_map(ctx)

    def on_job_delete(self, ctx: JobContext) -> None:
        ctx.backend.delete_config_map(ctx.namespace, self.config_map_name(ctx))
        ctx.backend.delete_service(ctx.namespace, ctx.name)
        ctx.config_maps.pop(self.config_map_name(ctx), None)
        super().on_job_delete(ctx)


def generate_key_pair() -> tuple[str, str]:
    """Return a new 2048-bit RSA key pair: (PEM PKCS#1 private key, OpenSSH public key line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public + "\n"


class SshPlugin(Plugin):
    """Secret ``<job>-ssh`` with a key pair, authorized_keys and an ssh config listing every pod."""

    name = "ssh"
    defaults = {"ssh-key-file-path": "/root/.ssh", "ssh-private-key": "", "ssh-public-key": "", "ssh-port": 22}

    def secret_name(self, ctx: JobContext) -> str:
        return f"{ctx.name}-ssh"

    def config(self, ctx: JobContext) -> str:
        port = self.flags["ssh-port"] if 0 < int(self.flags["ssh-port"]) < 65536 else 22
        lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
        for task in ctx.spec.get("tasks") or []:
            for host in task_hosts(ctx, task):
                hostname = host.split(".", 1)[0]
                lines += [f"Host {hostname}", f"  HostName {host}", f"  Port {port}"]
        return "\n".join(lines) + "\n"

    def on_job_add(self, ctx: JobContext) -> None:
        if f"plugin-{self.name}" in ctx.controlled:
            return
        if self.flags["ssh-private-key"] and self.flags["ssh-public-key"]:
            private, public = self.flags["ssh-private-key"], self.flags["ssh-public-key"]
        else:
            private, public = generate_key_pair()
        data = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": self.config(ctx)}
        labels = {JOB_NAME_LABEL: ctx.name, JOB_NAMESPACE_LABEL: ctx.namespace}
        ctx.backend.ensure_secret(ctx.namespace, self.secret_name(ctx), data, labels, ctx.owner)
        super().on_job_add(ctx)

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        path = self.flags["ssh-key-file-path"] or "/root/.ssh"
        mode = 0o600 if path == "/root/.ssh" else 0o644
        volume = f"{ctx.name}-ssh"
        items = [{"key": k, "path": f".ssh/{k}"} for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")]
        spec = pod["spec"]
        spec.setdefault("volumes", [])
        if not any(v.get("name") == volume for v in spec["volumes"]):
            secret = {"secretName": self.secret_name(ctx), "items": items, "defaultMode": mode}
            spec["volumes"].append({"name": volume, "secret": secret})
        for container in containers(spec):
            mounts = container.setdefault("volumeMounts", [])
            if not any(m.get("name") == volume for m in mounts):
                mounts.append({"name": volume, "mountPath": path, "subPath": ".ssh"})

    def on_job_delete(self, ctx: JobContext) -> None:
        ctx.backend.delete_secret(ctx.namespace, self.secret_name(ctx))
        super().on_job_delete(ctx)


class MpiPlugin(Plugin):
    """Port ``mpijob-port`` everywhere; MPI_HOST (worker addresses) on master pods."""

    name = "mpi"
    defaults = {"master": "master", "worker": "worker", "port": 22}

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        worker = ctx.task(self.flags["worker"])
        hosts = ",".join(task_hosts(ctx, worker)) if worker else ""
        for container in containers(pod["spec"]):
            add_port(container, int(self.flags["port"]), "mpijob-port")
            if task["name"] == self.flags["master"]:
                add_env(container, "MPI_HOST", hosts)


class PytorchPlugin(Plugin):
    """MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; optional wait-for-master init container."""

    name = "pytorch"
    defaults = {
        "master": "master",
        "worker": "worker",
        "port": 23456,
        "wait-master-enabled": False,
        "wait-master-timeout": 300,
        "wait-master-image": "busybox:1.36.1",
    }

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        master, worker = ctx.task(self.flags["master"]), ctx.task(self.flags["worker"])
        if master is None:
            return
        port = int(self.flags["port"])
        address = task_hosts(ctx, master)[0] if task_hosts(ctx, master) else f"{ctx.name}-{master['name']}-0.{ctx.name}"
        world = int(master.get("replicas") or 0) + int((worker or {}).get("replicas") or 0)
        rank: str | None = None
        if task["name"] == master["name"]:
            rank = "0"
        elif worker is not None and task["name"] == worker["name"]:
            rank = str(index + 1)
        for container in containers(pod["spec"], init=False):
            add_port(container, port, "pytorchjob-port")
            add_env(container, "MASTER_ADDR", address)
            add_env(container, "MASTER_PORT", str(port))
            add_env(container, "WORLD_SIZE", str(world))
            if rank is not None:
                add_env(container, "RANK", rank)
        if worker is not None and task["name"] == worker["name"] and self.flags["wait-master-enabled"]:
            timeout = int(self.flags["wait-master-timeout"])
            script = (
                f"end=$(($(date +%s)+{timeout})); until nc -z {address} {port}; do "
                f'[ "$(date +%s)" -ge "$end" ] && exit 1; sleep 2; done'
            )
            image = self.flags["wait-master-image"]
            init = {"name": "wait-for-master", "image": image, "command": ["sh", "-c", script]}
            pod["spec"].setdefault("initContainers", []).insert(0, init)


class TensorflowPlugin(Plugin):
    """TF_CONFIG with the cluster spec and the pod's role and index."""

    name = "tensorflow"
    defaults = {"ps": "ps", "worker": "worker", "chief": "chief", "evaluator": "evaluator", "port": 2222}

    def on_pod_create(self, ctx: JobContext, pod: dict[str, Any], task: dict[str, Any], index: int) -> None:
        tasks = ctx.spec.get("tasks") or []
        if len(tasks) == 1 and int(tasks[0].get("replicas") or 0) == 1:
            return
        port = int(self.flags["port"])
        roles = {self.flags[r]: r for r in ("ps", "worker", "chief", "evaluator")}
        cluster: dict[str, list[str]] = {}
        for other in tasks:
            role = roles.get(other["name"])
            if role is None:
                continue
            hosts = [f"{h}:{port}" for h in task_hosts(ctx, other)]
            if hosts:
                cluster[role] = hosts
        config = {"cluster": cluster, "task": {"type": roles.get(task["name"], task["name"]), "index": index}}
        for container in containers(pod["spec"], init=False):
            add_env(container, "TF_CONFIG", json.dumps(config))


PLUGINS: dict[str, type[Plugin]] = {
    p.name: p for p in (EnvPlugin, SvcPlugin, SshPlugin, MpiPlugin, PytorchPlugin, TensorflowPlugin)
}


def job_plugins(spec: dict[str, Any]) -> list[Plugin]:
    """Return the job's plugins (those this port implements), in a fixed order."""
    wanted = spec.get("plugins") or {}
    unsupported = sorted(set(wanted) - set(PLUGINS))
    if unsupported:
        log.warning("job plugins not implemented, ignored: %s", ", ".join(unsupported))
    return [PLUGINS[name](wanted[name]) for name in PLUGINS if name in wanted]
