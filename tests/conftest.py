"""Suite-wide pytest configuration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Playwright's sync API keeps an event loop running in the main thread, which
    # breaks asyncio tests that run after it: move browser tests to the end.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(autouse=True)
def _eager_celery(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run Celery tasks in-process in unit and integration tests; e2e tests use real workers."""
    if request.node.get_closest_marker("e2e"):
        yield
        return
    from volcanoweb.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous
