"""The nodes page's topology tree: each HyperNode under its parent with its tier, node count and free
capacity (allocatable minus what the pods bound to its nodes request)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.volcanoweb.dashboard.conftest import World
from volcanoweb.jobs.models import HyperNode, Pod

pytestmark = pytest.mark.django_db


def _rows(html: str) -> list[tuple[str, str]]:
    return re.findall(r'data-hypernode="([^"]+)" data-depth="(\d+)"', html)


def test_the_nodes_page_shows_the_topology_tree_with_free_capacity(world: World, login: Any) -> None:
    exact = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in ("node-0", "node-1")]
    HyperNode.objects.create(name="rack-a", tier=1, members=exact)
    HyperNode.objects.create(
        name="rack-b", tier=1, members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "^node-2$"}}}]
    )
    HyperNode.objects.create(
        name="spine",
        tier=2,
        members=[{"type": "HyperNode", "selector": {"exactMatch": {"name": r}}} for r in ("rack-a", "rack-b")],
    )
    Pod.objects.create(namespace="team-a", name="busy", node_name="node-1", phase="Running", requests={"cpu": 6000})
    client = login(world.cast.alice)
    html = client.get("/nodes/").content.decode()
    assert _rows(html) == [("spine", "0"), ("rack-a", "1"), ("rack-b", "1")]
    fragment = client.get("/nodes/?fragment=topology").content.decode()
    rack_a = fragment.split('data-hypernode="rack-a"')[1].split("</tr>")[0]
    assert "CPU 26 / 32" in rack_a  # 2 x 16 cores, 6 requested on node-1
    spine = fragment.split('data-hypernode="spine"')[1].split("</tr>")[0]
    assert "CPU 42 / 48" in spine
    assert '<td class="num">3</td>' in spine  # nodes


def test_no_tree_without_hypernodes(world: World, login: Any) -> None:
    html = login(world.cast.alice).get("/nodes/").content.decode()
    assert "topology-tree" not in html
