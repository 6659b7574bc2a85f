"""`manage.py load_demo`: premises for every genre, accounts, studies and consistent demo pairs."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from corpus.models import (
    Dataset,
    FaqEntry,
    Genre,
    Pair,
    Premise,
    PromptExample,
    PromptFamily,
    ValidationLabel,
    Worker,
)
from crowd.models import Study
from demo import content as demo_content
from demo.training import DEMO_MODELS
from modeling.models import Snapshot, TrainingRun

pytestmark = pytest.mark.django_db


def load_demo(training=False):
    """The demo command; its snapshot and training runs only where a test is about them (they take seconds)."""
    out = StringIO()
    # The artifacts demo (extra writers' pairs on these premises) has its own test:
    # tests/artifacts/test_demo_artifacts.py; so has the quality demo: tests/quality/test_demo_quality.py.
    call_command(
        "load_demo",
        "--no-artifacts",
        "--no-quality",
        "--no-adversarial",  # tests/adversarial/test_demo_adversarial.py
        *([] if training else ["--no-training"]),
        stdout=out,
    )
    return out.getvalue()


def row_counts():
    models = [
        Dataset,
        Genre,
        PromptFamily,
        PromptExample,
        FaqEntry,
        Premise,
        Pair,
        ValidationLabel,
        Worker,
        Study,
        get_user_model(),
    ]
    return {model.__name__: model.objects.count() for model in models}


def test_demo_dataset_follows_the_default_dataset_setting(settings):
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": "demo-elsewhere"}
    dataset = demo_content.ensure_dataset()
    assert (dataset.slug, dataset.train_validation_fraction) == ("demo-elsewhere", 0.1)
    assert demo_content.ensure_dataset() == dataset


def test_running_it_twice_creates_and_changes_nothing():
    load_demo(training=True)
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


def test_load_demo_restores_genres_and_families_after_a_flush():
    Genre.objects.all().delete()
    PromptFamily.objects.all().delete()
    load_demo()
    assert Genre.objects.count() == 11 and PromptFamily.objects.count() == 6
    # Plus the MPE demo's two caption sets and the decided-rule demo's premise (demo/stopping.py).
    assert Premise.objects.exclude(dataset__slug__in=["mpe-demo", "demo-decided"]).count() == 110


def test_demo_exports_a_snapshot_and_trains_every_demo_model_with_a_genre_matrix():
    load_demo(training=True)

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


def test_demo_has_recast_pairs_with_provenance_queued_for_the_two_way_task(client):
    from corpus.models import LabelScheme, PairProvenance

    out = StringIO()
    call_command("load_demo", "--no-training", stdout=out)  # the recast demo comes with the extra demos
    output = out.getvalue()
    recast = Dataset.objects.get(slug="demo-recast")
    assert recast.label_scheme == LabelScheme.TWO_WAY and recast.grammaticality_judgments == 3
    pairs = Pair.objects.filter(dataset=recast)
    assert pairs.count() == 10 and not pairs.filter(needs_validation=False).exists()
    assert PairProvenance.objects.filter(pair__dataset=recast, corpus="Kotzias et. al. 2015").count() == 10
    assert "demo-recast" in output and "/validate/grammaticality/" in output
    # The printed two-way study gives a Prolific arrival a batch of these pairs with the two-way buttons.
    url = next(line.split()[-3] for line in output.splitlines() if "two-way validation study" in line)
    page = client.get(url.replace("http://127.0.0.1:8000", ""), follow=True).content.decode()
    assert "Not entailed" in page and 'data-scheme="two_way"' in page


def test_demo_validation_labels_come_with_their_claims_and_a_demo_validator_can_submit_a_batch():
    """The demo's labels are added outside the task; each gets its submitted claim, so a demo validator's
    claim history is true and the batch they are served holds no pair they labelled (else every submit
    of that batch would be refused)."""
    from validation import services as validation_services
    from validation.models import ValidationClaim

    load_demo()
    labels = ValidationLabel.objects.filter(position__gte=2, worker__isnull=False, pair__premise__source="demo")
    assert labels.exists()
    claimed = set(ValidationClaim.objects.values_list("worker_id", "pair_id"))
    assert all((label.worker_id, label.pair_id) in claimed for label in labels)
    validator = Worker.objects.get(user__username=demo_content.DEMO_VALIDATORS[0])
    batch = validation_services.claim_validation_batch(validator)
    assert batch is not None
    served = list(ValidationClaim.objects.filter(batch=batch, is_catch_trial=False).values_list("pair_id", flat=True))
    assert not ValidationLabel.objects.filter(worker=validator, pair_id__in=served).exists()
    answers = dict.fromkeys(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True), "neutral")
    validation_services.submit_validation_batch(validator, batch, answers)
    assert ValidationClaim.objects.filter(batch=batch, status="submitted").count() == len(answers)
