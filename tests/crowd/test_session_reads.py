"""With a cache shared by the web processes (CACHE_URL: Redis), a logged-in page reads its session
from the cache, not the session table; the table keeps every session, so a flushed cache logs
nobody out. Without one, sessions stay in the table alone (a process's own cache would serve
another process's stale copy)."""

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def home_page(client):
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/")
    assert page.status_code == 200 and page.wsgi_request.user.username == "reader"
    return [q["sql"] for q in queries if 'FROM "django_session"' in q["sql"]]


def test_a_logged_in_page_reads_its_session_from_the_shared_cache_where_there_is_one(client, make_worker):
    make_worker("reader")
    assert client.login(username="reader", password="worker-pass-1")
    shared = settings.CACHES["default"]["BACKEND"].endswith("RedisCache")
    assert settings.SESSION_ENGINE.endswith("cached_db" if shared else ".db")
    home_page(client)
    assert len(home_page(client)) == (0 if shared else 1)
    cache.clear()
    assert len(home_page(client)) == 1  # from the table, still logged in
    assert len(home_page(client)) == (0 if shared else 1)  # and cached again
