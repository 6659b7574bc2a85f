"""Writing checks (model_annotators/writing_checks.py) at the edges: an endpoint is asked its
current writing prompt (never its labels' prompt) with the premise, the hypothesis and the
intended label in the dataset's words, and each answer becomes an unsaved check of that pair,
annotator and key; an endpoint without a writing prompt cannot check; a run's check carries its
label, its probability to four places and its word, fits only when its label is the writer's, and
is unparseable when its word is no label; the researchers' reads show each pair's latest check by
the annotator its study chose (no other's, no other pair's), and count per writer the pairs that
chosen annotators judged, and those they judged not fitting."""

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
from django.utils import timezone

from corpus.labels import TWO_WAY_SCHEME, to_scheme
from corpus.models import Dataset, Label, Pair, Worker
from crowd.models import Study, TaskKind
from model_annotators import services
from model_annotators.clients import load_run_checkpoint
from model_annotators.models import (
    AnnotatorKind,
    ModelAnnotator,
    ModelUse,
    Outcome,
    PromptVersion,
    Verdict,
    WritingCheck,
)
from model_annotators.prompts import fill, with_data_notice
from model_annotators.scope import CannotLabel, current_prompt
from model_annotators.writing_checks import checks_by_writer, checks_of_pairs, writing_checker
from modeling.models import RunStatus, Snapshot, TrainingRun
from modeling.nets import build_net
from modeling.training.checkpoint import write_checkpoint
from tests import factories

from .conftest import API_KEY
from .test_mutants_endpoint import Start, completion, scripted  # noqa: F401  (the fixture)

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
MakeWorker = Callable[..., Worker]


def written(dataset: Dataset, items: Sequence[tuple[str, str]], writer: Worker | None = None) -> list[Pair]:
    """Pairs as a writer made them: (hypothesis, intended label), the writer's label only."""
    genre = factories.genre("fiction")
    return [
        factories.pair(dataset, factories.premise(dataset, genre), [label], hypothesis=hypothesis, author=writer)
        for hypothesis, label in items
    ]


def verdict(word: str, reason: str) -> bytes:
    return completion(json.dumps({"verdict": word, "reason": reason}))


def run_annotator(tmp_path: Path, dataset: Dataset, labels: list[str]) -> ModelAnnotator:
    """A run annotator whose checkpoint (a tiny untrained cbow net, its words `labels`) lies on this host."""
    torch.manual_seed(7)  # the same untrained weights every run
    net = build_net("cbow", 12, num_classes=len(labels), embedding_dim=8, hidden_dim=8)
    path = write_checkpoint(
        tmp_path / f"run-{len(labels)}-{labels[0]}.safetensors",
        model="cbow",
        config={"embedding_dim": 8, "hidden_dim": 8},
        epoch=1,
        vocab=[f"w{i}" for i in range(12)],
        labels=labels,
        state_dict=net.state_dict(),
    )
    run = TrainingRun.objects.create(
        snapshot=Snapshot.objects.create(datasets=[dataset.slug]),
        snapshot_hash="h",
        model="cbow",
        status=RunStatus.DONE,
        checkpoint_path=str(path),
        checkpoint_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    return ModelAnnotator.objects.create(name="run-judge", dataset=dataset, kind=AnnotatorKind.RUN, training_run=run)


def study_of(dataset: Dataset, slug: str = "") -> Study:
    return Study.objects.create(
        slug=slug or f"s-{dataset.slug}",
        name="s",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="C",
    )


def annotator_of(dataset: Dataset, name: str) -> ModelAnnotator:
    return ModelAnnotator.objects.create(
        name=name, dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )


def check(annotator: ModelAnnotator, pair: Pair, **fields: Any) -> WritingCheck:
    values: dict[str, Any] = {
        "asked_with": "writing-v1",
        "outcome": Outcome.LABELLED,
        "verdict": Verdict.FITS,
        "intended_label": pair.author_label,
    }
    return WritingCheck.objects.create(annotator=annotator, pair=pair, **(values | fields))


def aged(row: WritingCheck, days: int) -> None:
    WritingCheck.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(days=days))


