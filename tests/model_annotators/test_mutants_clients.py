"""What a model annotator's job is asked through, at its edges: the endpoint client carries the
annotator's own timeout, requests per minute and the deployment's retry-wait cap; an answer's error
and why-unparseable are cut at 300 characters, no sooner; a run's words are stored as core labels
(the two-way words mapped, anything else no label); and a run's checkpoint is refused when its
SHA-256 is not the recorded one, loaded when it is, and loaded unchecked when none was recorded."""

import hashlib
from pathlib import Path

import pytest

from corpus.models import Dataset, Label
from model_annotators import services
from model_annotators.clients import endpoint_of, load_run_checkpoint, read_answer, stored_label
from model_annotators.endpoint import ChatAnswer
from model_annotators.models import ModelAnnotator, ModelLabel, Outcome
from model_annotators.prompts import Parsed, parse_answer
from model_annotators.scope import CannotLabel
from modeling.models import RunStatus, Snapshot, TrainingRun
from modeling.nets import build_net
from modeling.training.checkpoint import write_checkpoint
from tests import factories

LABELS3 = ["entailment", "neutral", "contradiction"]


def registered(slug: str) -> ModelAnnotator:
    dataset = factories.dataset(slug)
    return services.register_endpoint(
        dataset, name="judge", base_url="http://127.0.0.1:9/v1", model_name="m", requests_per_minute=17
    )


# --- the endpoint client ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_client_carries_the_annotators_timeout_pace_and_the_retry_wait_cap(settings):
    settings.MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS = 2
    annotator = registered("client-settings")
    ModelAnnotator.objects.filter(pk=annotator.pk).update(timeout_seconds=4.5)
    annotator.refresh_from_db()

    client = endpoint_of(annotator)

    # Each differs from ChatEndpoint's own default (30 s, 30 s, 60 a minute).
    assert client.timeout == 4.5
    assert client.retry_wait_max == 2.0 and isinstance(client.retry_wait_max, float)
    assert client.pacer.per_minute == 17


# --- reading an answer ------------------------------------------------------------------------------


def test_a_failed_answers_error_is_kept_to_300_characters():
    row = ModelLabel()
    label = read_answer(row, ChatAnswer(content=None, error="e" * 400), lambda text: parse_answer(text, "validation"))

    assert label == "" and row.outcome == Outcome.FAILED
    assert row.error == "e" * 300


def test_why_an_answer_was_unparseable_is_kept_to_300_characters():
    row = ModelLabel()
    label = read_answer(row, ChatAnswer(content="not json"), lambda text: Parsed(why="w" * 400))

    assert label == "" and row.outcome == Outcome.UNPARSEABLE
    assert row.error == "w" * 300 and row.raw_answer == "not json"


# --- a run's words as stored labels -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "stored"),
    [
        ("entailment", Label.ENTAILMENT),
        ("contradiction", Label.CONTRADICTION),
        ("entailed", Label.ENTAILMENT),  # the two-way words, stored as corpus.labels does
        ("not-entailed", Label.NEUTRAL),
        ("maybe", ""),  # no label: never guessed
        ("", ""),
    ],
)
def test_a_runs_word_is_stored_as_its_core_label_or_none(word, stored):
    assert stored_label(word) == stored


# --- a run's checkpoint -----------------------------------------------------------------------------


def run_with_checkpoint(tmp_path: Path, dataset: Dataset, *, recorded: str | None) -> TrainingRun:
    """A finished run whose checkpoint (a tiny real cbow net) lies on this host; `recorded` is the
    SHA-256 on its row (None: the file's own)."""
    net = build_net("cbow", 12, num_classes=3, embedding_dim=8, hidden_dim=8)
    path = write_checkpoint(
        tmp_path / "run.safetensors",
        model="cbow",
        config={"embedding_dim": 8, "hidden_dim": 8},
        epoch=1,
        vocab=[f"w{i}" for i in range(12)],
        labels=LABELS3,
        state_dict=net.state_dict(),
    )
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    snapshot = Snapshot.objects.create(datasets=[dataset.slug])
    return TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash="h",
        model="cbow",
        status=RunStatus.DONE,
        checkpoint_path=str(path),
        checkpoint_sha256=actual if recorded is None else recorded,
    )


@pytest.mark.django_db
def test_a_checkpoint_whose_sha256_is_the_recorded_one_is_loaded_and_labels(tmp_path):
    run = run_with_checkpoint(tmp_path, factories.dataset("sha-right"), recorded=None)

    model = load_run_checkpoint(run)

    assert model.predict("w1 w2", "w3") in LABELS3


@pytest.mark.django_db
def test_a_checkpoint_without_a_recorded_sha256_is_loaded_unchecked(tmp_path):
    run = run_with_checkpoint(tmp_path, factories.dataset("sha-none"), recorded="")

    assert load_run_checkpoint(run).predict("w1", "w2") in LABELS3


@pytest.mark.django_db
def test_a_checkpoint_that_is_not_the_recorded_one_is_refused_and_says_which(tmp_path):
    run = run_with_checkpoint(tmp_path, factories.dataset("sha-wrong"), recorded="0" * 64)
    actual = hashlib.sha256(Path(run.checkpoint_path).read_bytes()).hexdigest()

    with pytest.raises(CannotLabel) as refused:
        load_run_checkpoint(run)

    assert str(refused.value) == f"the checkpoint of run {run.pk} is not the one recorded (SHA-256 {actual[:12]}…)"
