"""A labelling job at its edges, against the stand-in server (a real local HTTP process): a job
labels at most its limit, lowest pairs first, and a later job of the same annotator and prompt only
the pairs still unlabelled (another annotator's labels never count as done), while a new prompt
version labels every pair again; the calibration scope takes only pairs with a human gold, the "all"
scope every split of the annotator's dataset and no other dataset; more pairs than one chunk are all
labelled with the progress at its end; a job with nothing left is done at progress 1; a job that
cannot label fails with the reason, its end time, a log line with its id and traceback, and no
calibration. A job beats its heartbeat while it works; only a labels job (never a writing-checks
one) calibrates the annotator. A writing-checks job likewise asks only what its annotator has not
checked under its current writing prompt, lowest pairs first, and never a pair without the
writer's label.

The labellers themselves: an endpoint is asked each pair once, lowest first, with its labels prompt
(the data notice added), its answer read in the prompt's words into an unsaved row; an endpoint with
no labels prompt cannot label; a run labels from its checkpoint, a word that is no label unparseable,
each pair's latency its share of the one reading. While a job works its row shows the stage, its total
and the chunks done (a new attempt starts its count from zero, also with nothing left); a row another
attempt saved meanwhile stays; and a job's queries do not grow with its pairs."""

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from base.long_tasks import JobStatus
from corpus.labels import TWO_WAY_SCHEME
from corpus.models import Dataset, Label, Pair, Split
from model_annotators import services
from model_annotators.clients import load_run_checkpoint
from model_annotators.labelling import CHUNK, _labeller, pairs_to_label, run_labelling_job
from model_annotators.models import (
    AnnotatorKind,
    JobTask,
    LabellingJob,
    ModelAnnotator,
    ModelLabel,
    Outcome,
    PromptVersion,
    TaskKind,
    WritingCheck,
)
from model_annotators.prompts import fill, with_data_notice
from model_annotators.scope import CannotLabel, asked_with, current_prompt
from tests import factories

from .conftest import API_KEY, StandInServer, gold_pairs
from .test_mutants_endpoint import Start, completion, scripted  # noqa: F401  (the fixture)
from .test_mutants_writing_checks import run_annotator, written

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def register(dataset, server: StandInServer, name: str = "stand-in llm") -> ModelAnnotator:
    return services.register_endpoint(
        dataset,
        name=name,
        base_url=server.url,
        model_name="standin-7b",
        api_key=API_KEY,
        requests_per_minute=0,  # unpaced: the stand-in answers at once
    )


def job_of(annotator, django_capture_on_commit_callbacks, **fields) -> LabellingJob:
    with django_capture_on_commit_callbacks(execute=True):
        job = services.start_labelling(annotator, **fields)
    return LabellingJob.objects.get(pk=job.pk)


def labelled(annotator) -> list[int]:
    return sorted(ModelLabel.objects.filter(annotator=annotator).values_list("pair_id", flat=True))


