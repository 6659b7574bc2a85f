"""Celery tasks of the modeling app (Celery autodiscovers this module).

Export runs on the default queue; training is routed to the `gpu` queue (settings.CELERY_TASK_ROUTES).
"""

from modeling.snapshots.tasks import *  # noqa: F403
from modeling.training.tasks import *  # noqa: F403
