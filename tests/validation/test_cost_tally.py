"""The cost page's validation figures per study are maintained (validation.cost_tally): the
labels bought and the credited pairs by state equal a fresh count from the claims and pairs, and
the page's grouped rows equal the statements they replace (scans of every claim and pair), after
submits in two studies and outside any, an exclusion, a stop and a reopen, a split move and an
adjudication; a write around the writers shows as drift and the one check and rebuild repairs it."""

import pytest
from django.db.models import Count

from corpus import tallies
from corpus.models import LABELS_PER_PAIR, Label, Pair, Premise, StoppingRule
from corpus.scope import Scope
from corpus.stopping_policies import set_stopping_policy
from corpus.validation_flags import set_validation_flags
from crowd.models import StudySession
from dashboard.queries.costs import _grouped_rows
from quality.services import set_excluded
from teams.models import default_team_id
from tests.present import present
from validation import adjudication, cost_tally, credits
from validation.models import CreditedPairTally, ValidationClaim

from .test_credits import fresh_outcome_rows, validate, validated_in_two_studies
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db


@pytest.fixture
def validated(dataset, make_worker):
    return validated_in_two_studies(dataset, make_worker)


def fresh_rows(dataset=None):
    """The cost page's grouped counts as they were read before the tallies: every claim and pair."""
    bought = (
        credits.countable(Scope.of_dataset(dataset))
        .values("study_session__study_id", "pair__premise__split", "pair__premise__genre__slug")
        .annotate(n=Count("id"))
        .order_by()
    )
    pool = Pair.objects.filter(needs_validation=True, stopped_early=False, label_count__lt=LABELS_PER_PAIR)
    if dataset is not None:
        pool = pool.filter(dataset=dataset)
    pool_rows = pool.values("premise__split", "premise__genre__slug", "label_count").annotate(n=Count("id"))
    return {
        "bought": sorted(bought, key=repr),
        "outcomes": fresh_outcome_rows(dataset),
        "pool": sorted(pool_rows.order_by(), key=repr),
    }


def assert_tallies_are_true(dataset=None):
    report = tallies.check_and_rebuild(dataset, cost_tally.TALLY, repair=False)
    assert (report.keys, report.rows, report.examples) == (0, 0, [])
    pairs = tallies.check_and_rebuild(dataset, tallies.PAIRS_ONLY, repair=False)
    assert (pairs.keys, pairs.rows) == (0, 0)
    rows = _grouped_rows(Scope.of_dataset(dataset))
    read = {name: sorted((dict(row) for row in rows[name]), key=repr) for name in ("bought", "outcomes", "pool")}
    assert read == fresh_rows(dataset)


def test_submits_exclusions_stops_split_moves_and_decisions_keep_the_tallies_true(validated, researcher):
    dataset, one, two, workers = validated
    assert_tallies_are_true()
    bought = {row["study_session__study_id"]: row["n"] for row in _grouped_rows(Scope.everything())["bought"]}
    assert bought == {one.pk: 10, two.pk: 5}  # two validators of study one and one of study two, five pairs each

    set_excluded(
        [workers[2].pk], True, teams=[default_team_id()]
    )  # their labels leave every pair: four left, three of them N
    assert_tallies_are_true(dataset)
    set_stopping_policy(dataset, "dev", StoppingRule.DECIDED)  # stops the pairs whose gold is settled
    assert Pair.objects.filter(stopped_early=True).exists()
    assert_tallies_are_true()
    set_stopping_policy(dataset, "dev", StoppingRule.FIXED)  # and reopens them
    assert not Pair.objects.filter(stopped_early=True).exists()
    assert_tallies_are_true()

    pair = present(Pair.objects.order_by("pk").first())
    set_validation_flags(Pair.objects.filter(pk=pair.pk), stopped_early=True, needs_validation=False)
    adjudication.decide(pair, adjudication.RETIRE, researcher=researcher, reason="broken")  # gold "-" now
    assert_tallies_are_true()
    # Every premise moves to test, as split assignment moves them (collection.splits).
    moving = Premise.objects.filter(dataset=dataset)
    tallies.premises_moving(moving, "test")
    moving.update(split="test")
    assert_tallies_are_true()
    assert {row["pair__premise__split"] for row in _grouped_rows(Scope.everything())["bought"]} == {"test"}


def test_a_write_around_the_writers_is_drift_and_the_check_repairs_it(validated):
    dataset, _, two, _ = validated
    StudySession.objects.filter(study=two).delete()  # its claims name no session: no label was bought
    report = tallies.check_and_rebuild(None, cost_tally.TALLY, repair=False)
    assert report.keys > 0 and report.rows >= 5
    cost_tally.rebuild_with_credits()  # the credit moves back to study one's claims; the tallies with it
    assert_tallies_are_true()
    ValidationClaim.objects.filter(credited=True).update(credited=False)  # a load around the submit
    assert tallies.check_and_rebuild(dataset, cost_tally.TALLY).keys > 0
    cost_tally.rebuild_with_credits(dataset)
    assert_tallies_are_true(dataset)


def test_a_submit_moves_the_credit_of_a_pair_validated_before(validated, make_worker):
    """A pair's credit goes from the study of its earlier claim to the submit's."""
    dataset, one, two, _ = validated
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL, author=make_worker())
    for study in (two, one):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"again-{worker.pk}")
        validate(worker, Label.NEUTRAL, session)
        assert_tallies_are_true()
    credited = tallies.summed(tallies.scoped(CreditedPairTally, Scope.of_dataset(dataset)), ("study_id",))
    assert dict(credited) == {one.pk: 5, two.pk: 5}  # the new pairs are study one's now, the others two's
