"""`genre_matrix --packed`: the genres' runs trained at once (one vmap'd step for all, a GPU's way),
each run with its own progress on its page, its own checkpoint and results, and the same table as
training them one by one."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from modeling.models import RunStatus, TrainingRun
from modeling.training import runner
from modeling.training.checkpoint import check_checkpoint
from modeling.training.services import DatabaseReporter, execute_packed_training_runs, launch_training_run

from .training_fixtures import learnable_rows, make_snapshot

# Dropout 0: a packed run then computes its lone run's sums (vmap draws masks from one stream).
CONFIG = {"embedding_dim": 8, "hidden_dim": 8, "epochs": 3, "batch_size": 16, "cpu_threads": 1, "dropout": 0}


def _snapshot(tmp_path: Path):
    splits = {
        "train": learnable_rows(90, 1),
        "dev_matched": learnable_rows(15, 2),
        "test_matched": learnable_rows(25, 3),
    }
    return make_snapshot(tmp_path / "snap", splits)


def _matrix(snapshot, *extra: str) -> tuple[dict, list[TrainingRun]]:
    before = set(TrainingRun.objects.values_list("pk", flat=True))
    call_command(
        "genre_matrix",
        "--snapshot",
        str(snapshot.pk),
        "--model",
        "bilstm",
        "--genres",
        "fiction,travel,slate",
        "--config",
        json.dumps(dict(CONFIG, step="graphed")),
        *extra,
        stdout=StringIO(),
    )
    runs = list(TrainingRun.objects.exclude(pk__in=before).order_by("pk"))
    return json.loads(Path(runs[0].results["genre_matrix_file"]).read_text()), runs


@pytest.mark.django_db
def test_a_packed_genre_matrix_is_the_one_by_one_table_and_each_run_keeps_its_own_record(tmp_path, capsys) -> None:
    snapshot = _snapshot(tmp_path)
    one_by_one, _ = _matrix(snapshot)
    capsys.readouterr()
    packed, runs = _matrix(snapshot, "--packed")
    bars = capsys.readouterr().err

    assert packed["accuracy"] == one_by_one["accuracy"]
    for run in runs:
        assert run.status == RunStatus.DONE, run.error
        # Its own page's progress: every epoch it ran, its steps to the end, its heartbeat.
        assert run.epoch == run.results["epochs_run"] == len(run.history) >= 1
        assert run.step == run.total_steps * run.epoch // run.total_epochs
        assert run.heartbeat_at is not None and run.finished_at is not None
        assert [row["epoch"] for row in run.history] == list(range(1, run.epoch + 1))
        # Its own checkpoint, checked as a GPU node's upload is.
        assert run.checkpoint_sha256 and check_checkpoint(run.checkpoint_path) is not None
        assert f"bilstm on {run.config['train_genre']}" in bars
    # Three different runs, not one model reported three times.
    assert len({run.checkpoint_sha256 for run in runs}) == 3


@pytest.mark.django_db
def test_a_run_taken_from_the_pack_is_left_to_its_new_holder_and_the_others_finish(tmp_path) -> None:
    snapshot = _snapshot(tmp_path)
    runs = [
        launch_training_run(snapshot, "cbow", config=dict(CONFIG, train_genre=genre), enqueue=False)
        for genre in ("fiction", "travel")
    ]
    taken = runs[0].pk

    class CancelledMidway(DatabaseReporter):
        """The first run's lease is lost at its first epoch (cancelled, reaped or taken over)."""

        def progress(self, spec, fields):
            if spec.run_id == taken and fields["epoch"] >= 1:
                return False
            return super().progress(spec, fields)

    outcomes = runner.execute_packed_attempts(CancelledMidway(), [run.pk for run in runs], "test-host", None, 0.0)

    assert outcomes == [{"run": taken, "status": "abandoned"}, {"run": runs[1].pk, "status": "done"}]
    left, finished = (TrainingRun.objects.get(pk=run.pk) for run in runs)
    assert left.status == RunStatus.RUNNING and not left.checkpoint_sha256 and not left.results
    assert finished.status == RunStatus.DONE and finished.checkpoint_sha256


@pytest.mark.django_db
def test_runs_that_cannot_share_a_step_all_fail_with_the_reason(tmp_path) -> None:
    snapshot = _snapshot(tmp_path)
    runs = [
        launch_training_run(
            snapshot, "cbow", config=dict(CONFIG, hidden_dim=width, train_genre="fiction"), enqueue=False
        )
        for width in (8, 16)
    ]

    outcomes = execute_packed_training_runs([run.pk for run in runs])

    assert [outcome["status"] for outcome in outcomes] == ["failed", "failed"]
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED and "must share hidden_dim" in run.error


@pytest.mark.django_db
def test_packed_refuses_the_majority_baseline(tmp_path) -> None:
    snapshot = _snapshot(tmp_path)
    with pytest.raises(CommandError, match="majority baseline"):
        call_command("genre_matrix", "--snapshot", str(snapshot.pk), "--packed", "--queue", "--model", "majority")
    with pytest.raises(CommandError, match="majority baseline"):
        call_command("genre_matrix", "--snapshot", str(snapshot.pk), "--packed", "--model", "majority")
    assert not TrainingRun.objects.exists()
