import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_dashboard_cache():
    """The dashboard caches aggregates for a few seconds; each test starts from the database."""
    cache.clear()
    yield
    cache.clear()
