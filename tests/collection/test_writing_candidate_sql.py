"""The PostgreSQL claim's hand-written candidate statement picks what `claimable_premises` picks.

`collection.services.CANDIDATE_SQL` is `claimable_premises(...)` written out so that a claim does
not build the ORM query anew each time (bench/RESULTS-claims.md, "writing claims"); this checks,
premise after premise, that the two agree while claims, full premises, other datasets, set-aside
premises and premises without a split are all present, and that both read the claim-order index.
"""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from collection import services
from collection.models import WritingClaim
from corpus.models import Premise, PremiseStatus, Worker
from crowd.models import ClaimStatus
from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def worker(name):
    user = get_user_model().objects.create(username=name)
    return Worker.objects.create(user=user)


def candidate_ids(who, dataset, now, skipped=()):
    with transaction.atomic():
        raw = services._lock_candidate_id(who, dataset, now, list(skipped), skip_locked=True)
    orm = (
        services.claimable_premises(who, dataset=dataset, now=now)
        .exclude(pk__in=list(skipped))
        .values_list("pk", flat=True)
        .first()
    )
    return raw, orm


def test_the_written_out_candidate_is_the_one_the_orm_query_picks():
    dataset, genre = writing_setup(writings_per_premise=2)
    other_dataset, _ = writing_setup(slug="elsewhere", writings_per_premise=2)
    premises = add_premises(dataset, genre, 12)
    add_premises(other_dataset, genre, 3, start=100)
    add_premises(dataset, genre, 2, start=200, split="")
    Premise.objects.filter(pk=premises[0].pk).update(status=PremiseStatus.HELD)
    Premise.objects.filter(pk__in=[p.pk for p in premises[1:4]]).update(writings_done=1)
    Premise.objects.filter(pk=premises[5].pk).update(claims_made=3)
    now = timezone.now()
    a, b, c = worker("a"), worker("b"), worker("c")
    # a claimed premise 6 before; b holds premise 7 live; c's claim on premise 8 ran out.
    WritingClaim.objects.create(worker=a, premise=premises[6], status=ClaimStatus.SUBMITTED, expires_at=now)
    WritingClaim.objects.create(worker=b, premise=premises[7], expires_at=now + timedelta(minutes=30))
    WritingClaim.objects.create(worker=c, premise=premises[8], expires_at=now - timedelta(minutes=1))
    for who in (a, b, c, worker("d")):
        skipped = []
        while True:
            raw, orm = candidate_ids(who, dataset, now, skipped)
            assert raw == orm, (who.user.username, skipped)
            if raw is None:
                break
            skipped.append(raw)
        assert len(skipped) >= 8


def test_the_written_out_candidate_reads_the_claim_order_index():
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 5)
    who = worker("a")
    sql = services.CANDIDATE_SQL.format(
        premises=Premise._meta.db_table, claims=WritingClaim._meta.db_table, skip="SKIP LOCKED"
    )
    params = {
        "available": PremiseStatus.AVAILABLE.value,
        "dataset": dataset.pk,
        "worker": who.pk,
        "skipped": [],
        "now": timezone.now(),
        "open": ClaimStatus.OPEN.value,
        "limit": dataset.writings_per_premise,
    }
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "premise_claim_order" in plan, plan
