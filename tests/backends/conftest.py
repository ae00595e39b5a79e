"""Fixtures for the cluster backend tests (plain pytest, no Django)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .kmock_harness import KmockCluster


@pytest.fixture
def kube() -> Iterator[KmockCluster]:
    """A fresh Kubernetes API double on a real HTTP port, per test."""
    cluster = KmockCluster()
    try:
        yield cluster
    finally:
        cluster.close()
