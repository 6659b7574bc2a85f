"""Labels wait for the market's word before they count.

The attack: a made-up participant id's labels counted towards gold from its first batch until the
market refused it (a refusal that came later, or never, if the market was down). Now a label
written in a session whose market check is pending (or refused) is stored waiting
(`ValidationLabel.awaiting_market_session`): no counter, gold label or export counts it and its pair
stays in the queue for other validators; once the market vouches (the stand-in market, a real HTTP
server) it counts and its pair's counters are recounted; after a refusal it never counts.
"""

import pytest
from django.contrib.auth.models import User

from corpus import tallies
from corpus.exclusions import set_workers_excluded
from corpus.labels import CONTRADICTION
from corpus.models import Label, Market, Pair, ValidationLabel, Worker
from corpus.recompute import find_disagreements
from corpus.selectors import in_gold, labels_that_count
from corpus.services import add_labels
from crowd.models import MarketCheck, StudySession
from markets import identity
from teams.models import default_team_id
from tests.validation.validation_factories import make_pair
from validation.batch_claims import claim_validation_batch
from validation.selectors import claimable_pairs
from validation.services import submit_validation_batch

from .conftest import connect_prolific, make_study

pytestmark = pytest.mark.django_db

SUBMISSION = "5f00000000000000000000c1"


def an_undecided_pair(study, make_worker):
    """A pair with the author's entailment and two validators' contradictions: no gold yet, and one
    more contradiction makes the gold contradiction."""
    pair = make_pair(study.dataset, author=make_worker(), label=Label.ENTAILMENT)
    for _ in range(2):
        add_labels([(pair, CONTRADICTION)], worker=make_worker())
    pair.refresh_from_db()
    assert (pair.label_count, pair.gold_label) == (3, "-")
    return pair


def a_session_waiting_for_prolific(study, pid="pid-waiting"):
    worker = Worker.objects.create(user=User.objects.create(username=pid), market=Market.PROLIFIC, external_id=pid)
    session = StudySession.objects.create(
        study=study,
        worker=worker,
        external_study_id=study.market_connection.market_study_id,
        external_session_id=SUBMISSION,
        market_check=MarketCheck.PENDING,
    )
    return worker, session


def label_in_session(worker, session, pair, answer=CONTRADICTION):
    batch = claim_validation_batch(worker, study_session=session)
    assert batch is not None
    return submit_validation_batch(worker, batch, {pair.pk: answer}).labels[0]


def counts(label):
    return ValidationLabel.objects.filter(labels_that_count(), pk=label.pk).exists()


def test_a_pending_sessions_label_is_out_of_gold_and_its_pair_served_to_others(standin, make_worker):
    study = make_study()
    connect_prolific(study, standin)
    pair = an_undecided_pair(study, make_worker)
    worker, session = a_session_waiting_for_prolific(study)
    label = label_in_session(worker, session, pair)
    assert label.awaiting_market_session == session.pk
    pair.refresh_from_db()
    assert (pair.label_count, pair.contradiction_votes, pair.gold_label) == (3, 2, "-")
    assert pair.held_places == 0  # the claim's place was given back with the submit
    assert not counts(label)
    assert not ValidationLabel.objects.filter(in_gold(), pk=label.pk).exists()
    # Another validator is offered the pair: it still needs labels that count.
    other = make_worker()
    assert pair.pk in claimable_pairs(other, session.started_at, dataset=study.dataset)
    assert find_disagreements(study.dataset)[0] == 0  # the counters agree with the rule


def test_labels_count_once_the_market_vouches_and_gold_is_recounted(standin, make_worker):
    study = make_study()
    connect_prolific(study, standin)
    pair = an_undecided_pair(study, make_worker)
    worker, session = a_session_waiting_for_prolific(study)
    label = label_in_session(worker, session, pair)
    standin.add_submission(SUBMISSION, "pid-waiting")
    answer = identity.check_session(session.pk)
    assert answer is not None and answer.state == MarketCheck.VOUCHED
    label.refresh_from_db()
    assert label.awaiting_market_session is None and counts(label)
    pair.refresh_from_db()
    assert (pair.label_count, pair.contradiction_votes, pair.gold_label) == (4, 3, CONTRADICTION)
    assert find_disagreements(study.dataset)[0] == 0
    # The maintained aggregates (the dashboard's gold counts) moved with the recount.
    assert tallies.check_and_rebuild(study.dataset, tallies.PAIRS_ONLY, repair=False).keys == 0
    # A label written after the vouching counts at once.
    second = an_undecided_pair(study, make_worker)
    later = label_in_session(worker, session, second)
    assert later.awaiting_market_session is None
    second.refresh_from_db()
    assert second.gold_label == CONTRADICTION


def test_a_label_back_from_waiting_takes_its_place_from_a_later_replacement(standin, make_worker):
    study = make_study()
    connect_prolific(study, standin)
    pair = an_undecided_pair(study, make_worker)  # positions 1-3
    worker, session = a_session_waiting_for_prolific(study)
    label_in_session(worker, session, pair)  # position 4, waiting
    add_labels([(pair, Label.ENTAILMENT)], worker=make_worker())  # 5
    add_labels([(pair, Label.ENTAILMENT)], worker=make_worker())  # 6: five count now
    pair.refresh_from_db()
    assert (pair.label_count, pair.entailment_votes, pair.gold_label) == (5, 3, Label.ENTAILMENT)
    standin.add_submission(SUBMISSION, "pid-waiting")
    identity.check_session(session.pk)
    pair.refresh_from_db()
    # The earliest five that count: the waiting label (4) is in, the latest (6) drops out.
    assert (pair.label_count, pair.entailment_votes, pair.contradiction_votes) == (5, 2, 3)
    assert pair.gold_label == CONTRADICTION
    assert find_disagreements(study.dataset)[0] == 0


def test_a_refused_sessions_labels_never_count(standin, make_worker):
    study = make_study()
    connect_prolific(study, standin)
    pair = an_undecided_pair(study, make_worker)
    worker, session = a_session_waiting_for_prolific(study, pid="forged-pid")
    label = label_in_session(worker, session, pair)
    standin.add_submission(SUBMISSION, "owner-pid")  # the submission is someone else's
    answer = identity.check_session(session.pk)
    assert answer is not None and answer.state == MarketCheck.REFUSED
    # Even a researcher including the id again does not bring the label back.
    set_workers_excluded(Worker.objects.filter(pk=worker.pk), False, teams=[default_team_id()])
    label.refresh_from_db()
    assert label.awaiting_market_session == session.pk and not counts(label)
    pair.refresh_from_db()
    assert (pair.label_count, pair.gold_label) == (3, "-")
    assert find_disagreements(study.dataset)[0] == 0


def test_a_study_without_a_connection_counts_labels_at_once(make_worker):
    study = make_study(slug="no-market")
    pair = an_undecided_pair(study, make_worker)
    worker = make_worker(market=Market.PROLIFIC, external_id="pid-plain")
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="S-plain")
    assert session.market_check == MarketCheck.UNCHECKED
    label = label_in_session(worker, session, pair)
    assert label.awaiting_market_session is None and counts(label)
    assert Pair.objects.get(pk=pair.pk).gold_label == CONTRADICTION
