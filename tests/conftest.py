"""Suite-wide pytest configuration."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Playwright's sync API keeps an event loop running in the main thread, which
    # breaks asyncio tests that run after it: move browser tests to the end.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
