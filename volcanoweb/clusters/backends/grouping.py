"""Which PodGroup a pod belongs to: the PodGroup controller's naming, for pods that name none.

Shared by the backends' callers (the cluster mirror gives plain ``schedulerName: volcano`` pods a PodGroup;
docs/controllers.md, "Plain pods and their PodGroups").
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import PodInfo


def podgroup_name_for(pod: PodInfo) -> str:
    """The PodGroup a pod belongs to (docs/controllers.md, "Plain pods and their PodGroups").

    The group-name annotation if set; else ``podgroup-<controller owner uid>``
    for a pod with a controller owner; else ``podgroup-<pod uid>``.
    """
    if pod.group_name:
        return pod.group_name
    if pod.owner is not None and pod.owner.controller:
        return f"podgroup-{pod.owner.uid}"
    return f"podgroup-{pod.uid}"


def group_pods(pods: Iterable[PodInfo]) -> dict[tuple[str, str], list[PodInfo]]:
    """Group pods by ``(namespace, podgroup name)``, see :func:`podgroup_name_for`.

    Pods without the annotation get the name the PodGroup controller would
    give them; the caller creates that PodGroup and patches the annotation
    onto the pod (:meth:`ClusterBackend.patch_pod_annotations`).
    """
    groups: dict[tuple[str, str], list[PodInfo]] = {}
    for pod in pods:
        groups.setdefault((pod.namespace, podgroup_name_for(pod)), []).append(pod)
    return groups
