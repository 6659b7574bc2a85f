"""The cost page's credit of each validated pair to the study of its latest label, maintained by
the validation submit (validation.credits): the flagged claims equal a fresh computation,
and the page's outcome rows equal the per-pair subquery they replace, after submits in two studies
and outside any, an exclusion, a pair stopped early, a study session deleted and a rebuild."""

import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db.models import Count, Exists, ExpressionWrapper, F, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, NO_GOLD, Label, Pair
from corpus.scope import Scope
from corpus.validation_flags import set_validation_flags
from crowd.models import Study, StudySession, TaskKind
from dashboard.queries.costs import _outcome_rows
from quality.services import set_excluded
from teams.models import default_team_id
from tests.present import present
from validation import batch_claims, cost_tally, credits, services
from validation.models import ValidationClaim

from .validation_factories import make_pair

pytestmark = pytest.mark.django_db


def fresh_outcome_rows(dataset=None):
    """The cost page's statement 5 as it was: each validated pair credited through a subquery."""
    claims = credits.countable().filter(pair=OuterRef("pk"))
    validated = Pair.objects.filter(Exists(claims))
    if dataset is not None:
        validated = validated.filter(dataset=dataset)
    finished = Q(stopped_early=True) | Q(label_count__gte=LABELS_PER_PAIR)
    validation_labels = ExpressionWrapper(F("label_count") - AUTHOR_POSITION, output_field=IntegerField())
    saved_labels = ExpressionWrapper(LABELS_PER_PAIR - F("label_count"), output_field=IntegerField())
    rows = (
        validated.annotate(
            credited_to=Subquery(claims.order_by("-submitted_at", "-id").values("study_session__study_id")[:1])
        )
        .values("credited_to", "premise__split", "premise__genre__slug")
        .annotate(
            gold=Count("id", filter=~Q(gold_label=NO_GOLD)),
            saved=Coalesce(Sum(saved_labels, filter=Q(stopped_early=True, label_count__lt=LABELS_PER_PAIR)), 0),
            finished=Count("id", filter=finished),
            finished_labels=Coalesce(Sum(validation_labels, filter=finished), 0),
        )
        .order_by()
    )
    return sorted(rows, key=repr)


def assert_credits_are_fresh(dataset=None):
    flagged = set(ValidationClaim.objects.filter(credited=True).values_list("pk", flat=True))
    # A values("latest") queryset: its rows are {"latest": claim id}.
    assert flagged == {row["latest"] for row in credits.fresh_credited_ids(dataset)}
    assert sorted(_outcome_rows(Scope.of_dataset(dataset)), key=repr) == fresh_outcome_rows(dataset)


def validation_study(dataset, slug):
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code=slug.upper(),
        payment_per_task=Decimal("0.50"),
        bonus_currency="GBP",
    )


def validate(worker, label, session=None):
    batch = batch_claims.claim_validation_batch(worker, study_session=session)
    assert batch is not None
    pairs = ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)
    services.submit_validation_batch(worker, batch, dict.fromkeys(pairs, label))


@pytest.fixture
def validated(dataset, make_worker):
    return validated_in_two_studies(dataset, make_worker)


def validated_in_two_studies(dataset, make_worker):
    """Five pairs validated by two workers of study one, then one of study two (their latest labels
    in a study), then one outside any study (whose claims no study is credited with)."""
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL, author=make_worker())
    one, two = validation_study(dataset, "validation-one"), validation_study(dataset, "validation-two")
    workers = []
    for study, label in ((one, Label.NEUTRAL), (one, Label.NEUTRAL), (two, Label.ENTAILMENT)):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{worker.pk}")
        validate(worker, label, session)
        workers.append(worker)
    validate(make_worker(), Label.CONTRADICTION)
    return dataset, one, two, workers


def test_submits_credit_each_pair_to_its_latest_study(validated):
    dataset, _, two, _ = validated
    assert_credits_are_fresh()
    assert_credits_are_fresh(dataset)
    # Study two's label is each pair's latest in a study: one credited claim a pair, all study two's.
    credited = ValidationClaim.objects.filter(credited=True)
    assert credited.count() == 5
    assert set(credited.values_list("study_session__study_id", flat=True)) == {two.pk}
    rows = _outcome_rows(Scope.everything())
    assert {row["credited_to"] for row in rows} == {two.pk}
    assert sum(row["gold"] for row in rows) == 5  # N by the author and study one's two validators (three of five)


def test_an_exclusion_and_a_stop_change_the_figures_not_the_credit(validated):
    _, _, _, workers = validated
    before = _outcome_rows(Scope.everything())
    set_excluded([workers[0].pk, workers[1].pk], True, teams=[default_team_id()])  # their labels leave the pairs' gold
    # Stopped by the flags' one writer (the stopping rules' and the markings'), which the tallies follow.
    set_validation_flags(Pair.objects.filter(pk=present(Pair.objects.order_by("pk").first()).pk), stopped_early=True)
    assert_credits_are_fresh()
    assert _outcome_rows(Scope.everything()) != before


def test_a_deleted_session_is_repaired_by_a_rebuild(validated):
    dataset, one, two, _ = validated
    StudySession.objects.filter(study=two).delete()  # its claims name no session: study one's are latest
    # The flags, and the cost page's tallies that follow them (validation.cost_tally).
    assert cost_tally.rebuild_with_credits() > 0
    assert_credits_are_fresh()
    assert {row["credited_to"] for row in _outcome_rows(Scope.everything())} == {one.pk}
    ValidationClaim.objects.update(credited=False)  # as after a bulk load around the submit
    out = io.StringIO()
    call_command("rebuild_validation_credits", stdout=out)
    assert "5 claims changed" in out.getvalue()
    assert_credits_are_fresh()
    assert credits.rebuild(dataset) == 0
