"""The demo's snapshot and baseline runs, so that every dashboard figure has something to show:
small models (50-d, a few epochs) trained in-process on the demo's own pairs, in seconds."""

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command

from base.long_tasks import JobStatus
from modeling.models import RunStatus, Snapshot, TrainingRun
from modeling.snapshots.services import create_snapshot, export_snapshot
from modeling.training.services import execute_training_run, launch_training_run

DEMO_MODELS = ("majority", "hypothesis_only", "cbow")
DEMO_CONFIG = {"embedding_dim": 50, "hidden_dim": 50, "epochs": 4, "patience": 2, "batch_size": 16}


def ensure_demo_snapshot_and_runs(dataset: Any, researcher_username: str, stdout: Any = None) -> tuple[Any, list[int]]:
    """A done snapshot of the demo dataset and one done run per demo model plus a genre matrix; idempotent."""
    researcher = get_user_model().objects.get(username=researcher_username)
    snapshot = (
        Snapshot.objects.filter(datasets=[dataset.slug], status=JobStatus.DONE, created_by=researcher)
        .order_by("pk")
        .first()
    )
    if snapshot is None:
        snapshot = create_snapshot(researcher, datasets=[dataset.slug])
        export_snapshot(snapshot)
        snapshot.refresh_from_db()
    made = []
    for model in DEMO_MODELS:
        done = TrainingRun.objects.filter(
            snapshot=snapshot, model=model, status=RunStatus.DONE, config__train_genre=None
        )
        if not done.exists():
            run = launch_training_run(snapshot, model, config=DEMO_CONFIG, user=researcher, enqueue=False)
            execute_training_run(run.pk)
            made.append(run.pk)
    if not TrainingRun.objects.filter(snapshot=snapshot, results__has_key="genre_matrix_file").exists():
        call_command(
            "genre_matrix",
            snapshot=snapshot.pk,
            model="cbow",
            config=json.dumps(DEMO_CONFIG),
            bars_on_a_terminal_only=True,
            stdout=stdout,
        )
    return snapshot, made
