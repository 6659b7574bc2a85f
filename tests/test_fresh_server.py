"""A fresh web process's first requests: no 500 from the task registry, and no arrival tasks in
the broker-less mode (a fresh server's first writing submits answered 500 after their
pairs were saved, 7 in one load run)."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO_ROOT

# Sixteen threads of a process that has queued nothing yet look up a task at the same moment, as
# the threads of a fresh gunicorn worker do on its first submits.
FIRST_LOOKUPS = r"""
import json, threading
import django
django.setup()
from django.conf import settings
from base.task_queue import task_named

barrier = threading.Barrier(16)
errors = []

def look():
    barrier.wait()
    try:
        task_named("artifacts.pairs_arrived")
    except Exception as error:
        errors.append(repr(error))

threads = [threading.Thread(target=look) for _ in range(16)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("FRESH " + json.dumps({"errors": errors, "on_arrival": settings.ARTIFACTS_ON_ARRIVAL}))
"""


def fresh_process(tmp_path, **env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="annotation_site.settings", DEBUG="1", PYTHONPATH=str(REPO_ROOT))
    env.update(DATA_DIR=str(tmp_path), **env_changes)
    done = subprocess.run(
        [sys.executable, "-c", FIRST_LOOKUPS], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False
    )
    line = next((line for line in done.stdout.splitlines() if line.startswith("FRESH ")), None)
    assert line, done.stdout + done.stderr
    return json.loads(line[len("FRESH ") :])


def test_a_fresh_broker_less_process_finds_its_tasks_and_queues_no_arrival_tasks(tmp_path):
    # The race lost in two of three fresh processes before the fix; three in a row must all pass.
    # Without a broker, arrival tasks would run inside the request that saved the pairs (the
    # setting read the in-memory URL that the embedded mode fills in, so it was always on).
    for _ in range(3):
        fresh = fresh_process(tmp_path)
        assert fresh["errors"] == []
        assert fresh["on_arrival"] is False