# --- an endpoint's checks ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_endpoint_is_asked_its_writing_prompt_with_the_intended_label_in_the_datasets_words(
    scripted: Start,  # noqa: F811
) -> None:
    url, seen = scripted(
        [
            (200, {}, verdict("does-not-fit", "The premise says otherwise.")),
            (200, {}, verdict("nonsense", "Not a sentence.")),
        ]
    )
    dataset = factories.dataset("two-way-checked", label_scheme=TWO_WAY_SCHEME)
    first, second = written(dataset, [("A dog naps.", N), ("Dog the of.", E)])
    annotator = services.register_endpoint(
        dataset, name="checker", base_url=f"{url}/v1", model_name="m", api_key=API_KEY, max_retries=0
    )
    ModelAnnotator.objects.filter(pk=annotator.pk).update(requests_per_minute=0)
    annotator.refresh_from_db()
    prompt, labels_prompt = current_prompt(annotator, "writing"), current_prompt(annotator)
    assert prompt is not None and labels_prompt is not None
    assert (prompt.system, prompt.template) != (labels_prompt.system, labels_prompt.template)

    rows = writing_checker(annotator)([first, second], "writing-v1")

    sent = [request["body"]["messages"] for request in seen.requests]
    assert sent == [
        [
            {"role": "system", "content": with_data_notice(prompt.system)},
            {"role": "user", "content": fill(prompt.template, pair.premise.text, pair.hypothesis, words)},
        ]
        for pair, words in [(first, "not-entailed"), (second, "entailed")]
    ]
    assert to_scheme(TWO_WAY_SCHEME, N) == "not-entailed"
    assert [(row.annotator, row.pair, row.asked_with, row.intended_label) for row in rows] == [
        (annotator, first, "writing-v1", N),
        (annotator, second, "writing-v1", E),
    ]
    assert all(row.pk is None for row in rows)  # unsaved: the job saves them
    assert [(row.outcome, row.verdict, row.reason) for row in rows] == [
        (Outcome.LABELLED, Verdict.DOES_NOT_FIT, "The premise says otherwise."),
        (Outcome.LABELLED, Verdict.NONSENSE, "Not a sentence."),
    ]


@pytest.mark.django_db
def test_an_endpoint_without_a_writing_prompt_cannot_check() -> None:
    dataset = factories.dataset("no-writing-prompt")
    annotator = annotator_of(dataset, "labels-only")
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")

    with pytest.raises(CannotLabel, match=r"^the annotator has no writing prompt$"):
        writing_checker(annotator)


# --- a run's checks ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_runs_check_fits_only_when_its_label_is_the_writers_and_keeps_its_probability_to_four_places(
    tmp_path: Path,
) -> None:
    dataset = factories.dataset("run-checked")
    annotator = run_annotator(tmp_path, dataset, ["entailment", "neutral", "contradiction"])
    pairs = written(dataset, [("A dog naps.", E), ("A cat sits.", E)])
    model = load_run_checkpoint(annotator.training_run)
    predicted = model.predict_many_with_probability([(pair.premise.text, pair.hypothesis) for pair in pairs])
    (word, probability), (other_word, other_probability) = predicted
    # The first pair's writer meant the run's label; the second's another one.
    other_intended = next(label for label in (E, N, C) if label != other_word)
    Pair.objects.filter(pk=pairs[0].pk).update(author_label=word)
    Pair.objects.filter(pk=pairs[1].pk).update(author_label=other_intended)
    pairs = [Pair.objects.get(pk=pair.pk) for pair in pairs]
    assert any(round(p, 4) != round(p, 5) for p in (probability, other_probability))

    rows = writing_checker(annotator)(pairs, "run-1")

    assert [
        (row.annotator, row.pair, row.asked_with, row.intended_label, row.model_label, row.raw_answer) for row in rows
    ] == [
        (annotator, pairs[0], "run-1", word, word, word),
        (annotator, pairs[1], "run-1", other_intended, other_word, other_word),
    ]
    assert [row.probability for row in rows] == [round(probability, 4), round(other_probability, 4)]
    assert [(row.outcome, row.verdict) for row in rows] == [
        (Outcome.LABELLED, Verdict.FITS),
        (Outcome.LABELLED, Verdict.DOES_NOT_FIT),
    ]


