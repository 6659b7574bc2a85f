"""The Celery app of the composition root: its configuration comes from the settings, and its
tasks from every installed app (`autodiscover_tasks`). The base queues tasks through
base/task_queue.py, which reaches this app as Celery's current app and never imports it."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

app = Celery("annotation_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The beat schedule is `CELERY_BEAT_SCHEDULE` in the settings (one place; read by config_from_object).
