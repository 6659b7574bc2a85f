"""The embedded mode (no broker): tasks run in this process and say nothing about a broker."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.urls import reverse

from annotation_site.celery import app
from base.task_queue import enqueue, wait_for_background_tasks

REPO = Path(__file__).resolve().parent.parent

QUEUE_ONE_TASK = """
import django
django.setup()
from django.conf import settings
from base.task_queue import enqueue
result = enqueue("base.health_check", "corpus.Dataset", 1)
print("eager", settings.CELERY_TASK_ALWAYS_EAGER, type(result).__name__)
"""


def test_an_in_process_task_prints_no_broker_warning(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    env.update(
        DATABASE_URL="postgres://postgres@127.0.0.1:1/never_opened", DJANGO_SETTINGS_MODULE="annotation_site.settings"
    )
    done = subprocess.run(
        [sys.executable, "-c", QUEUE_ONE_TASK], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "eager True EagerResult" in done.stdout
    # kombu used to warn "No hostname was supplied. Reverting to default 'localhost'" on every task.
    assert "hostname" not in done.stderr.lower(), done.stderr


RELEASE_JOB = threading.Event()


@app.task(name="tests.wait_until_released")
def wait_until_released():
    # Stands for a long export or training run: it ends only when the test lets it.
    if not RELEASE_JOB.wait(timeout=60):
        raise TimeoutError("the test never released the job")
    return threading.current_thread().name


def test_without_a_broker_a_queued_job_runs_in_a_background_thread(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "background"
    RELEASE_JOB.clear()
    future = enqueue("tests.wait_until_released")
    assert not future.done()  # the caller (a page) got its answer while the job waits
    RELEASE_JOB.set()
    wait_for_background_tasks(timeout=60)
    result = future.result(timeout=1)
    assert result.successful() and result.get().startswith("embedded-tasks")


def test_inline_mode_runs_the_job_before_returning(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    RELEASE_JOB.set()
    result = enqueue("tests.wait_until_released")
    assert result.successful() and result.get() == threading.current_thread().name


def test_the_server_runs_jobs_in_the_background_and_other_commands_inline():
    import manage

    for argv, expected in ((["manage.py", "runserver"], "background"), (["manage.py", "train"], None)):
        environ: dict[str, str] = {}
        manage.choose_embedded_tasks(argv, environ)
        assert environ.get("EMBEDDED_TASKS") == expected
    env = {key: value for key, value in os.environ.items() if key != "EMBEDDED_TASKS"}
    show = "from django.conf import settings; print(settings.EMBEDDED_TASKS)"
    for code, expected in (("import annotation_site.wsgi", "background"), ("import django; django.setup()", "inline")):
        done = subprocess.run(
            [sys.executable, "-c", f"{code}; {show}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip().splitlines()[-1] == expected, done.stderr


@pytest.mark.django_db(transaction=True)
def test_a_training_run_launched_from_the_dashboard_runs_after_the_page_answered(
    client, researcher, settings, tmp_path
):
    from modeling.models import RunStatus, TrainingRun
    from tests.modeling.training_fixtures import make_snapshot, multinli_splits

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "background"
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=12, n_eval=6))
    RELEASE_JOB.clear()
    enqueue("tests.wait_until_released")  # the one background thread is busy: the run must wait its turn
    try:
        client.force_login(researcher)
        response = client.post(
            reverse("dashboard:training"), {"snapshot": snapshot.pk, "model": "majority", "options": ""}
        )
        run = TrainingRun.objects.get()
        assert response.status_code == 302 and response.url == reverse("dashboard:training_detail", args=[run.pk])
        assert run.status == RunStatus.QUEUED  # the page answered before the run started
    finally:
        # Never leave the background thread waiting: it would hold the test database past this test.
        RELEASE_JOB.set()
        wait_for_background_tasks(timeout=120)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error


def test_the_wsgi_application_loads_the_word_list_and_the_tasks_before_its_first_request():
    # Without it a process's first writing submit loaded wordfreq's English list (~0.35 s) and the
    # task modules its enqueue needs (~0.3 s): a p99 of 430 ms at human pace.
    env = {key: value for key, value in os.environ.items() if key != "EMBEDDED_TASKS"}
    show = (
        "import sys; from collection.writing_rules import is_english_word; "
        "from base.task_queue import app; from artifacts.services import ARRIVAL_TASK; "
        "print('wordfreq' in sys.modules, is_english_word.cache_info().currsize, ARRIVAL_TASK in app.tasks)"
    )
    for code, expected in (
        ("import annotation_site.wsgi", "True 1 True"),
        ("import django; django.setup()", "False 0 False"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", f"{code}; {show}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip().splitlines()[-1] == expected, done.stderr


def test_the_wsgi_application_freezes_its_start_up_heap_for_the_cycle_collector():
    # Frozen objects are never walked by the collector again: a request's full collections then
    # cost what the request made, not the whole process (bench/RESULTS-erasure.md).
    env = {key: value for key, value in os.environ.items() if key != "EMBEDDED_TASKS"}
    show = "import gc; print(gc.get_freeze_count() > 10_000)"
    for code, expected in (("import annotation_site.wsgi", "True"), ("import django; django.setup()", "False")):
        done = subprocess.run(
            [sys.executable, "-c", f"{code}; {show}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip().splitlines()[-1] == expected, done.stderr
