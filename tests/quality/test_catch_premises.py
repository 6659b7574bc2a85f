"""Catch trials that colluders pooling their pages cannot spot, and catch pools
that a researcher can run.

- A catch premise looks like any other: its unmarked siblings are served in the catch role too (a
  premise that only ever came with one hypothesis was a catch trial), answered and not scored; its
  pairs are served in a run, one claim after another, as an ordinary premise's are.
- A catch pair's servings are its catch servings: a five-label pair validated before it was marked
  starts with all four.
- A premise with pairs still in the validation queue waits; a premise the worker labelled is never
  their catch trial.
- A study whose catch share cannot be met says so when saved and on its page; writing studies list
  no catch pool.

The colluders' attack itself runs over HTTP: bench/attacks/catch_colluders.py (docs/quality.md).
"""

import random
from decimal import Decimal

import pytest
from django.urls import reverse

from corpus.models import Label, Pair
from crowd.models import Study, TaskKind
from quality.catch_trials import MAX_SERVINGS, catch_pool_status, catch_pools, catch_trials_per_batch
from quality.models import BonusEntry, CatchTrialAnswer
from quality.services import set_reference_label
from tests import factories
from tests.crowd.test_pasted_worker_lists import change_form_data
from tests.present import present
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
from validation.models import ValidationClaim
from validation.selectors import BATCH_SIZE, study_catch_shortfall

pytestmark = pytest.mark.django_db

THREE = [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION]


def finished_premise(dataset, *, marked=1):
    """A premise whose three pairs are finished (out of the validation queue), the first `marked`
    of them marked as catch trials by a researcher: [marked pairs], [unmarked siblings]."""
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, [label] * 5, needs_validation=False) for label in THREE]
    for pair in pairs[:marked]:
        set_reference_label(pair, pair.author_label, is_catch_trial=True)
    return pairs[:marked], pairs[marked:]


def ordinary_pairs(dataset, premises):
    return [
        factories.pair(dataset, factories.premise(dataset), [label], needs_validation=True)
        for label in THREE * premises
    ]


def claim_in_study(study, worker, number):
    return present(batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker, f"S{number}")))


def catch_claims_of(batch):
    return list(ValidationClaim.objects.filter(batch=batch, is_catch_trial=True))


def submit_all(worker, batch, label=Label.ENTAILMENT):
    answers = {claim.pair_id: label for claim in ValidationClaim.objects.filter(batch=batch)}
    return services.submit_validation_batch(worker, batch, answers)


def test_a_catch_premise_shows_every_hypothesis_and_only_the_marked_pair_is_scored(make_worker, monkeypatch):
    dataset = make_dataset()
    ordinary_pairs(dataset, 30)
    (marked,), siblings = finished_premise(dataset)
    study = make_study(dataset, share=0.2)
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)  # every batch may open a premise
    monkeypatch.setattr(batch_claims, "catch_keep_draw", lambda: 0.0)  # and misses none: the run alone
    served: dict[int, int] = {}
    for number in range(3 * MAX_SERVINGS + 1):
        worker = make_worker()
        batch = claim_in_study(study, worker, number)
        for claim in catch_claims_of(batch):
            served[claim.pair_id] = served.get(claim.pair_id, 0) + 1
        submit_all(worker, batch, marked.author_label)
    # Pooled, the premise came with its three hypotheses, each four times, as an ordinary premise does.
    assert served == {pair.pk: MAX_SERVINGS for pair in [marked, *siblings]}
    # Only the researcher's marked pair is scored and pays; the siblings' answers are neither.
    answers = CatchTrialAnswer.objects.all()
    assert set(answers.values_list("pair_id", flat=True)) == {marked.pk} and answers.count() == MAX_SERVINGS
    assert BonusEntry.objects.filter(pair=marked).count() == MAX_SERVINGS
    assert not BonusEntry.objects.exclude(pair=marked).exists()


