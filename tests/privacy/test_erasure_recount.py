"""The erasure's recount of the pairs a person labelled, all at once: stopped pairs no longer
decided take labels again, gold labels move, and every figure equals a recompute from scratch."""

import pytest

from corpus import tallies, worker_tally
from corpus.models import Dataset, Label, Pair, Split, StoppingPolicy, StoppingRule, Worker
from crowd.models import Study, StudySession
from privacy.services import erase_by_market_id
from tests import factories
from tests.corpus.test_pair_counted_labels import expected as counted_labels_expected
from tests.corpus.test_pair_counted_labels import table as counted_labels_table
from tests.privacy.test_erasure import figures, no_drift

pytestmark = pytest.mark.django_db

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def test_a_stopped_pair_the_person_decided_takes_labels_again_and_gold_moves_with_every_figure(make_worker):
    factories.genre("fiction")
    dataset = factories.dataset("recounted")
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.DECIDED)
    person = make_worker(username="prolific-VALIDATOR02")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="VALIDATOR02")
    w1, w2, w3 = (make_worker() for _ in range(3))

    def pair(labels, validators):
        return factories.pair(dataset, factories.premise(dataset, split=Split.DEV), labels, validators=validators)

    decided = pair([E, E, E], [person, w1])  # three entailments: stopped early
    flipped = pair([N, C, N, N, C], [w1, person, w2, w3])  # neutral, then two against two
    kept = pair([E, C, E, E, C], [person, w1, w2, w3])  # entailment either way
    decided.refresh_from_db()
    assert decided.stopped_early and not decided.needs_validation
    study = Study.objects.create(
        slug="recounted", name="Recounted", dataset=dataset, completion_code="R", contributions_on_withdrawal="delete"
    )
    StudySession.objects.create(study=study, worker=person, external_session_id="SESSION-R")

    assert dataset.team_id is not None
    record = erase_by_market_id("VALIDATOR02", team_id=dataset.team_id)
    assert record.counts["contributions.labels"] == 3
    assert record.counts["contributions.pairs_recounted"] == 3
    rows = {pair.pk: pair for pair in Pair.objects.filter(dataset=dataset)}
    assert (rows[decided.pk].label_count, rows[decided.pk].entailment_votes) == (2, 2)
    assert rows[decided.pk].needs_validation and not rows[decided.pk].stopped_early  # undecided: takes labels
    assert (rows[flipped.pk].gold_label, rows[kept.pk].gold_label) == ("-", E)
    # The export's counted labels (the label table's triggers keep them) leave with the person's.
    assert counted_labels_table()[decided.pk][0] == [E, None, E, None, None]  # the person's slot blank
    assert counted_labels_table() == counted_labels_expected()
    after = figures("recounted")
    no_drift("recounted")
    tallies.check_and_rebuild(Dataset.objects.get(slug="recounted"), tallies.CORPUS, repair=True)
    tallies.check_and_rebuild(Dataset.objects.get(slug="recounted"), worker_tally.TALLY, repair=True)
    assert figures("recounted") == after
