"""The process-wide cluster backend, chosen by ``settings.CLUSTER_BACKEND``.

* ``sim``: :class:`~volcanoweb.clusters.backends.simdb.DatabaseSimCluster`, whose state lives in the
  database so that every process (web, worker, beat) sees the same simulated cluster; seeded
  from ``SIM_NODE_POOL``, ``SIM_CLOCK_SPEED`` and ``SIM_DEFAULT_DURATION`` the first time.
* ``kubernetes``: :class:`~volcanoweb.clusters.backends.kubernetes.KubernetesBackend` from
  ``KUBECONFIG`` / ``KUBE_CONTEXT`` / ``KUBE_IN_CLUSTER``.

Callers (controllers, the scheduling service, fault injection) use :func:`get_backend`; tests
swap the instance with :func:`set_backend`.
"""

from __future__ import annotations

import threading

from django.conf import settings

from volcanoweb.clusters.backends.base import ClusterBackend

_lock = threading.Lock()
_backend: ClusterBackend | None = None


def build_backend() -> ClusterBackend:
    """Return a new backend configured from the settings."""
    if settings.CLUSTER_BACKEND == "kubernetes":
        from volcanoweb.clusters.backends.kubernetes import KubernetesBackend

        return KubernetesBackend(
            kubeconfig=settings.KUBECONFIG or None,
            context=settings.KUBE_CONTEXT or None,
            in_cluster=settings.KUBE_IN_CLUSTER,
        )
    from volcanoweb.clusters.backends.simdb import DatabaseSimCluster

    return DatabaseSimCluster(
        settings.SIM_NODE_POOL,
        speed=settings.SIM_CLOCK_SPEED,
        default_duration=settings.SIM_DEFAULT_DURATION,
    )


def get_backend() -> ClusterBackend:
    """Return the process-wide backend, building it on first use."""
    global _backend
    if _backend is None:
        with _lock:
            if _backend is None:
                _backend = build_backend()
    return _backend


def set_backend(backend: ClusterBackend | None) -> ClusterBackend | None:
    """Replace the process-wide backend (tests); return the previous one. ``None`` resets it."""
    global _backend
    with _lock:
        previous, _backend = _backend, backend
    return previous