def test_an_open_catch_premise_is_served_in_a_run_before_another_is_opened(make_worker, monkeypatch):
    """Drawn place by place, a catch premise's servings took 1 / share times longer to gather than an
    ordinary premise's, and how long a premise stayed around told it (the colluders' attack)."""
    dataset = make_dataset()
    ordinary_pairs(dataset, 30)
    first, second = finished_premise(dataset), finished_premise(dataset)
    study = make_study(dataset, share=0.2)
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)
    monkeypatch.setattr(batch_claims, "catch_keep_draw", lambda: 0.0)  # no missed batch: the run alone
    opener = make_worker()
    opened = catch_claims_of(claim_in_study(study, opener, "opener"))
    assert len(opened) == 1
    premise = opened[0].pair.premise_id
    # No new premise is opened from now on: the claims that follow finish the open one, pair by pair.
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 1.0)
    order = [opened[0].pair_id]
    for number in range(3 * MAX_SERVINGS):
        catch = catch_claims_of(claim_in_study(study, make_worker(), number))
        order += [claim.pair_id for claim in catch]
        assert all(claim.pair.premise_id == premise for claim in catch)
    # Twelve servings, each pair four times in a row (closest to complete first), then none.
    assert len(order) == 3 * MAX_SERVINGS
    assert [order[i : i + MAX_SERVINGS] for i in range(0, len(order), MAX_SERVINGS)] == [
        [pk] * MAX_SERVINGS for pk in dict.fromkeys(order)
    ]
    other = {pair.pk for pair in first[0] + first[1] + second[0] + second[1]} - set(order)
    assert not ValidationClaim.objects.filter(pair_id__in=other).exists()


def test_a_pair_validated_before_it_was_marked_starts_with_every_catch_serving(make_worker, monkeypatch):
    """Its four ordinary claims are its past: counted as servings, a five-label pair (the labelling
    page suggests them first) started used up and was never served."""
    dataset = make_dataset()
    target = make_pair(dataset, needs_validation=True)
    for _ in range(MAX_SERVINGS):
        validator = make_worker()
        batch = present(batch_claims.claim_validation_batch(validator, dataset=dataset))
        submit_all(validator, batch)
    target.refresh_from_db()
    assert target.label_count == 5 and ValidationClaim.objects.filter(pair=target).count() == MAX_SERVINGS
    set_reference_label(target, Label.ENTAILMENT, is_catch_trial=True)
    ordinary_pairs(dataset, 10)
    study = make_study(dataset, share=0.2)
    assert catch_pool_status(dataset, ValidationClaim.objects.all())["servings_left"] == MAX_SERVINGS
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)
    monkeypatch.setattr(batch_claims, "catch_keep_draw", lambda: 0.0)  # no missed batch
    served = [
        claim.pair_id
        for number in range(MAX_SERVINGS + 1)
        for claim in catch_claims_of(claim_in_study(study, make_worker(), number))
    ]
    assert served == [target.pk] * MAX_SERVINGS


def test_a_catch_premise_with_pairs_in_the_validation_queue_waits(make_worker, monkeypatch):
    dataset = make_dataset()
    ordinary_pairs(dataset, 10)
    premise = factories.premise(dataset)
    trap = factories.pair(dataset, premise, [Label.ENTAILMENT] * 5, needs_validation=False)
    factories.pair(dataset, premise, [Label.NEUTRAL], needs_validation=True)
    set_reference_label(trap, Label.ENTAILMENT, is_catch_trial=True)
    study = make_study(dataset, share=1.0)
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)
    for number in range(3):
        assert not catch_claims_of(claim_in_study(study, make_worker(), number))
    pool = catch_pool_status(dataset, ValidationClaim.objects.all())
    assert (pool["marked"], pool["waiting"], pool["pairs"], pool["dry"]) == (1, 1, 0, True)
    assert "still waiting for validation" in present(study_catch_shortfall(study))


