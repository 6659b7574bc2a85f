"""When a run stops before its last epoch: early stopping on dev (`patience`) and the time limit
(`max_minutes`). The clock of the time limit is the loop's, driven by the test: no sleeps."""

import pytest
import torch

from modeling.training import loop
from modeling.training.checkpoint import check_checkpoint
from modeling.training.data import load_snapshot

from .training_fixtures import learnable_rows, write_snapshot_files

torch.set_num_threads(1)
FAST = {"embedding_dim": 8, "hidden_dim": 8, "batch_size": 16, "lr": 0.05, "cpu_threads": 1, "embeddings": "random"}


@pytest.fixture
def data(tmp_path):
    splits = {
        "train": learnable_rows(120, 1),
        "dev_matched": learnable_rows(30, 2),
        "test_matched": learnable_rows(30, 3),
    }
    write_snapshot_files(tmp_path / "snap", splits)
    return load_snapshot(tmp_path / "snap")


def test_early_stopping_ends_patience_epochs_after_the_best_dev_score_and_keeps_the_best(data, tmp_path):
    checkpoint = tmp_path / "run.safetensors"
    results, _ = loop.train(data, "cbow", dict(FAST, epochs=40, patience=2), checkpoint_path=checkpoint)
    history, best = results["history"], results["best_epoch"]
    dev = [h["dev_accuracy"] for h in history]
    assert results["stopped_by"] == "early stopping"
    assert results["epochs_run"] == len(history) == best + 2 < 40
    # The best epoch beats every earlier one; the `patience` epochs after it do not beat it.
    assert all(dev[best - 1] > score for score in dev[: best - 1])
    assert all(score <= dev[best - 1] for score in dev[best:])
    # What is kept and evaluated is the best epoch's model, not the last one's.
    assert check_checkpoint(checkpoint).epoch == best
    assert results["accuracy"]["dev_matched"] == pytest.approx(dev[best - 1], abs=1e-6)


def test_without_a_dev_split_patience_never_stops_a_run(tmp_path):
    write_snapshot_files(tmp_path / "snap", {"train": learnable_rows(60, 1), "test_matched": learnable_rows(20, 2)})
    results, _ = loop.train(load_snapshot(tmp_path / "snap"), "cbow", dict(FAST, epochs=5, patience=1))
    assert (results["stopped_by"], results["epochs_run"]) == ("epochs", 5)


class Clock:
    """The loop's `time` module, with a monotonic clock the test moves."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


@pytest.mark.parametrize(
    "max_minutes, epochs_run, stopped_by",
    [
        (2.5, 3, "max_minutes"),  # 61 s an epoch: over 150 s after the third epoch
        (0.5, 1, "max_minutes"),  # the first epoch always ends
        (None, 6, "epochs"),  # no limit: every epoch
        (10, 6, "epochs"),  # a limit never reached
    ],
)
def test_the_time_limit_stops_after_the_epoch_that_crosses_it(data, monkeypatch, max_minutes, epochs_run, stopped_by):
    clock = Clock()
    monkeypatch.setattr(loop, "time", clock)

    def each_epoch_takes_61_seconds(event):
        if event["kind"] == "epoch":
            clock.now += 61

    config = dict(FAST, epochs=6, patience=100, max_minutes=max_minutes)
    results, _ = loop.train(data, "cbow", config, on_progress=each_epoch_takes_61_seconds)
    assert (results["epochs_run"], results["stopped_by"]) == (epochs_run, stopped_by)
    assert results["seconds"] == 61 * epochs_run


def test_the_command_line_bar_of_a_run_stopped_early_ends_at_what_really_ran():
    import io

    from tqdm import tqdm

    from modeling.management.commands.train import finish_bar
    from modeling.models import RunStatus, TrainingRun

    stream = io.StringIO()
    run = TrainingRun(
        status=RunStatus.DONE, step=40, total_steps=40, results={"stopped_by": "early stopping", "epochs_run": 4}
    )
    with tqdm(total=100, unit="step", file=stream, ascii=True) as bar:
        bar.update(40)  # 4 of 10 planned epochs ran
        finish_bar(bar, run)
    final = stream.getvalue().split("\r")[-1]
    assert "100%" in final and "40/40" in final and "stopped by early stopping" in final
    # A run that ran every planned step keeps its bar as it is.
    stream = io.StringIO()
    with tqdm(total=100, file=stream, ascii=True) as bar:
        bar.update(100)
        finish_bar(bar, TrainingRun(status=RunStatus.DONE, results={"stopped_by": "epochs"}))
    assert "100/100" in stream.getvalue().split("\r")[-1]
