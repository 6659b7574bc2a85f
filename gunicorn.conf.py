"""gunicorn settings for the annotation site (`make serve`, Dockerfile): worker pages are
I/O-bound (a few short statements each, most of a request's time is waiting on PostgreSQL), so
each process serves several requests at once with threads instead of one at a time.

    gunicorn annotation_site.wsgi -c gunicorn.conf.py     # GUNICORN_* variables override

Under a saturating load (bench/gunicorn_pages.py) threads serve more than twice the requests of
one-request processes, and past 8 threads a process gains nothing more. The figures, and those
at human pace (bench/human_pace.py), are in bench/RESULTS-gunicorn.md and bench/RESULTS-issue12.md.
"""

import multiprocessing
import os
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# One process per core: the GIL lets one thread run Python at a time, so more processes than cores
# only add memory; threads cover the time each request waits on the database. The cores this
# process may run on (a container limited by --cpuset-cpus sees its own), not the host's count;
# an empty GUNICORN_WORKERS counts as unset (compose passes ${GUNICORN_WORKERS:-}).
_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else multiprocessing.cpu_count()
workers = int(os.environ.get("GUNICORN_WORKERS") or _cores)
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
# Import Django and the URLconf once, before forking: no process pays the imports on its first
# request, and the code pages are shared between processes.
preload_app = True
# Persistent database connections (CONN_MAX_AGE) are per thread; recycle processes now and then
# so a slow leak in any library never grows without bound.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "5000"))
max_requests_jitter = 500
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
keepalive = 5
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
# gunicorn 27's control socket defaults to one path per user (~/.gunicorn/gunicorn.ctl): a second
# gunicorn on the host (a second site, a blue-green deploy, the suite's servers side by side) takes
# the path over from the first. Nothing here uses `gunicornc`, so there is no socket.
control_socket_disable = True


def post_worker_init(worker: Any) -> None:
    """Logged once a worker has its own signal handlers: a stop signal that reaches a worker before
    this moment (in its first second) is lost, and the master then waits its whole graceful timeout
    (30 s) for it; whoever stops a fresh server (the suite) waits for these lines first."""
    worker.log.info("Worker ready (pid: %s)", worker.pid)