def test_a_premise_the_worker_labelled_is_never_their_catch_trial(make_worker, monkeypatch):
    dataset = make_dataset()
    ordinary_pairs(dataset, 10)
    premise = factories.premise(dataset)
    trap = factories.pair(dataset, premise, [Label.ENTAILMENT] * 5, needs_validation=False)
    worker = make_worker()
    # Its fifth label is this worker's (given before the premise left the validation queue).
    labelled = factories.pair(dataset, premise, [Label.NEUTRAL] * 5, validators=[None, None, None, worker])
    Pair.objects.filter(pk=labelled.pk).update(needs_validation=False)
    set_reference_label(trap, Label.ENTAILMENT, is_catch_trial=True)
    study = make_study(dataset, share=1.0)
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)
    assert not catch_claims_of(claim_in_study(study, worker, "labeller"))
    assert [claim.pair.premise_id for claim in catch_claims_of(claim_in_study(study, make_worker(), "x"))] == [
        premise.pk
    ]


def test_the_study_says_when_its_catch_share_cannot_be_met(make_worker):
    dataset = make_dataset()
    ordinary_pairs(dataset, 4)
    study = make_study(dataset, share=0.05)
    assert "no pair of its dataset" in present(study_catch_shortfall(study))
    finished_premise(dataset)  # twelve servings
    assert study_catch_shortfall(study) is None
    # 100 participants x 10 batches x 0.25 catch trials a batch: about 250, against 12.
    study.planned_sessions = 100
    message = present(study_catch_shortfall(study))
    assert "100 planned participants × 10 batches need about 250 catch trials" in message
    assert "12 servings left" in message and "about 20 more premises" in message
    study.planned_sessions = 4  # about 10
    assert study_catch_shortfall(study) is None
    study.catch_trial_share = 0
    assert study_catch_shortfall(study) is None


def test_a_writing_study_has_no_catch_pool_to_list_or_warn_about(make_worker):
    dataset = make_dataset()
    writing = Study.objects.create(
        slug="writing", name="Writing", dataset=dataset, task_kind=TaskKind.WRITING, catch_trial_share=0.01
    )
    validation = make_study(dataset, share=0.01)
    pools = catch_pools([writing, validation], ValidationClaim.objects.all())
    assert [pool["study"] for pool in pools] == [validation]
    assert study_catch_shortfall(writing) is None


def test_saving_a_study_without_catch_pairs_warns_and_its_page_says_so(admin_client, make_worker):
    dataset = make_dataset()
    ordinary_pairs(dataset, 2)
    study = Study.objects.create(
        slug="short",
        name="Short",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=5,
        completion_code="CODE",
        catch_trial_share=0.1,
        bonus_per_catch_match=Decimal("0.50"),
    )
    data = change_form_data(admin_client, study)
    response = admin_client.post(reverse("admin:crowd_study_change", args=[study.pk]), data, follow=True)
    shown = [str(message) for message in response.context["messages"]]
    assert any("no pair of its dataset" in message and "Label pairs page" in message for message in shown), shown
    page = admin_client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert 'id="catch-shortfall"' in page and "no catch bonus can be earned" in page
    # Once the pool can serve, the page says nothing.
    finished_premise(dataset)
    page = admin_client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert 'id="catch-shortfall"' not in page


def test_an_open_catch_premise_misses_a_batch_when_its_keep_draw_fails(make_worker, monkeypatch):
    """Taken by every batch that could, a catch premise went round in exactly twelve of the pool's
    batches while an ordinary one misses some: pooled pages told it by its lifetime."""
    dataset = make_dataset()
    ordinary_pairs(dataset, 30)
    finished_premise(dataset)
    study = make_study(dataset, share=0.2)
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)
    opened = catch_claims_of(claim_in_study(study, make_worker(), "opener"))
    assert len(opened) == 1
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 1.0)  # no other premise opens
    # Every third batch draws over KEEP_CHANCE and misses the premise; the others take it.
    keeps = iter([0.0, 0.0, 0.99] * 2 * MAX_SERVINGS)
    monkeypatch.setattr(batch_claims, "catch_keep_draw", lambda: next(keeps))
    carried = [
        len(catch_claims_of(claim_in_study(study, make_worker(), number))) for number in range(3 * MAX_SERVINGS + 5)
    ]
    assert carried[:6] == [1, 1, 0, 1, 1, 0]
    # It still gets its twelve servings, over more batches than twelve.
    assert sum(carried) == 3 * MAX_SERVINGS - 1
    last = max(number for number, count in enumerate(carried) if count)
    assert last + 2 > 3 * MAX_SERVINGS


