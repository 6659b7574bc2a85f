"""The login lockout behind a proxy and under load.

Item 8: behind a reverse proxy the client's address is the *last* X-Forwarded-For entry, the one
the proxy appended; the first entries are whatever the client sent. Item 9: the counters are one
atomic increment each: increments that really overlap (a barrier, many threads, the GIL made to
switch often) lose no count, on local memory and on Redis (the suite's cache when CACHE_URL is set).
"""

import sys
import threading

import pytest
from django.core.cache import cache
from django.test import RequestFactory, override_settings

from base.login_throttle import client_address, take_count

LOGIN = "/accounts/login/"
RIGHT = "research-pass-1"
PROXY = "10.0.0.2"  # REMOTE_ADDR of every request: the reverse proxy's own address
ATTACKER, OWNER = "203.0.113.9", "198.51.100.4"
BEHIND_A_PROXY = {
    "PATHS": (LOGIN,),
    "FAILURES_PER_USERNAME": 5,
    "FAILURES_PER_ADDRESS": 20,
    "FAILURES_PER_ACCOUNT": 50,
    "WINDOW_SECONDS": 900,
    "CLIENT_IP_HEADER": "HTTP_X_FORWARDED_FOR",
}


def through_proxy(client, client_ip, *, forged="", password="wrong-password"):
    """A login POST as the proxy passes it on: the client's own header, then the address the proxy saw."""
    header = f"{forged}, {client_ip}" if forged else client_ip
    return client.post(
        LOGIN, {"username": "researcher", "password": password}, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=header
    )


@override_settings(LOGIN_THROTTLE=BEHIND_A_PROXY)
def test_the_address_is_the_entry_the_proxy_appended_not_the_clients_own():
    request = RequestFactory().post(LOGIN, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"1.2.3.4, 5.6.7.8, {ATTACKER}")
    assert client_address(request) == ATTACKER


@override_settings(LOGIN_THROTTLE=BEHIND_A_PROXY)
def test_forged_forwarded_for_entries_do_not_escape_the_pause_behind_a_proxy(client, researcher):
    for n in range(5):
        assert through_proxy(client, ATTACKER, forged=f"192.0.2.{n}").status_code == 200
    # A sixth try names yet another address first: the pause is the attacker's all the same.
    assert through_proxy(client, ATTACKER, forged="192.0.2.99", password=RIGHT).status_code == 429


@override_settings(LOGIN_THROTTLE=BEHIND_A_PROXY)
def test_the_owner_behind_the_same_proxy_is_not_paused_by_the_attacker(client, researcher):
    for _ in range(5):
        through_proxy(client, ATTACKER)
    assert through_proxy(client, ATTACKER, password=RIGHT).status_code == 429
    # Every request comes from the proxy's REMOTE_ADDR: only the header tells the owner apart.
    assert through_proxy(client, OWNER, password=RIGHT).status_code == 302


LOCAL_MEMORY = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "overlap"}}


def overlapping_counts(threads=8, each=150):
    """Every count `take_count` returned when `threads` threads, released together, each take `each`."""
    key = "login:test:overlap"
    cache.delete(key)
    barrier = threading.Barrier(threads)
    returned: list[list[int]] = [[] for _ in range(threads)]

    def count(index):
        barrier.wait()
        for _ in range(each):
            returned[index].append(take_count(key, timeout=600))

    workers = [threading.Thread(target=count, args=(i,)) for i in range(threads)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the GIL changes hands between almost any two bytecodes
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    return sorted(n for counts in returned for n in counts), cache.get(key)


def test_overlapping_counts_lose_nothing_in_local_memory():
    with override_settings(CACHES=LOCAL_MEMORY):
        counts, final = overlapping_counts()
    assert final == 8 * 150 and counts == list(range(1, 8 * 150 + 1))


def test_overlapping_counts_lose_nothing_in_the_configured_cache():
    """Redis in the PostgreSQL pass (CACHE_URL), where the increments overlap on the server."""
    counts, final = overlapping_counts()
    assert final == 8 * 150 and counts == list(range(1, 8 * 150 + 1))


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()