@pytest.mark.django_db
def test_a_runs_word_that_is_no_label_is_an_unparseable_check_without_verdict(tmp_path: Path) -> None:
    dataset = factories.dataset("run-unparseable")
    annotator = run_annotator(tmp_path, dataset, ["maybe", "perhaps"])
    (pair,) = written(dataset, [("A dog naps.", E)])

    (row,) = writing_checker(annotator)([pair], "run-2")

    assert row.outcome == Outcome.UNPARSEABLE and row.verdict == "" and row.model_label == ""
    assert row.raw_answer in {"maybe", "perhaps"} and row.intended_label == E


# --- the researchers' reads -------------------------------------------------------------------------


@pytest.mark.django_db
def test_each_pair_shows_the_latest_check_of_the_annotator_its_study_chose_only() -> None:
    shown, silent, elsewhere = (factories.dataset(slug) for slug in ("shown-checks", "silent-checks", "elsewhere"))
    chosen, other, far = annotator_of(shown, "chosen"), annotator_of(shown, "other"), annotator_of(elsewhere, "far")
    ModelUse.objects.create(study=study_of(shown), writing_checks_annotator=chosen)
    ModelUse.objects.create(study=study_of(silent), adjudication_help=True)  # no writing checks
    ModelUse.objects.create(study=study_of(elsewhere), writing_checks_annotator=far)
    latest, tied, unanswered, not_asked = written(shown, [("h1", E), ("h2", N), ("h3", C), ("h4", E)])
    (quiet,) = written(silent, [("h5", E)])

    check(
        chosen,
        latest,
        asked_with="run-9",
        verdict=Verdict.DOES_NOT_FIT,
        reason="The premise says otherwise.",
        model_label=N,
        probability=0.8123,
    )
    aged(check(chosen, latest, asked_with="writing-v2", verdict=Verdict.FITS), days=2)  # later pk, older check
    aged(check(chosen, latest, asked_with="writing-v1", verdict=Verdict.NONSENSE), days=3)
    check(other, latest, verdict=Verdict.NONSENSE)  # not the study's choice
    check(far, latest, verdict=Verdict.NONSENSE)  # another study's choice
    first_tie = check(chosen, tied, asked_with="writing-v1")
    second_tie = check(chosen, tied, asked_with="writing-v2", verdict=Verdict.DOES_NOT_FIT)
    # One moment for both, the later row's set last (stored after the earlier one's).
    WritingCheck.objects.filter(pk=second_tie.pk).update(created_at=first_tie.created_at)
    check(chosen, unanswered, outcome=Outcome.UNPARSEABLE, verdict="")
    check(chosen, not_asked, verdict=Verdict.NONSENSE)  # a pair not asked about
    check(chosen, quiet, verdict=Verdict.NONSENSE)  # a pair whose study chose no checker

    checks = checks_of_pairs([(pair.pk, pair.dataset_id) for pair in (latest, tied, unanswered, quiet)])

    assert checks == {
        latest.pk: [
            {
                "model": "chosen",
                "outcome": Outcome.LABELLED,
                "verdict": Verdict.DOES_NOT_FIT,
                "verdict_words": "does not fit its intended label",
                "reason": "The premise says otherwise.",
                "model_label": N,
                "probability": 0.8123,
                "asked_with": "run-9",
            }
        ],
        tied.pk: [
            {
                "model": "chosen",
                "outcome": Outcome.LABELLED,
                "verdict": Verdict.DOES_NOT_FIT,
                "verdict_words": "does not fit its intended label",
                "reason": "",
                "model_label": "",
                "probability": None,
                "asked_with": "writing-v2",
            }
        ],
        unanswered.pk: [
            {
                "model": "chosen",
                "outcome": Outcome.UNPARSEABLE,
                "verdict": "",
                "verdict_words": "",
                "reason": "",
                "model_label": "",
                "probability": None,
                "asked_with": "writing-v1",
            }
        ],
    }


