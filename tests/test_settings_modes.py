from django.conf import settings
from django.db import connection


def test_embedded_defaults_or_environment(monkeypatch):
    import os

    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        assert connection.vendor == "postgresql"
    else:
        assert connection.vendor == "sqlite"
    assert settings.CELERY_TASK_ALWAYS_EAGER == (not os.environ.get("CELERY_BROKER_URL"))
    assert settings.CELERY_TASK_ROUTES["modeling.tasks.run_training"]["queue"] == "gpu"
