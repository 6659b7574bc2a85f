"""`manage.py load_demo` with its snapshot and training runs (test_demo.py's load_demo(training=True)),
loaded once for this module (tests.conftest.rows_for_the_module): each test sees the demo as that
one load leaves it, as if it had loaded it itself. The loads that must start from an empty
database, or leave the training out, are in test_demo.py and test_demo_loaded.py.
"""

import pytest
from django.contrib.auth import get_user_model

from corpus.models import Genre, Pair, ValidationLabel
from demo.training import DEMO_MODELS
from modeling.models import Snapshot, TrainingRun
from tests.conftest import rows_for_the_module
from tests.demo.test_demo import load_demo, row_counts

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def trained_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    """What the first `load_demo` with training printed; the demo, its snapshot files and runs stay until the module ends."""
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("trained-demo")):
        yield load_demo(training=True)


def test_demo_exports_a_snapshot_and_trains_every_demo_model_with_a_genre_matrix(trained_demo):
    snapshot = Snapshot.objects.get()
    assert snapshot.status == "done"
    assert snapshot.row_count == Pair.objects.exclude(dataset__slug__in=["mpe-demo", "demo-decided"]).count()
    names = set(snapshot.files.values_list("name", flat=True))
    assert {
        "train.jsonl",
        "dev_matched.jsonl",
        "dev_mismatched.jsonl",
        "test_matched.tsv",
        "test_mismatched.tsv",
    } <= names
    whole_data_runs = TrainingRun.objects.filter(config__train_genre=None)
    assert sorted(whole_data_runs.values_list("model", flat=True)) == sorted(DEMO_MODELS)
    assert set(TrainingRun.objects.values_list("status", flat=True)) == {"done"}
    for run in whole_data_runs:
        assert run.snapshot_hash == snapshot.content_hash
        assert {"dev_matched", "test_mismatched"} <= set(run.results["accuracy"])
    training_genres = set(Genre.objects.filter(is_training=True).values_list("slug", flat=True))
    per_genre_runs = TrainingRun.objects.exclude(config__train_genre=None)
    assert set(per_genre_runs.values_list("config__train_genre", flat=True)) == training_genres
    assert all("genre_matrix_file" in run.results for run in per_genre_runs)


def test_running_it_twice_creates_and_changes_nothing(trained_demo):
    before = row_counts()
    runs_before = list(TrainingRun.objects.values_list("pk", "status").order_by("pk"))
    snapshots_before = list(Snapshot.objects.values_list("pk", "content_hash").order_by("pk"))
    pairs_before = list(Pair.objects.values().order_by("id"))
    labels_before = list(ValidationLabel.objects.values("pair_id", "position", "worker_id", "label").order_by("id"))
    password_before = get_user_model().objects.get(username="researcher").password

    output = load_demo(training=True)

    assert row_counts() == before
    assert list(TrainingRun.objects.values_list("pk", "status").order_by("pk")) == runs_before
    assert list(Snapshot.objects.values_list("pk", "content_hash").order_by("pk")) == snapshots_before
    assert list(Pair.objects.values().order_by("id")) == pairs_before
    assert (
        list(ValidationLabel.objects.values("pair_id", "position", "worker_id", "label").order_by("id"))
        == labels_before
    )
    assert get_user_model().objects.get(username="researcher").password == password_before
    assert "already loaded: nothing created." in output
