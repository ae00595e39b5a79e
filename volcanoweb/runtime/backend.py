"""The cluster backend the controllers use: injectable for tests, else the project's configured one."""

from __future__ import annotations

from volcanoweb.clusters.backends.base import ClusterBackend

_override: ClusterBackend | None = None


def set_backend(backend: ClusterBackend | None) -> None:
    """Use ``backend`` for every controller call (tests, the embedded runner); None restores the default."""
    global _override
    _override = backend


def get_backend() -> ClusterBackend:
    """Return the injected backend, else ``volcanoweb.clusters.backend.get_backend()``."""
    if _override is not None:
        return _override
    from volcanoweb.clusters import backend  # clusters.services imports the runtime

    return backend.get_backend()
