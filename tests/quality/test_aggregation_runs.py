"""Aggregation runs: Dawid–Skene and MACE on a dataset's counted labels as a
queued task, stored per pair and per worker; the dashboard shows where they differ from gold."""

import random

import pytest
from django.urls import reverse

from base.long_tasks import JobStatus
from corpus.models import Pair
from quality import aggregation_runs
from quality.models import AggregatedLabel, AggregationRun, WorkerEstimate
from quality.tasks import aggregate_labels
from tests import factories
from tests.conftest import wait_for
from tests.present import present

LABELS = ["entailment", "neutral", "contradiction"]


@pytest.fixture
def launch(django_capture_on_commit_callbacks):
    """Request a run, check its task is queued on commit, and run the task's body in this process
    (the test with a real Celery worker is test_a_run_through_a_real_worker)."""

    def run(*args, **kwargs):
        with django_capture_on_commit_callbacks(execute=False) as queued:
            requested = aggregation_runs.request_aggregation(*args, **kwargs)
        assert len(queued) == 1
        aggregate_labels.apply(args=(requested.pk,))
        return requested

    return run


@pytest.fixture
def post_now(client, django_capture_on_commit_callbacks):
    def post(*args, **kwargs):
        with django_capture_on_commit_callbacks(execute=False) as queued:
            response = client.post(*args, **kwargs)
        for run in AggregationRun.objects.filter(status="pending"):
            aggregate_labels.apply(args=(run.pk,))
        assert len(queued) == AggregationRun.objects.count()
        return response

    return post


@pytest.fixture
def labelled(db, make_worker):
    """24 pairs with five labels each from 8 careful workers and 2 who always say 'neutral',
    plus one pair split 2-2-1 (no gold)."""
    rng = random.Random(7)
    dataset = factories.dataset("aggregated")
    careful = [make_worker(username=f"careful{i}") for i in range(8)]
    lazy = [make_worker(username=f"lazy{i}") for i in range(2)]
    for number in range(24):
        truth = LABELS[number % 3]
        people = [*rng.sample(careful, 4), lazy[number % 2]]
        labels = [truth, truth, truth, truth, "neutral"] if truth != "neutral" else [truth] * 5
        factories.pair(dataset, factories.premise(dataset), labels, author=people[0], validators=people[1:])
    split = factories.pair(
        dataset,
        factories.premise(dataset),
        ["entailment", "entailment", "contradiction", "contradiction", "neutral"],
        author=careful[0],
        validators=[*careful[1:4], lazy[0]],
    )
    assert split.gold_label == "-"
    return dataset, careful, lazy


def test_a_run_stores_labels_posteriors_and_worker_skills(labelled, researcher, launch):
    dataset, careful, lazy = labelled
    gold_before = dict(Pair.objects.values_list("pk", "gold_label"))
    run = launch(researcher, dataset, ["dawid_skene", "mace"])
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    assert (run.pair_count, run.label_count, run.worker_count) == (25, 125, 10)
    for method in ("dawid_skene", "mace"):
        rows = AggregatedLabel.objects.filter(run=run, method=method)
        assert rows.count() == 25
        assert all(0.0 <= row.posterior <= 1.0 for row in rows)
        assert WorkerEstimate.objects.filter(run=run, method=method).count() == 10
        assert run.figures[method]["pairs"] == 25
    # The corpus label stays the majority vote.
    assert dict(Pair.objects.values_list("pk", "gold_label")) == gold_before
    # The "-" pair is one the models resolve; the careful workers rank above the lazy ones.
    assert run.figures["dawid_skene"]["resolves"] >= 1
    ranked = [estimate.worker for estimate in aggregation_runs.ranked_workers(run)]
    assert set(ranked[-2:]) == set(lazy)
    confusion = present(WorkerEstimate.objects.get(run=run, method="dawid_skene", worker=careful[0]).confusion)
    assert set(confusion) == set(LABELS) and abs(sum(confusion["entailment"].values()) - 1) < 1e-6


def test_excluded_workers_labels_are_not_read(labelled, researcher, launch):
    dataset, _, lazy = labelled
    factories.exclude(lazy)
    run = launch(researcher, dataset)
    run.refresh_from_db()
    assert run.worker_count == 8 and run.label_count == 125 - 25
    assert not WorkerEstimate.objects.filter(run=run, worker__in=lazy).exists()


def test_a_run_without_labels_fails_with_the_reason_and_keeps_nothing(db, researcher, launch):
    dataset = factories.dataset("empty")
    launch(researcher, dataset)
    run = AggregationRun.objects.get()
    assert run.status == JobStatus.FAILED and "no pairs with 2 or more counted labels" in run.error
    assert not AggregatedLabel.objects.exists()


