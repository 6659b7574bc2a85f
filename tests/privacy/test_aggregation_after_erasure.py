"""Aggregation runs that counted an erased person's labels: a new run is requested, as the
dashboard's aggregation form requests one, so the pages show a fit without them."""

import pytest

from base.long_tasks import JobStatus
from corpus.models import Label, Worker
from crowd.models import Study, StudySession
from privacy.services import erase_by_market_id
from quality.models import AggregationRun
from tests import factories

pytestmark = pytest.mark.django_db

E, N = Label.ENTAILMENT, Label.NEUTRAL
METHODS = ["dawid_skene", "glad"]


@pytest.fixture
def labelled(make_worker):
    """A dataset whose pairs a validator (market id VALIDATOR01) labelled with others, and one
    finished aggregation run that read those labels."""
    dataset = factories.dataset("aggregated-erasure")
    person = make_worker(username="prolific-VALIDATOR01")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="VALIDATOR01")
    others = [make_worker() for _ in range(3)]
    for _ in range(3):
        factories.pair(dataset, factories.premise(dataset), [E, E, N, E, E], validators=[person, *others])
    study = Study.objects.create(slug="aggregated", name="Aggregated", dataset=dataset, completion_code="AGG1")
    StudySession.objects.create(study=study, worker=person, external_session_id="SESSION-AGG")
    done = AggregationRun.objects.create(dataset=dataset, methods=METHODS, status=JobStatus.DONE)
    return dataset, study, done


def erase(dataset, capture):
    assert dataset.team_id is not None
    with capture(execute=False) as queued:
        record = erase_by_market_id("VALIDATOR01", team_id=dataset.team_id)
    return record, queued


def test_erasing_a_counted_validator_requests_a_new_run_of_the_same_methods(
    labelled, django_capture_on_commit_callbacks
):
    dataset, study, done = labelled
    Study.objects.filter(pk=study.pk).update(contributions_on_withdrawal="delete")
    record, _queued = erase(dataset, django_capture_on_commit_callbacks)
    rerun = AggregationRun.objects.exclude(pk=done.pk).get(dataset=dataset)
    assert rerun.status == JobStatus.PENDING and rerun.methods == METHODS
    assert record.counts["contributions.aggregation_reruns"] == 1


def test_a_pending_run_is_left_to_read_the_labels_and_none_is_added(labelled, django_capture_on_commit_callbacks):
    dataset, study, _done = labelled
    Study.objects.filter(pk=study.pk).update(contributions_on_withdrawal="delete")
    pending = AggregationRun.objects.create(dataset=dataset, methods=METHODS)
    record, _queued = erase(dataset, django_capture_on_commit_callbacks)
    assert list(AggregationRun.objects.filter(status=JobStatus.PENDING)) == [pending]
    assert "contributions.aggregation_reruns" not in record.counts


def test_kept_contributions_leave_the_runs_standing(labelled, django_capture_on_commit_callbacks):
    dataset, _study, done = labelled
    erase(dataset, django_capture_on_commit_callbacks)
    assert list(AggregationRun.objects.filter(dataset=dataset)) == [done]
