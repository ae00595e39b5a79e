"""The scheduler's messages in PodGroup conditions and events read in Kubernetes quantities."""

from __future__ import annotations

import pytest

from volcanoweb.scheduling.messages import readable


@pytest.mark.parametrize(
    ("core", "shown"),
    [
        ("each pod asks {'nvidia.com/gpu': 8}, the largest", "each pod asks 8 nvidia.com/gpu, the largest"),
        ("asks {'cpu': 1500, 'memory': 34359738368}", "asks 1500m cpu and 32Gi memory"),
        ("holds {'cpu': 2000, 'pods': 3}", "holds 2 cpu"),
        ("no vector here", "no vector here"),
        ("{'cpu': nan}", "{'cpu': nan}"),
    ],
)
def test_vectors_become_kubernetes_quantities(core: str, shown: str) -> None:
    assert readable(core) == shown