def test_unknown_methods_are_refused_and_nothing_is_started(db, researcher, launch):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        launch(researcher, factories.dataset("x"), ["dawid_skene", "magic"])
    assert not AggregationRun.objects.exists()


def test_a_finished_run_is_not_run_twice(labelled, researcher, launch):
    dataset, _, _ = labelled
    run = launch(researcher, dataset)
    assert aggregation_runs.run_aggregation(run.pk) is None
    assert AggregatedLabel.objects.filter(run=run).count() == 50


def test_a_run_thought_dead_and_started_again_never_writes_over_its_restart(labelled, researcher):
    """A slow process whose run the reaper started again (base/long_tasks.py) finishes
    its fit, but keeps none of its results and leaves the run to its restart."""
    from annotation_site.wiring import long_task_kinds
    from base.long_tasks import reap_stale_long_tasks, take

    dataset, _, _ = labelled
    requested = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    assert take(AggregationRun, requested.pk)  # what run_aggregation does first
    slow = AggregationRun.objects.get(pk=requested.pk)
    reap_stale_long_tasks(long_task_kinds(), stale=-60, enqueue=lambda *args: None)  # it looked dead
    assert aggregation_runs._fit_claimed(slow) is None  # the slow process's fit ends
    run = AggregationRun.objects.get(pk=requested.pk)
    assert (run.status, run.restarts) == (JobStatus.PENDING, 1)
    assert not AggregatedLabel.objects.filter(run=run).exists()
    done = present(aggregation_runs.run_aggregation(run.pk))  # the restart, as its queued task runs it
    assert (done.status, done.restarts) == (JobStatus.DONE, 1)
    assert AggregatedLabel.objects.filter(run=run).count() == 25


# --- the dashboard ------------------------------------------------------------------------------


def test_researchers_launch_a_run_and_read_it_on_the_dashboard(labelled, client, researcher, post_now):
    dataset, _, lazy = labelled
    client.force_login(researcher)
    assert client.get(reverse("dashboard:aggregation")).status_code == 200
    response = post_now(reverse("dashboard:aggregation"), {"dataset": dataset.slug, "methods": ["dawid_skene", "mace"]})
    assert response.status_code == 302
    run = AggregationRun.objects.get()
    assert run.status == JobStatus.DONE and run.methods == ["dawid_skene", "mace"]
    listing = client.get(reverse("dashboard:aggregation")).content.decode()
    assert f'id="aggregation-{run.pk}"' in listing
    progress = client.get(reverse("dashboard:aggregation_progress"), {"ids": str(run.pk)}).json()
    assert progress["items"][0]["finished"] is True
    page = client.get(reverse("dashboard:aggregation_detail", args=[run.pk])).content.decode()
    differing = AggregatedLabel.objects.filter(run=run, method="dawid_skene", differs=True).select_related("pair")
    assert differing.exists()
    for row in differing:
        assert f"text={row.pair.pair_id}" in page  # linked to the pair browser
    assert page.index("careful") < page.index(str(lazy[0]))  # ranked by skill, best first
    assert client.get(reverse("dashboard:aggregation_detail", args=[run.pk]), {"method": "mace"}).status_code == 200


def test_workers_cannot_see_or_launch_runs(labelled, client, make_worker):
    dataset, _, _ = labelled
    client.force_login(make_worker(username="curious").user)
    assert client.get(reverse("dashboard:aggregation")).status_code == 403
    assert client.post(reverse("dashboard:aggregation"), {"dataset": dataset.slug}).status_code == 403
    assert not AggregationRun.objects.exists()


def test_launching_needs_a_post(labelled, client, researcher):
    client.force_login(researcher)
    client.get(reverse("dashboard:aggregation"), {"dataset": "aggregated"})
    assert not AggregationRun.objects.exists()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_run_through_a_real_worker(celery_worker_process, client, make_worker, make_researcher):
    """Queued by name from the dashboard, run by a Celery worker, its progress read back as JSON."""
    dataset = factories.dataset("worker-run")
    people = [make_worker(username=f"w{i}") for i in range(5)]
    for number in range(6):
        label = LABELS[number % 3]
        factories.pair(dataset, factories.premise(dataset), [label] * 5, author=people[0], validators=people[1:])
    client.force_login(make_researcher())
    assert client.post(reverse("dashboard:aggregation"), {"dataset": dataset.slug}).status_code == 302
    run = AggregationRun.objects.get()

    def finished():
        current = AggregationRun.objects.get(pk=run.pk)
        return current if current.status in ("done", "failed") else None

    run = wait_for(finished, timeout=120, message="the aggregation run")
    assert run.status == JobStatus.DONE, run.error
    assert AggregatedLabel.objects.filter(run=run).count() == 12
    live = client.get(reverse("dashboard:aggregation_progress"), {"ids": run.pk}).json()["items"][0]
    assert live["finished"] and live["progress"] == 1.0
