import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

app = Celery("annotation_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