@pytest.mark.django_db
def test_a_job_labels_its_limit_lowest_first_and_the_next_job_only_the_rest(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("limited")
    pairs = gold_pairs(dataset, [E, N, C])
    server = stand_in()
    annotator = register(dataset, server)

    first = job_of(annotator, django_capture_on_commit_callbacks, limit=2)

    assert (first.status, first.pairs_total, first.pairs_done) == (JobStatus.DONE, 2, 2)
    assert labelled(annotator) == sorted(pair.pk for pair in pairs)[:2]

    second = job_of(annotator, django_capture_on_commit_callbacks)

    assert (second.pairs_total, second.pairs_done) == (1, 1)
    assert labelled(annotator) == sorted(pair.pk for pair in pairs)

    # Another annotator of the same dataset and prompt: the first one's labels are not its own.
    other = register(dataset, server, name="another llm")
    assert job_of(other, django_capture_on_commit_callbacks).pairs_total == 3


@pytest.mark.django_db
def test_a_job_with_nothing_left_is_done_at_full_progress(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("nothing-left")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())
    job_of(annotator, django_capture_on_commit_callbacks)

    again = job_of(annotator, django_capture_on_commit_callbacks)

    assert (again.status, again.stage, again.pairs_total, again.pairs_done) == (JobStatus.DONE, "done", 0, 0)
    assert again.progress == 1.0 and again.finished_at is not None and again.error == ""


@pytest.mark.django_db
def test_the_all_scope_takes_every_split_of_the_dataset_and_no_other_dataset(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("every-split")
    dev = gold_pairs(dataset, [E])
    train = gold_pairs(dataset, [N], split=Split.TRAIN)
    gold_pairs(factories.dataset("not-this-one"), [C])
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks, scope="all")

    assert job.pairs_total == 2
    assert labelled(annotator) == sorted([dev[0].pk, train[0].pk])


@pytest.mark.django_db
def test_more_pairs_than_one_chunk_are_all_labelled(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("chunks")
    pairs = gold_pairs(dataset, [E, N, C] * (CHUNK // 3 + 1))
    assert len(pairs) > CHUNK
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks)

    assert (job.status, job.pairs_total, job.pairs_done, job.progress) == (JobStatus.DONE, len(pairs), len(pairs), 1.0)
    assert labelled(annotator) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_job_that_cannot_label_fails_with_the_reason_and_no_calibration(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("no-prompt")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())
    PromptVersion.objects.filter(annotator=annotator).delete()

    job = job_of(annotator, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.FAILED and job.finished_at is not None
    assert job.error == "the annotator has no validation prompt"
    assert not ModelLabel.objects.filter(annotator=annotator).exists()
    assert not annotator.calibrations.exists()


def checked(annotator, key: str | None = None) -> list[int]:
    rows = WritingCheck.objects.filter(annotator=annotator)
    if key is not None:
        rows = rows.filter(asked_with=key)
    return sorted(rows.values_list("pair_id", flat=True))


def moved_to_the_end(pair: Pair) -> None:
    """Rewrite the pair's row, so that the table holds it after the others: only an explicit order
    then returns it first."""
    Pair.objects.filter(pk=pair.pk).update(hypothesis=pair.hypothesis + " ")


@pytest.mark.django_db
def test_a_new_labels_prompt_version_labels_every_pair_again(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("relabelled")
    pairs = gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())
    assert job_of(annotator, django_capture_on_commit_callbacks).pairs_total == 2
    first = current_prompt(annotator)
    assert first is not None
    services.new_prompt_version(annotator, first.task_kind, system=first.system + " Again.", template=first.template)

    again = job_of(annotator, django_capture_on_commit_callbacks)

    assert (again.pairs_total, again.pairs_done) == (2, 2)
    new_key = asked_with(annotator)
    assert new_key != f"{first.task_kind}-v{first.version}"
    assert sorted(
        ModelLabel.objects.filter(annotator=annotator, asked_with=new_key).values_list("pair_id", flat=True)
    ) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_writing_checks_job_run_twice_asks_only_what_is_left_lowest_first(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("checked-twice")
    pairs = gold_pairs(dataset, [E, N, C])
    moved_to_the_end(pairs[0])
    annotator = register(dataset, stand_in())

    first = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS, limit=2)

    assert (first.status, first.pairs_total, first.pairs_done) == (JobStatus.DONE, 2, 2), first.error
    assert checked(annotator) == sorted(pair.pk for pair in pairs)[:2]

    second = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (second.status, second.pairs_total, second.pairs_done) == (JobStatus.DONE, 1, 1), second.error
    assert checked(annotator) == sorted(pair.pk for pair in pairs)
    third = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)
    assert third.pairs_total == 0


@pytest.mark.django_db
def test_the_pairs_to_check_come_lowest_first(stand_in):
    dataset = factories.dataset("checked-in-order")
    pairs = gold_pairs(dataset, [E, N, C])
    moved_to_the_end(pairs[0])
    annotator = register(dataset, stand_in())
    services.start_labelling(annotator, scope="all", task=JobTask.WRITING_CHECKS)
    job = LabellingJob(annotator=annotator, scope="all", task=JobTask.WRITING_CHECKS)

    todo = pairs_to_label(job, asked_with(annotator, TaskKind.WRITING))

    assert list(todo.values_list("pk", flat=True)) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_writing_checks_job_never_asks_a_pair_without_the_writers_label(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("unwritten")
    with_label, without_label = gold_pairs(dataset, [E, N])
    Pair.objects.filter(pk=without_label.pk).update(author_label="")
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (job.pairs_total, job.pairs_done) == (1, 1), job.error
    assert checked(annotator) == [with_label.pk]


@pytest.mark.django_db
def test_another_annotators_writing_checks_are_not_its_own(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("checked-by-two")
    pairs = gold_pairs(dataset, [E, N])
    server = stand_in()
    first = register(dataset, server)
    job_of(first, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)
    other = register(dataset, server, name="another llm")

    job = job_of(other, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (job.pairs_total, job.pairs_done) == (2, 2), job.error
    assert checked(other) == checked(first) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_new_writing_prompt_version_checks_every_pair_again(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("checked-again")
    pairs = gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())
    job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)
    first = current_prompt(annotator, TaskKind.WRITING)
    assert first is not None
    services.new_prompt_version(annotator, TaskKind.WRITING, system=first.system + " Again.", template=first.template)

    again = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (again.pairs_total, again.pairs_done) == (2, 2), again.error
    every = sorted(pair.pk for pair in pairs)
    assert checked(annotator, "writing-v1") == checked(annotator, "writing-v2") == every


@pytest.mark.django_db
def test_the_calibration_scope_takes_only_pairs_with_a_human_gold_and_the_all_scope_the_rest(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("gold-or-not")
    (with_gold,) = gold_pairs(dataset, [E])
    unvalidated = factories.pair(dataset, factories.premise(dataset, factories.genre("fiction")), [N])
    annotator = register(dataset, stand_in())

    calibration = job_of(annotator, django_capture_on_commit_callbacks)

    assert (calibration.pairs_total, labelled(annotator)) == (1, [with_gold.pk])

    every = job_of(annotator, django_capture_on_commit_callbacks, scope="all")

    assert every.pairs_total == 1
    assert labelled(annotator) == sorted([with_gold.pk, unvalidated.pk])


@pytest.mark.django_db
def test_a_labels_job_calibrates_the_annotator_and_a_writing_checks_job_does_not(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("calibrated-or-not")
    gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())

    writing = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert writing.status == JobStatus.DONE and not annotator.calibrations.exists()

    labels = job_of(annotator, django_capture_on_commit_callbacks)

    assert labels.status == JobStatus.DONE and annotator.calibrations.count() == 1


@pytest.mark.django_db
def test_a_running_job_stamps_its_heartbeat_so_the_reaper_leaves_it(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("beating")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks)

    # Taking the job stamps both with one time; the work's own heartbeat comes after.
    assert job.status == JobStatus.DONE and job.started_at is not None and job.heartbeat_at is not None
    assert job.heartbeat_at > job.started_at


@pytest.mark.django_db
def test_a_failed_job_is_logged_with_its_id_and_the_traceback(stand_in, django_capture_on_commit_callbacks, caplog):
    dataset = factories.dataset("logged")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())
    PromptVersion.objects.filter(annotator=annotator).delete()

    with caplog.at_level(logging.ERROR, logger="model_annotators.labelling"):
        job = job_of(annotator, django_capture_on_commit_callbacks)

    failures = [record for record in caplog.records if record.name == "model_annotators.labelling"]
    assert [(record.levelno, record.getMessage()) for record in failures] == [
        (logging.ERROR, f"labelling job {job.pk} failed")
    ]
    assert failures[0].exc_info is not None


# --- the labellers themselves: what each asks and the rows it hands the job ------------------------


def two_way_endpoint(dataset: Dataset, url: str) -> ModelAnnotator:
    annotator = services.register_endpoint(
        dataset, name="two-way judge", base_url=f"{url}/v1", model_name="m", api_key=API_KEY, max_retries=0
    )
    ModelAnnotator.objects.filter(pk=annotator.pk).update(requests_per_minute=0)
    annotator.refresh_from_db()
    return annotator


@pytest.mark.django_db
def test_an_endpoint_labeller_asks_each_pair_its_prompt_and_reads_the_answer_in_the_datasets_words(
    scripted: Start,  # noqa: F811
) -> None:
    url, seen = scripted(
        [
            (200, {}, completion(json.dumps({"label": "not-entailed", "reason": "The dog  is\nasleep."}))),
            (200, {}, completion("no label at all")),
        ]
    )
    dataset = factories.dataset("two-way-labelled", label_scheme=TWO_WAY_SCHEME)
    first, second = written(dataset, [("A dog runs.", N), ("A dog naps.", E)])
    annotator = two_way_endpoint(dataset, url)
    prompt = current_prompt(annotator)
    assert prompt is not None and prompt.task_kind == TaskKind.TWO_WAY

    rows = _labeller(annotator)([first, second], "two_way-v1")

    assert [request["body"]["messages"] for request in seen.requests] == [
        [
            {"role": "system", "content": with_data_notice(prompt.system)},
            {"role": "user", "content": fill(prompt.template, pair.premise.text, pair.hypothesis)},
        ]
        for pair in (first, second)
    ]
    assert all(isinstance(row, ModelLabel) and row.pk is None for row in rows)  # unsaved: the job saves them
    assert [(row.annotator, row.pair, row.asked_with) for row in rows] == [
        (annotator, first, "two_way-v1"),
        (annotator, second, "two_way-v1"),
    ]
    # "not-entailed" is a word of the two-way prompt only, stored as the core label.
    assert [(row.outcome, row.label, row.reason) for row in rows] == [
        (Outcome.LABELLED, N, "The dog is asleep."),
        (Outcome.UNPARSEABLE, "", ""),
    ]
    assert rows[1].raw_answer == "no label at all" and rows[1].error != ""


@pytest.mark.django_db
def test_an_endpoint_without_a_labels_prompt_cannot_be_made_a_labeller() -> None:
    dataset = factories.dataset("no-labels-prompt")
    annotator = ModelAnnotator.objects.create(
        name="writing only",
        dataset=dataset,
        kind=AnnotatorKind.ENDPOINT,
        base_url="http://127.0.0.1:9/v1",
        model_name="m",
    )
    PromptVersion.objects.create(annotator=annotator, task_kind=TaskKind.WRITING, version=1, system="s", template="t")

    with pytest.raises(CannotLabel, match=r"^the annotator has no validation prompt$"):
        _labeller(annotator)


def timed_labelling(annotator: ModelAnnotator, pairs: list[Pair], key: str) -> tuple[list[ModelLabel], int]:
    """The labeller's rows, and the milliseconds the whole call took as seen from outside it."""
    labeller = _labeller(annotator)
    started = time.monotonic()
    rows = labeller(pairs, key)
    return rows, int((time.monotonic() - started) * 1000)


def long_pairs(dataset: Dataset, count: int) -> list[Pair]:
    """Pairs whose premises are long enough that a run takes some milliseconds to read each."""
    genre = factories.genre("fiction")
    words = " ".join(f"w{i % 12}" for i in range(200_000))
    return [
        factories.pair(dataset, factories.premise(dataset, genre, text=f"{words} {n}"), [E], hypothesis=f"w{n} w3")
        for n in range(count)
    ]


@pytest.mark.django_db
def test_a_run_labels_each_pair_with_its_predicted_word_and_the_time_each_took(tmp_path: Path) -> None:
    dataset = factories.dataset("run-labelled")
    annotator = run_annotator(tmp_path, dataset, ["entailment", "neutral", "contradiction"])
    pairs = long_pairs(dataset, 2)
    assert annotator.training_run is not None
    predicted = load_run_checkpoint(annotator.training_run).predict_many(
        [(pair.premise.text, pair.hypothesis) for pair in pairs]
    )

    rows, outside_ms = timed_labelling(annotator, pairs, "run-7")

    assert all(isinstance(row, ModelLabel) and row.pk is None for row in rows)
    assert [(row.annotator, row.pair, row.asked_with) for row in rows] == [
        (annotator, pairs[0], "run-7"),
        (annotator, pairs[1], "run-7"),
    ]
    assert [(row.outcome, row.label, row.raw_answer) for row in rows] == [
        (Outcome.LABELLED, word, word) for word in predicted
    ]
    # One reading of both pairs, its time shared out: each pair's part, never more than the whole.
    assert len({row.latency_ms for row in rows}) == 1
    assert all(isinstance(row.latency_ms, int) and row.latency_ms >= 1 for row in rows)
    assert rows[0].latency_ms * len(rows) <= outside_ms


@pytest.mark.django_db
def test_a_runs_word_that_is_no_label_is_an_unparseable_label(tmp_path: Path) -> None:
    dataset = factories.dataset("run-unlabelled")
    annotator = run_annotator(tmp_path, dataset, ["maybe", "perhaps"])
    (pair,) = gold_pairs(dataset, [E])

    (row,) = _labeller(annotator)([pair], "run-8")

    assert (row.annotator, row.pair, row.asked_with) == (annotator, pair, "run-8")
    assert row.outcome == Outcome.UNPARSEABLE and row.label == "" and row.raw_answer in {"maybe", "perhaps"}


@pytest.mark.django_db
def test_a_run_annotators_job_labels_from_its_checkpoint_under_the_runs_key(
    tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    dataset = factories.dataset("run-job")
    annotator = run_annotator(tmp_path, dataset, ["entailment", "neutral", "contradiction"])
    pairs = gold_pairs(dataset, [E, N, C])
    assert annotator.training_run is not None
    predicted = load_run_checkpoint(annotator.training_run).predict_many(
        [(pair.premise.text, pair.hypothesis) for pair in pairs]
    )

    job = job_of(annotator, django_capture_on_commit_callbacks)

    assert (job.status, job.pairs_total, job.pairs_done) == (JobStatus.DONE, 3, 3), job.error
    stored = ModelLabel.objects.filter(annotator=annotator).order_by("pair_id")
    assert [(row.pair_id, row.asked_with, row.label, row.raw_answer) for row in stored] == [
        (pair.pk, f"run-{annotator.training_run_id}", word, word) for pair, word in zip(pairs, predicted, strict=True)
    ]


# --- the job's own bookkeeping, as the job page reads it while it works -----------------------------


@pytest.mark.django_db
def test_a_job_asks_the_endpoint_once_per_pair_lowest_first(
    scripted: Start,  # noqa: F811
    django_capture_on_commit_callbacks,
) -> None:
    url, seen = scripted([(200, {}, completion(json.dumps({"label": "entailment", "reason": "So it says."})))])
    dataset = factories.dataset("asked-once")
    pairs = gold_pairs(dataset, [E, N, C], hypotheses=["First one.", "Second one.", "Third one."])
    moved_to_the_end(pairs[0])
    annotator = services.register_endpoint(
        dataset, name="asked once", base_url=f"{url}/v1", model_name="m", api_key=API_KEY, max_retries=0
    )
    ModelAnnotator.objects.filter(pk=annotator.pk).update(requests_per_minute=0)

    job = job_of(annotator, django_capture_on_commit_callbacks)

    assert (job.status, job.pairs_total, job.pairs_done) == (JobStatus.DONE, 3, 3), job.error
    asked = [request["body"]["messages"][1]["content"] for request in seen.requests]
    hypotheses = ["First one.", "Second one.", "Third one."]
    # Each pair once, the lowest first, though the first pair's row now lies last in the table.
    assert [hypothesis for text in asked for hypothesis in hypotheses if hypothesis in text] == hypotheses


@pytest.mark.django_db
def test_a_failed_job_taken_again_with_nothing_left_starts_its_count_from_zero(
    stand_in, django_capture_on_commit_callbacks
) -> None:
    dataset = factories.dataset("taken-again")
    gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())
    job_of(annotator, django_capture_on_commit_callbacks)
    # An earlier attempt that died after counting some pairs: its row keeps its count and stage.
    job = services.start_labelling(annotator)
    LabellingJob.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, pairs_done=2, stage="labelling")

    again = run_labelling_job(job.pk)

    assert again is not None
    assert (again.status, again.pairs_total, again.pairs_done, again.progress) == (JobStatus.DONE, 0, 0, 1.0)


Seen_job = list[dict[str, Any]]


@pytest.fixture
def observing() -> Iterator[Callable[[Callable[[], dict[str, Any]]], tuple[str, Seen_job]]]:
    """A loopback chat server that, as each request arrives, records what `look` reads then (from its
    own database connection, closed after), and answers "entailment"; stopped after the test."""
    started: list[ThreadingHTTPServer] = []

    def start(look: Callable[[], dict[str, Any]]) -> tuple[str, Seen_job]:
        seen: Seen_job = []
        body = completion(json.dumps({"label": "entailment", "reason": "So it says."}))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    seen.append(look())
                finally:
                    connection.close()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", seen

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.mark.django_db(transaction=True)
def test_while_a_job_labels_its_row_shows_the_stage_and_the_chunks_done_so_far(
    observing: Callable[[Callable[[], dict[str, Any]]], tuple[str, Seen_job]],
) -> None:
    dataset = factories.dataset("watched")
    pairs = gold_pairs(dataset, [E] * (CHUNK + 1))
    jobs: list[int] = []

    def look() -> dict[str, Any]:
        return dict(
            LabellingJob.objects.filter(pk__in=jobs).values("stage", "pairs_total", "pairs_done", "progress")[0]
        )

    url, seen = observing(look)
    annotator = services.register_endpoint(
        dataset, name="watched llm", base_url=f"{url}/v1", model_name="m", api_key=API_KEY, max_retries=0
    )
    ModelAnnotator.objects.filter(pk=annotator.pk).update(requests_per_minute=0)
    # Pending, with an earlier attempt's count on the row: the new attempt starts its own.
    job = LabellingJob.objects.create(annotator=annotator, scope="calibration", pairs_done=7, progress=0.5)
    jobs.append(job.pk)

    done = run_labelling_job(job.pk)

    assert done is not None
    assert (done.status, done.pairs_done) == (JobStatus.DONE, CHUNK + 1), done.error
    total = len(pairs)
    assert seen[0] == {"stage": "labelling", "pairs_total": total, "pairs_done": 0, "progress": 0.0}
    assert seen[CHUNK - 1] == seen[0]
    assert seen[CHUNK] == {"stage": "labelling", "pairs_total": total, "pairs_done": CHUNK, "progress": CHUNK / total}
    assert len(seen) == total


def queries_of_a_job(server: StandInServer, pairs: int, task: str, django_capture_on_commit_callbacks) -> int:
    dataset = factories.dataset(f"counted-{task}-{pairs}")
    gold_pairs(dataset, [E] * pairs)
    annotator = register(dataset, server)
    with CaptureQueriesContext(connection) as queries:
        job = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=task)
    assert (job.status, job.pairs_done) == (JobStatus.DONE, pairs), job.error
    return len(queries)


@pytest.mark.django_db
@pytest.mark.parametrize("task", [JobTask.LABELS, JobTask.WRITING_CHECKS])
def test_a_jobs_queries_do_not_grow_with_its_pairs(task: str, stand_in, django_capture_on_commit_callbacks) -> None:
    server = stand_in()

    one = queries_of_a_job(server, 1, task, django_capture_on_commit_callbacks)
    four = queries_of_a_job(server, 4, task, django_capture_on_commit_callbacks)

    assert four == one


@pytest.mark.django_db(transaction=True)
def test_a_row_another_attempt_saved_meanwhile_stays_and_the_job_still_ends_done(
    observing: Callable[[Callable[[], dict[str, Any]]], tuple[str, Seen_job]],
) -> None:
    """The reaper may restart a job whose first process still lives: both save the same pair."""
    dataset = factories.dataset("saved-twice")
    first, second = gold_pairs(dataset, [E, N])
    made: list[ModelAnnotator] = []

    def earlier_attempt_saves_the_first_pair() -> dict[str, Any]:
        ModelLabel.objects.get_or_create(
            annotator=made[0],
            pair=first,
            asked_with="validation-v1",
            defaults={"outcome": Outcome.LABELLED, "label": C, "raw_answer": "the earlier attempt's"},
        )
        return {}

    url, _ = observing(earlier_attempt_saves_the_first_pair)
    annotator = services.register_endpoint(
        dataset, name="saved twice", base_url=f"{url}/v1", model_name="m", api_key=API_KEY, max_retries=0
    )
    ModelAnnotator.objects.filter(pk=annotator.pk).update(requests_per_minute=0)
    made.append(annotator)
    assert asked_with(annotator) == "validation-v1"
    job = LabellingJob.objects.create(annotator=annotator, scope="calibration")

    done = run_labelling_job(job.pk)

    assert done is not None
    assert (done.status, done.pairs_done) == (JobStatus.DONE, 2), done.error
    rows = ModelLabel.objects.filter(annotator=annotator).order_by("pair_id")
    assert [(row.pair_id, row.label, row.raw_answer) for row in rows] == [
        (first.pk, C, "the earlier attempt's"),
        (second.pk, E, json.dumps({"label": "entailment", "reason": "So it says."})),
    ]
