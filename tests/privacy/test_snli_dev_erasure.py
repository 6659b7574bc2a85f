"""After erasing a validator of SNLI dev (delete policy), every statistic equals a fresh
recompute from the label table without that validator."""

import pytest

from corpus import tallies, worker_tally
from corpus.agreement import agreement_stats
from corpus.models import Dataset, Pair, ValidationLabel, Worker
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from crowd.models import Study, StudySession
from importers.services import import_pairs_file
from privacy.services import erase_by_market_id
from tests.conftest import shared_file
from tests.importers.helpers import ensure_genres

VALIDATOR_PAIRS = 1500  # the validator gave the second label of this many pairs


def statistics():
    return {source: agreement_stats(Scope.named("snli"), source=source) for source in ("tallies", "pairs")}


@pytest.mark.django_db
@pytest.mark.slow
def test_erasing_a_validator_of_snli_dev_leaves_every_statistic_equal_to_a_fresh_recompute(make_worker):
    ensure_genres("captions")
    assert import_pairs_file(shared_file("snli_1.0_dev.jsonl"), "snli").ok
    dataset = Dataset.objects.get(slug="snli")
    validator = make_worker(username="prolific-VALIDATOR1")
    Worker.objects.filter(pk=validator.pk).update(market="prolific", external_id="VALIDATOR1")
    # SNLI names no validators: one of them is given the second label of the first pairs, and the
    # worker figures are built for it, as if they had labelled here.
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True)[:VALIDATOR_PAIRS])
    ValidationLabel.objects.filter(pair_id__in=pairs, position=2).update(worker=validator)
    tallies.check_and_rebuild(dataset, worker_tally.TALLY, repair=True)
    study = Study.objects.create(
        slug="snli-validation",
        name="SNLI",
        dataset=dataset,
        completion_code="SNLI",
        task_kind="validation",
        contributions_on_withdrawal="delete",
    )
    StudySession.objects.create(study=study, worker=validator, external_session_id="SESSION-V1")
    before = statistics()

    assert dataset.team_id is not None
    record = erase_by_market_id("VALIDATOR1", team_id=dataset.team_id)
    assert record.counts["contributions.labels"] == VALIDATOR_PAIRS
    assert not ValidationLabel.objects.filter(worker=validator).exists()
    erased = statistics()
    assert erased != before  # the validator's labels counted, and no longer do
    assert erased["tallies"] == erased["pairs"]  # the maintained tallies and the pairs agree

    # From scratch: nothing disagrees, and rebuilding every tally from the labels changes no figure.
    report = recompute_gold(Dataset.objects.get(slug="snli"), fix=False)
    assert report.disagreements == 0
    assert report.tally_drift is not None and report.worker_tally_drift is not None
    assert report.tally_drift.keys == 0 and report.worker_tally_drift.keys == 0
    tallies.check_and_rebuild(Dataset.objects.get(slug="snli"), tallies.CORPUS, repair=True)
    tallies.check_and_rebuild(Dataset.objects.get(slug="snli"), worker_tally.TALLY, repair=True)
    assert statistics() == erased
