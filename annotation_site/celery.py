import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

app = Celery("annotation_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="annotation_site.health_check")
def health_check():
    """What a worker sees: its database and the number of pairs there (for `celery call` and tests)."""
    import socket

    from django.db import connection

    from collection.models import Pair

    return {"hostname": socket.gethostname(), "database": connection.vendor, "pairs": Pair.objects.count()}
