"""Settings for the test suite: the production settings with DEBUG asked for (so no SECRET_KEY
is needed), exported to the environment so that subprocesses started by tests (the Celery worker,
gunicorn) agree.
pytest-django still runs every test with DEBUG off, as production does."""

import os

os.environ.setdefault("DEBUG", "1")
# A fixed Fernet key for the tests' market connections (markets/sealing.py); never a real one.
os.environ.setdefault("MARKET_CREDENTIALS_KEY", "dGVzdC1vbmx5LW1hcmtldC1rZXktMzItYnl0ZXMhIT0=")
# The dashboard takes the highest pair id for the corpus's size (figure_cache.corpus_is_large): on a
# reused test database the ids pass any threshold with a handful of pairs. A test of the large path sets it.
os.environ.setdefault("DASHBOARD_LARGE_PAIRS", str(10**12))


def _redis_database_of_xdist_process(url: str, number_of_process: int) -> str:
    """The same Redis, `2 × number_of_process` databases below the given one: under pytest-xdist
    each test process has its own Celery broker and cache (two databases apart, so a broker and a
    cache given side by side, as CI's 14 and 15, never meet another process's)."""
    from urllib.parse import urlparse, urlunparse

    parsed = urlparse(url)
    number = int(parsed.path.strip("/") or 0) - 2 * number_of_process
    if number < 0:
        raise RuntimeError(f"{url}: too few Redis databases below it for pytest-xdist process {number_of_process}")
    return urlunparse(parsed._replace(path=f"/{number}"))


# Each pytest-xdist process (PYTEST_XDIST_WORKER: gw0, gw1, ...) gets its Redis databases here,
# written back to the environment so that the Celery workers and servers it starts share them, and
# marked so that they, loading these settings in turn, do not move them again.
_xdist_process = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_process and os.environ.get("NLI_REDIS_OF_XDIST_PROCESS") != _xdist_process:
    for _name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL"):
        if os.environ.get(_name, "").startswith("redis"):
            _number = int(_xdist_process.removeprefix("gw"))
            os.environ[_name] = _redis_database_of_xdist_process(os.environ[_name], _number)
    os.environ["NLI_REDIS_OF_XDIST_PROCESS"] = _xdist_process

from .settings import *  # noqa: E402, F403

# New pairs are not tagged in the background unless a test asks (tests/artifacts): with a broker,
# a tagging queued by one test ran on after it ended, and the next flush waited for its locks.
ARTIFACTS_ON_ARRIVAL = env_bool("ARTIFACTS_ON_ARRIVAL", default=False)  # noqa: F405
