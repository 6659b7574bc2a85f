import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# Served pages never wait for a job: without a broker, jobs run in a thread of this process.
os.environ.setdefault("EMBEDDED_TASKS", "background")
application = get_wsgi_application()

# What a process would otherwise load on its first request (annotation_site.wiring): once, and
# under gunicorn's preload_app before the processes fork, so they share it.
from annotation_site.wiring import load_before_first_request  # noqa: E402 (needs the app registry)

load_before_first_request()

# The start-up heap lives as long as the process: frozen, the cycle collector never walks it again,
# so a request that makes many objects pays for its own only, and forked processes share its pages.
gc.freeze()
