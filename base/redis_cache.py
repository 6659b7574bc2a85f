"""Django's Redis cache with one Redis client per server, made once per process and thread.

Django's client makes a new `redis.Redis` for every cache call, and redis-py's constructor builds
its table of response callbacks each time: about a fifth of a millisecond a call, and a dashboard
page makes a dozen calls. A client is safe to share (each command takes a connection from the
server's pool), and its pool makes its connections anew in a forked process.
"""

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class SharedClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        django_client: Any = self  # the pools and the client class are Django's, not in its stubs
        index = django_client._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            pool = django_client._get_connection_pool(write)
            client = self._clients[index] = django_client._client(connection_pool=pool)
        return client


class SharedClientRedisCache(RedisCache):
    """The `CACHES` backend for a `CACHE_URL` (annotation_site/settings.py)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientRedisCacheClient
