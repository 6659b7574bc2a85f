"""Every creator of pairs makes the one "pairs arrived" call (artifacts.services.pairs_arriving):
its pairs are tagged once its transaction commits, without waiting for the hourly sweep
(`artifacts.tag_untagged`). Embedded mode: the queued task runs in the caller, as commands do."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from adversarial.services import claim_adversarial_task, make_try
from artifacts.models import PairTags, TaggingJob
from artifacts.services import pairs_arrived, run_tagging_job
from artifacts.tag_tally import tally_pairs, untagged_pairs
from collection.services import submit_hypotheses
from collection.writing_claims import claim_next_premise
from corpus.models import Dataset, Pair, Split
from crowd.models import StudySession
from importers.dnc_import import import_dnc_file
from importers.mpe_items import import_mpe_file
from importers.services import import_pairs_file
from tests import factories
from tests.adversarial.helpers import ContractModel, adversarial_study, hypothesis_for
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.conftest import shared_file
from tests.importers.helpers import ensure_genres
from tests.present import present

pytestmark = pytest.mark.django_db


@pytest.fixture
def arrival_on(settings, loaded_tagger, monkeypatch):
    """Arrival switched on (a broker's default); the tagger is loaded (skipped where not installed).
    The queued task runs in the caller (the embedded mode, inline) in both passes: with a broker it
    would go to a worker this test does not start, and what is tested is that every creator queues it."""
    from annotation_site.celery import app

    # app.conf first: Celery reads Django's settings when its conf is first read, so reading it
    # after the change below would take (and, at the end, restore) eager for the whole session.
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    settings.ARTIFACTS_ON_ARRIVAL = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    return settings


def assert_every_pair_tagged(dataset: Dataset) -> None:
    pairs = Pair.objects.filter(dataset=dataset)
    assert pairs.exists()
    assert PairTags.objects.filter(pair__in=pairs).count() == pairs.count()
    # What the arrival task reads to decide (the tallies) agrees with the tables, both ways.
    assert untagged_pairs(dataset) == 0 and tally_pairs(dataset) == pairs.count()


def test_an_arrival_decides_from_the_tallies_not_from_every_pair(loaded_tagger, django_capture_on_commit_callbacks):
    """The arrival task's question ("anything untagged?") is two sums of tally rows; it used to be
    an anti-join of every pair against every tag, 522 ms at 433k pairs."""
    dataset, genre = writing_setup()
    pairs = [factories.pair(dataset, factories.premise(dataset, genre), ["neutral"]) for _ in range(3)]
    assert untagged_pairs(dataset) == 3
    with CaptureQueriesContext(connection) as statements, django_capture_on_commit_callbacks() as queued:
        pairs_arrived(dataset.pk)
    assert not [q["sql"] for q in statements if '"artifacts_pairtags"' in q["sql"]]
    assert TaggingJob.objects.get(dataset=dataset).total == 3 and queued
    run_tagging_job(TaggingJob.objects.get(dataset=dataset).pk, tagger=loaded_tagger)
    assert untagged_pairs(dataset) == 0 and PairTags.objects.filter(pair__in=pairs).count() == 3
    pairs_arrived(dataset.pk)
    assert TaggingJob.objects.filter(dataset=dataset).count() == 1  # nothing untagged: no job


def test_a_writing_submit_gets_its_pairs_tagged(arrival_on, make_worker, django_capture_on_commit_callbacks):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(claim_next_premise(worker, dataset=dataset))
    with django_capture_on_commit_callbacks(execute=True):
        submit_hypotheses(
            worker,
            claim.token,
            entailment="A boat left the harbour early.",
            neutral="The boat may carry fish.",
            contradiction="No boat ever left the harbour.",
        )
    assert_every_pair_tagged(dataset)


def test_a_corpus_import_gets_its_pairs_tagged(arrival_on, tmp_path, django_capture_on_commit_callbacks):
    row = {"gold_label": "contradiction", "sentence1": "A dog runs.", "sentence2": "No dog runs.", "pairID": "1c"}
    path = tmp_path / "tiny_dev.jsonl"
    path.write_text(json.dumps({**row, "captionID": "1", "annotator_labels": ["contradiction"]}) + "\n")
    with django_capture_on_commit_callbacks(execute=True):
        import_pairs_file(path, "tiny")
    assert_every_pair_tagged(Dataset.objects.get(slug="tiny"))
    assert PairTags.objects.get().negation


def test_an_adversarial_task_gets_its_pair_tagged(arrival_on, make_worker, django_capture_on_commit_callbacks):
    model = ContractModel()
    try:
        study, round_ = adversarial_study(target_endpoint=model.url, max_tries=1, split=Split.TRAIN)
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id="s-arrival")
        task = claim_adversarial_task(worker, session)
        assert task is not None
        with django_capture_on_commit_callbacks(execute=True):
            # One try, not fooled, on a train premise: the task ends with that try as its pair.
            make_try(worker, task.writing_claim.token, hypothesis_for(task.target_label, fooled=False), "browser")
    finally:
        model.close()
    assert_every_pair_tagged(round_.dataset)


def test_an_mpe_import_gets_its_items_tagged(arrival_on, tmp_path, django_capture_on_commit_callbacks):
    ensure_genres("captions")
    path = tmp_path / "mpe_dev.txt"
    path.write_text("".join(shared_file("mpe/mpe_dev.txt").read_text().splitlines(keepends=True)[:3]))
    with django_capture_on_commit_callbacks(execute=True):
        report = import_mpe_file(path, "mpe")
    assert report.pairs_created == 2
    assert_every_pair_tagged(Dataset.objects.get(slug="mpe"))


def test_a_dnc_import_gets_its_pairs_tagged(arrival_on, tmp_path, django_capture_on_commit_callbacks):
    path = tmp_path / "recast_verbnet_data.json"
    path.write_text(json.dumps(json.loads(shared_file("dnc/dev/recast_verbnet_data.json").read_text())[:2]))
    with django_capture_on_commit_callbacks(execute=True):
        report = import_dnc_file(path)
    assert report.pairs_created == 2
    assert_every_pair_tagged(Dataset.objects.get(slug=report.dataset))


def test_with_arrival_off_no_creator_queues_anything(settings, make_worker, django_capture_on_commit_callbacks):
    """The embedded mode's default: nothing is tagged in the request; the sweep (or `tag_pairs`) tags later."""
    settings.ARTIFACTS_ON_ARRIVAL = False
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(claim_next_premise(worker, dataset=dataset))
    with django_capture_on_commit_callbacks() as callbacks:
        submit_hypotheses(
            worker,
            claim.token,
            entailment="A boat left the harbour early.",
            neutral="The boat may carry fish.",
            contradiction="No boat ever left the harbour.",
        )
    assert not any("arriv" in repr(callback) for callback in callbacks)
    assert not PairTags.objects.exists()
