"""The composition root registers every task app into the crowd layer (crowd.registry), so the
crowd layer releases every claim, sends every study to its task and asks the qualification test.

crowd.arrival releases a worker's open claims (another study session, an exclusion) over the claim
models registered in crowd.registry by annotation_site.wiring; it does not scan the app registry
(a coupling the layering test cannot see). A claim model added to a task app and left out of
CLAIM_MODELS would keep its tasks held after its worker moved on or was excluded: this test names it.
"""

import os
import subprocess
import sys

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from annotation_site import wiring
from crowd import registry
from crowd.models import TaskClaim, TaskKind
from modeling.snapshots import extra_files
from quality.flag_rows import approval_marks
from quality.qualification import admission_check
from tests.conftest import REPO_ROOT


def test_every_concrete_task_claim_is_registered():
    # The test may scan the registry: it checks the explicit list against what is installed.
    concrete = {model for model in apps.get_models() if issubclass(model, TaskClaim)}
    assert concrete, "no concrete TaskClaim found: the check would pass vacuously"
    registered = registry.registered().claim_models
    missing = sorted(model._meta.label for model in concrete - set(registered))
    assert not missing, f"task claims the crowd layer would never release: {missing}"
    assert len(set(registered)) == len(registered)


def test_the_root_registered_the_task_apps_at_start():
    """SiteConfig.ready registered the wiring: every kind of study has its task, and the quality
    app's check and flags are the ones crowd asks."""
    task_apps = registry.registered()
    assert set(task_apps.next_task_url) == set(TaskKind)
    assert task_apps.next_task_url == wiring.NEXT_TASK_URL and task_apps.claim_models == wiring.CLAIM_MODELS
    assert task_apps.qualification_check is admission_check and task_apps.worker_flags is approval_marks
    assert extra_files.registered() == wiring.SNAPSHOT_EXTRA_FILES


def test_a_process_without_the_registration_fails_loudly():
    """Without the root's registration crowd would release no claims and pay flagged workers
    unseen; it refuses instead (the registry is emptied here and put back)."""
    saved_crowd, saved_files = list(registry._registered), list(extra_files._registered)
    registry._registered.clear()
    extra_files._registered.clear()
    try:
        with pytest.raises(ImproperlyConfigured, match="SiteConfig"):
            registry.release_open_claims_of_workers([1], [1])
        with pytest.raises(ImproperlyConfigured, match="SiteConfig"):
            registry.next_task_url(TaskKind.WRITING)
        with pytest.raises(ImproperlyConfigured, match="SiteConfig"):
            extra_files.registered()
    finally:
        registry._registered[:] = saved_crowd
        extra_files._registered[:] = saved_files


@pytest.mark.django_db
def test_an_export_without_the_registration_fails_with_its_reason(settings, tmp_path):
    """A snapshot exported where the root registered no writers is failed, saying why, not left
    pending nor done without validation's files."""
    from base.long_tasks import JobStatus
    from modeling.snapshots.services import create_snapshot, export_snapshot

    settings.SNAPSHOT_DIR = str(tmp_path)
    snapshot = create_snapshot(None)
    saved = list(extra_files._registered)
    extra_files._registered.clear()
    try:
        with pytest.raises(ImproperlyConfigured):
            export_snapshot(snapshot)
    finally:
        extra_files._registered[:] = saved
    assert snapshot.status == JobStatus.FAILED and "SiteConfig" in snapshot.error


def test_a_management_command_process_has_the_task_apps_registered():
    """A fresh process that sets Django up as manage.py does (commands, and so gunicorn and Celery
    workers, which call django.setup too) has the root's registration, without importing the root."""
    code = (
        "import django; django.setup(); "
        "from crowd import registry; from modeling.snapshots import extra_files; "
        "print(sorted(registry.registered().next_task_url), len(extra_files.registered()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "annotation_site.settings"},
    ).stdout
    assert out.strip() == f"{sorted(TaskKind)} 1", out
