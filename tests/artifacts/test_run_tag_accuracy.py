"""Accuracy per phenomenon tag is computed when a run finishes and lands in its results, its page
and its API (MultiNLI Table 6: per tag, the share of pairs and the model's accuracy)."""

import pytest
from django.urls import reverse

from artifacts.models import PairTags
from artifacts.services import tag_columns
from modeling.models import RunStatus, Snapshot, TrainingRun
from modeling.training.data import example_from_row
from modeling.training.evaluate import summarize
from modeling.training.run_writes import RUN_FINISHED_TASK, finish_run
from modeling.training.services import record_run_tag_accuracy
from tests import factories

pytestmark = pytest.mark.django_db


def finished_run_with_tagged_pairs(django_capture_on_commit_callbacks):
    ds = factories.dataset("d")
    pairs = []
    for tags, gold in [({"negation"}, "contradiction")] * 3 + [({"modals"}, "entailment")] + [(set(), "neutral")]:
        pair = factories.pair(ds, factories.premise(ds), [gold] * 5)
        PairTags.objects.create(pair=pair, tagger="test", **tag_columns(tags))
        pairs.append(pair)
    examples = [
        example_from_row({"pairID": p.pair_id, "gold_label": p.gold_label, "sentence1": "a", "sentence2": "b"}, "dev")
        for p in pairs
    ]
    # contradiction=2, entailment=0, neutral=1: right on 2 of 3 negated pairs, wrong on the modal one.
    results = summarize({"dev": (examples, [2, 2, 0, 1, 1])})
    results["dev_split"] = "dev"
    run = TrainingRun.objects.create(
        snapshot=Snapshot.objects.create(datasets=["d"]), model="cbow", status=RunStatus.RUNNING, celery_task_id="a1"
    )
    with django_capture_on_commit_callbacks() as callbacks:
        assert finish_run(run.pk, "a1", None, results)
    return run, callbacks


def test_finishing_a_run_queues_the_tag_accuracy_and_stores_it_in_the_results(django_capture_on_commit_callbacks):
    run, callbacks = finished_run_with_tagged_pairs(django_capture_on_commit_callbacks)
    assert len(callbacks) == 1 and RUN_FINISHED_TASK == "modeling.tasks.record_run_tag_accuracy"
    record_run_tag_accuracy(run.pk)  # what the queued task runs
    run.refresh_from_db()
    stored = run.results["tag_accuracy"]
    assert stored["splits"] == ["dev"] and stored["tagged"] == 5
    by_tag = {row["tag"]: row for row in stored["tags"]}
    assert by_tag["negation"]["pairs"] == 3 and by_tag["negation"]["share"] == pytest.approx(0.6)
    assert by_tag["negation"]["accuracy"] == pytest.approx(2 / 3)
    assert by_tag["modals"]["accuracy"] == 0 and by_tag["existentials"]["accuracy"] is None
    assert run.results["accuracy"] == {"dev": pytest.approx(0.6)}  # the run's own results are kept


def test_the_run_page_and_the_runs_api_show_the_stored_figures(client, researcher, django_capture_on_commit_callbacks):
    run, _ = finished_run_with_tagged_pairs(django_capture_on_commit_callbacks)
    record_run_tag_accuracy(
        run.pk
    )  # what the queued task runs (on PostgreSQL the worker could not see this test's rows)
    client.force_login(researcher)
    api = client.get(f"/api/training-runs/{run.pk}/").json()
    assert api["results"]["tag_accuracy"]["tags"][3]["tag"] == "negation"
    page = client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
    assert 'id="table-run-phenomena"' in page and "60.0%" in page


def test_a_run_without_tagged_pairs_stores_nothing():
    run = TrainingRun.objects.create(
        snapshot=Snapshot.objects.create(datasets=["d"]), model="cbow", status=RunStatus.DONE, results={"x": 1}
    )
    assert record_run_tag_accuracy(run.pk) is None
    run.refresh_from_db()
    assert run.results == {"x": 1}
