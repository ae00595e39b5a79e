"""The hostile-input tests' shared world (the REST API's and the Kubernetes API's corpora run in it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import Cast, build_cast, module_data


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Cast]:
    """The cast, the cookbook queues and one job ``team-a/train`` (for PUT)."""
    with module_data(django_db_blocker):
        cast = build_cast()
        for name in builders.COOKBOOK_JOB_QUEUES:
            builders.make_queue(name, allowed=("team-a",))
        builders.make_job("team-a", "train", queue="ml-training")
        yield cast
