"""Settings for the test suite: the production settings with DEBUG asked for (so no SECRET_KEY
is needed), exported to the environment so that subprocesses started by tests (the Celery worker,
gunicorn) agree.
pytest-django still runs every test with DEBUG off, as production does."""

import os

os.environ.setdefault("DEBUG", "1")
# A fixed Fernet key for the tests' market connections (markets/sealing.py); never a real one.
os.environ.setdefault("MARKET_CREDENTIALS_KEY", "dGVzdC1vbmx5LW1hcmtldC1rZXktMzItYnl0ZXMhIT0=")

from .settings import *  # noqa: F403
