"""A GPU node's process starts with no database settings at all, and any ORM use there fails loudly."""

import subprocess
import sys

from tests.conftest import REPO_ROOT

from .conftest import gpu_node_env

PROBE = """
import django
django.setup()
from django.db import connection
from annotation_site.celery import app
from django.core.exceptions import ImproperlyConfigured
from modeling.models import TrainingRun
from modeling.training.services import run_reporter
app.loader.import_default_modules()
print("engine", connection.settings_dict["ENGINE"])
print("task", "modeling.tasks.run_training" in app.tasks)
print("reporter", type(run_reporter()).__name__)
try:
    TrainingRun.objects.count()
except ImproperlyConfigured as exc:
    print("orm refused")
"""


def test_a_gpu_node_imports_the_training_task_without_any_database_settings(tmp_path):
    env = gpu_node_env("http://platform.invalid:8000", tmp_path / "node")
    assert not any(key.startswith("DATABASE") for key in env)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], check=False, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "engine django.db.backends.dummy" in lines
    assert "task True" in lines and "reporter HttpReporter" in lines
    assert "orm refused" in lines


def test_a_node_configured_with_the_old_variable_worker_token_is_still_a_node(tmp_path):
    """NODE_TOKEN was WORKER_TOKEN before the names were settled (docs/gpu-nodes.md): the old one still works."""
    env = gpu_node_env("http://platform.invalid:8000", tmp_path / "node")
    env["WORKER_TOKEN"] = env.pop("NODE_TOKEN")
    probe = "import django; django.setup(); from django.conf import settings; print('token', settings.NODE_TOKEN)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe + PROBE.split("django.setup()", 1)[1]],
        check=False,
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"token {env['WORKER_TOKEN']}" in lines
    assert "engine django.db.backends.dummy" in lines and "reporter HttpReporter" in lines
