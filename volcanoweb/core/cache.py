"""Django's Redis cache with one client, and so one connection pool, per process (ADR 0035).

Django keeps a cache backend per async context: under ASGI every request is a new context, so every request
built a new ``RedisCache``, a new client, a new connection pool and a new TCP connection to Redis for its first
cache call (the bearer-token throttle's ``get_many`` runs on every API request: 8 % of a web process's CPU in a
10,000-job run went to connecting). Here the backends of one process and configuration share one client; redis'
pool is thread-safe and starts afresh in a forked child.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from django.core.cache.backends.redis import RedisCache
from django.utils.functional import cached_property


class SharedRedisCache(RedisCache):
    """``RedisCache`` whose client (connection pools included) is shared by every instance of one configuration."""

    # set by RedisCache.__init__ (django-stubs does not declare them)
    _servers: list[str]
    _options: dict[str, Any]
    _class: Any
    _clients: ClassVar[dict[tuple[Any, ...], Any]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @cached_property
    def _cache(self) -> Any:
        key = (tuple(self._servers), repr(sorted(self._options.items())))
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._class(self._servers, **self._options)
        return client