@pytest.mark.django_db
def test_a_pair_of_two_datasets_checkers_shows_each_checkers_latest_check() -> None:
    first, second = factories.dataset("checks-one"), factories.dataset("checks-two")
    one, two = annotator_of(first, "one"), annotator_of(second, "two")
    ModelUse.objects.create(study=study_of(first), writing_checks_annotator=one)
    ModelUse.objects.create(study=study_of(second), writing_checks_annotator=two)
    (pair,) = written(first, [("h", E)])
    (other_pair,) = written(second, [("h", N)])
    check(one, pair, verdict=Verdict.FITS)
    check(two, pair, verdict=Verdict.NONSENSE)  # a chosen checker of the other dataset checked it too
    check(two, other_pair, verdict=Verdict.FITS)

    checks = checks_of_pairs([(pair.pk, pair.dataset_id), (other_pair.pk, other_pair.dataset_id)])

    assert [(entry["model"], entry["verdict"]) for entry in checks[pair.pk]] == [
        ("one", Verdict.FITS),
        ("two", Verdict.NONSENSE),
    ]
    assert [(entry["model"], entry["verdict"]) for entry in checks[other_pair.pk]] == [("two", Verdict.FITS)]


@pytest.mark.django_db
def test_no_study_choosing_a_checker_shows_no_checks() -> None:
    dataset = factories.dataset("unchosen-checks")
    annotator = annotator_of(dataset, "unchosen")
    (pair,) = written(dataset, [("h", E)])
    check(annotator, pair)

    assert checks_of_pairs([(pair.pk, pair.dataset_id)]) == {}


@pytest.mark.django_db
def test_each_writer_counts_the_pairs_chosen_checkers_judged_and_those_not_fitting(make_worker: MakeWorker) -> None:
    dataset = factories.dataset("writer-checks")
    chosen, other = annotator_of(dataset, "chosen"), annotator_of(dataset, "other")
    ModelUse.objects.create(study=study_of(dataset), writing_checks_annotator=chosen)
    writer, unasked, unchecked = make_worker(), make_worker(), make_worker()
    fits, wrong, nonsense, unanswered, elsewhere = written(
        dataset, [("h1", E), ("h2", N), ("h3", C), ("h4", E), ("h5", N)], writer=writer
    )
    (theirs,) = written(dataset, [("h6", E)], writer=unasked)
    check(chosen, fits, verdict=Verdict.FITS)
    check(chosen, fits, asked_with="writing-v2", verdict=Verdict.FITS)  # checked twice: one pair
    check(chosen, wrong, verdict=Verdict.DOES_NOT_FIT)
    check(chosen, wrong, asked_with="writing-v2", verdict=Verdict.NONSENSE)  # flagged twice: one pair
    check(chosen, nonsense, verdict=Verdict.NONSENSE)
    check(chosen, unanswered, outcome=Outcome.UNPARSEABLE, verdict="")  # no judgement: not counted
    check(other, elsewhere, verdict=Verdict.DOES_NOT_FIT)  # not a chosen checker
    check(chosen, theirs, verdict=Verdict.NONSENSE)  # a writer not asked about

    counts = checks_by_writer([writer.pk, unchecked.pk])

    assert counts == {writer.pk: {"checked": 3, "flagged": 2}}


@pytest.mark.django_db
def test_without_a_chosen_checker_no_writer_is_counted(make_worker: MakeWorker) -> None:
    dataset = factories.dataset("writer-unchosen")
    annotator = annotator_of(dataset, "unchosen")
    ModelUse.objects.create(study=study_of(dataset))
    writer = make_worker()
    (pair,) = written(dataset, [("h", E)], writer=writer)
    check(annotator, pair, verdict=Verdict.NONSENSE)

    assert checks_by_writer([writer.pk]) == {}