def seeded_draws(monkeypatch, seed):
    """The catch draws (opening a premise, keeping a batch) from one seeded generator."""
    draws = random.Random(seed)
    monkeypatch.setattr(batch_claims, "catch_draw", draws.random)
    monkeypatch.setattr(batch_claims, "catch_keep_draw", draws.random)


def test_the_study_keeps_its_catch_share_whatever_the_premises_pace(make_worker, monkeypatch):
    """Missed batches, and premises still open when the claims stop, are made up by the openings: the
    study's catch trials served and still to come from its open premises stay within one premise
    of its share, where a fixed opening chance drifts by several premises."""
    dataset = make_dataset()
    ordinary_pairs(dataset, 40)
    for _ in range(8):
        finished_premise(dataset)
    study = make_study(dataset, share=0.2)
    seeded_draws(monkeypatch, 0)
    batches = 60
    for number in range(batches):
        worker = make_worker()
        submit_all(worker, claim_in_study(study, worker, number))
    claims = ValidationClaim.objects.all()
    served = claims.filter(is_catch_trial=True).count()
    open_premises = set(claims.filter(is_catch_trial=True).values_list("pair__premise_id", flat=True))
    left = sum(
        MAX_SERVINGS - claims.filter(pair=pair, is_catch_trial=True).count()
        for pair in Pair.objects.filter(premise_id__in=open_premises)
    )
    owed = catch_trials_per_batch(0.2, BATCH_SIZE) * batches
    assert served > 0
    assert abs(served + left - owed) <= 3 * MAX_SERVINGS, (served, left, owed)


def test_a_claim_reads_what_the_study_was_served_from_its_sessions_not_its_claims(make_worker, monkeypatch):
    """The study's served batches and catch trials, which a claim needs to keep its share,
    are one row a session (`SessionServed`), equal to what its claims count; a claim no longer
    counts the study's claims (654 ms at 160k claims), and a preview's batches are not the study's."""
    from django.db import connection
    from django.db.models import Count, Q
    from django.test.utils import CaptureQueriesContext

    from validation.models import SessionServed
    from validation.selectors import study_served

    dataset = make_dataset()
    ordinary_pairs(dataset, 12)
    for _ in range(4):
        finished_premise(dataset)
    study = make_study(dataset, share=0.3)
    seeded_draws(monkeypatch, 1)
    for number in range(6):
        worker = make_worker()
        with CaptureQueriesContext(connection) as statements:
            batch = claim_in_study(study, worker, number)
        assert not [q["sql"] for q in statements if "COUNT(DISTINCT" in q["sql"].upper()]
        submit_all(worker, batch)
    counted = ValidationClaim.objects.filter(study_session__study=study).aggregate(
        batches=Count("batch", distinct=True), catch=Count("pk", filter=Q(is_catch_trial=True))
    )
    assert study_served(study.pk) == (counted["batches"], counted["catch"]) == (6, counted["catch"])
    assert counted["catch"] > 0 and SessionServed.objects.count() == 6
    preview = session_for(study, make_worker(), "preview")
    preview.is_preview = True
    preview.save(update_fields=["is_preview"])
    present(batch_claims.claim_validation_batch(preview.worker, study_session=preview))
    assert study_served(study.pk) == (6, counted["catch"])  # the preview's batch is not the study's
    assert not SessionServed.objects.filter(study_session=preview).exists()
