"""A pair's held places follow its live claims, so that fully held pairs leave the claim index
(claims walked past every pair that live claims held). Every claim recounts its locked
candidates' places (`crowd.claiming`'s `after`); the count is only a hint, a claim always recounts
before taking a place. PostgreSQL: the plans read the partial indexes."""

import re
from datetime import timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from corpus.models import Label, Pair, Split
from corpus.services import create_pairs
from tests import factories
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import make_pair


def held(pair):
    pair.refresh_from_db()
    return pair.held_places


def claimed(batch):
    return set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))


def test_claims_submits_and_expiry_move_the_held_places(dataset, make_worker):
    pair = make_pair(dataset)
    holders = [make_worker() for _ in range(4)]
    batches = [present(batch_claims.claim_validation_batch(holder, dataset=dataset)) for holder in holders]
    assert all(claimed(batch) == {pair.pk} for batch in batches)
    assert held(pair) == 4  # one label and four live claims: full, out of the claim index
    assert batch_claims.claim_validation_batch(make_worker(), dataset=dataset) is None

    services.submit_validation_batch(holders[0], batches[0], {pair.pk: Label.NEUTRAL})
    assert held(pair) == 3  # the place became a label
    pair.refresh_from_db()
    assert pair.label_count == 2

    # A claim runs out: the pair is out of the index with a stale count, and still comes back.
    ValidationClaim.objects.filter(batch=batches[1]).update(expires_at=timezone.now() - timedelta(seconds=1))
    late = make_worker()
    assert claimed(batch_claims.claim_validation_batch(late, dataset=dataset)) == {pair.pk}
    assert held(pair) == 3


def test_pairs_whose_claims_ran_out_come_back_at_the_beat_not_on_every_claim(dataset, make_worker):
    full, other = make_pair(dataset), make_pair(dataset)
    holders = [make_worker() for _ in range(4)]
    batches = [present(batch_claims.claim_validation_batch(holder, dataset=dataset)) for holder in holders]
    assert held(full) == 4 and held(other) == 4
    ValidationClaim.objects.filter(batch__in=batches[:2], pair=full).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    # A claim that finds a free pair leaves the others' claims alone: no sweep of the claim table.
    new = make_pair(dataset)
    assert claimed(batch_claims.claim_validation_batch(make_worker(), dataset=dataset)) == {new.pk}
    assert held(full) == 4
    # The beat's release marks them expired and takes `full` back into the index.
    assert services.release_expired_claims() == 2
    assert held(full) == 2
    assert set(ValidationClaim.objects.filter(batch__in=batches[:2], pair=full).values_list("status", flat=True)) == {
        "expired"
    }


def test_the_release_of_expired_claims_reads_the_index_of_open_claims(dataset, make_worker):
    """The beat's statement walks a partial index of open claims (by pair or by session: on an empty
    table either), not the whole claim table (submitted claims never leave it)."""
    open_indexes = [index.name for index in ValidationClaim._meta.indexes if index.condition == Q(status="open")]
    assert len(open_indexes) >= 2, open_indexes
    expired = ValidationClaim.objects.filter(status="open", expires_at__lte=timezone.now()).values("pair_id")
    sql, params = expired.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert any(re.search(rf"(using|on) {name}\b", plan) for name in open_indexes), plan


def test_the_claim_walks_the_index_of_pairs_with_free_places(dataset, make_worker):
    """The candidate query reads the partial index that leaves fully held pairs out."""
    from validation.selectors import candidate_statement

    # Many pairs outside the queue and a few in it, with statistics: with one pair and none, the
    # planner's choice among the indexes is a coin toss (it walked another index on PostgreSQL 18).
    premise = factories.premise(dataset, factories.genre("fiction"), Split.DEV)
    outside = [
        Pair(
            premise=premise,
            pair_id=f"{premise.prompt_id}-x{n}",
            hypothesis=f"Claim number {n}.",
            author_label="entailment",
        )
        for n in range(2000)
    ]
    made = create_pairs(dataset, premise.split, outside, [["entailment"]] * len(outside))
    Pair.objects.filter(pk__in=[pair.pk for pair in made]).update(needs_validation=False)
    for _ in range(3):
        make_pair(dataset)
    sql, params = candidate_statement(make_worker(), timezone.now(), dataset=dataset, limit=15)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Pair._meta.db_table}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "pair_claim_queue_free" in plan, plan
    assert Pair.objects.filter(held_places__gt=0).count() == 0
