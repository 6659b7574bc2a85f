"""The shared cache (Redis, where CACHE_URL names it) makes one client per server for its process,
not one per call, and still reads and writes every value, across a fork too."""

import os

from django.conf import settings
from django.core.cache import caches

from base.redis_cache import SharedClientRedisCache
from tests.conftest import skip_or_fail_in_ci


def shared_cache() -> SharedClientRedisCache:
    if not settings.CACHE_URL:
        skip_or_fail_in_ci("needs the shared cache on Redis: set CACHE_URL=redis://... (CI does)")
    shared = caches["default"]
    assert isinstance(shared, SharedClientRedisCache)  # the settings' backend for a CACHE_URL
    return shared


def test_every_call_of_a_process_uses_one_client_of_the_server() -> None:
    shared = shared_cache()
    client = shared._cache.get_client("a")
    shared.set("shared-client", {"n": 1}, 60)
    assert shared.get("shared-client") == {"n": 1}
    assert shared.get_many(["shared-client", "none"]) == {"shared-client": {"n": 1}}
    assert shared._cache.get_client("b", write=True) is client
    assert shared._cache.get_client(None) is client


def test_two_servers_each_have_their_own_client() -> None:
    shared_cache()
    two = SharedClientRedisCache(f"{settings.CACHE_URL},{settings.CACHE_URL}", {})
    writer = two._cache.get_client(write=True)
    assert two._cache.get_client(write=True) is writer
    reader = two._cache.get_client()  # reads go to the servers after the first
    assert reader is not writer and two._cache.get_client() is reader


def test_a_forked_process_reads_and_writes_through_the_same_client() -> None:
    shared = shared_cache()
    shared.set("before-fork", 1, 60)
    pid = os.fork()
    if pid == 0:  # the child: the inherited client makes connections of its own
        try:
            shared.set("from-child", shared.get("before-fork") + 1, 60)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert shared.get("from-child") == 2
