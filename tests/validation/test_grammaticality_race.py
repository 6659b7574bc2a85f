"""Two judges submitting the same hypothesis at once never give it more judgments than wanted
(PostgreSQL: real row locks, two connections)."""

import threading

import pytest
from django.db import connection, connections, transaction

from corpus.models import Dataset, GrammaticalityJudgment, Pair
from tests import factories
from tests.conftest import wait_for
from validation import grammaticality as grammar


def waiting_on_locks():
    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL keeps the first statistics snapshot: take a fresh one.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_judges_at_once_never_add_a_judgment_more_than_wanted(make_worker):
    dataset = factories.dataset("gram-race")
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    pair = factories.pair(dataset, factories.premise(dataset), ["neutral"])
    judges = [make_worker(), make_worker()]
    saved, errors = {}, []

    def judge(worker):
        try:
            saved[worker.pk] = len(grammar.submit_judgments(worker, {pair.pk: "none"}))
        except Exception as error:  # reported by the assertion below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=judge, args=(worker,)) for worker in judges]
    # Hold the pair's row so that both submits are in flight together, then let them go.
    with transaction.atomic():
        Pair.objects.select_for_update().get(pk=pair.pk)
        for thread in threads:
            thread.start()
        wait_for(
            lambda: waiting_on_locks() >= 2 or not all(thread.is_alive() for thread in threads),
            timeout=180,
            message="both submits waiting on the pair",
        )
        assert all(thread.is_alive() for thread in threads), f"a submit did not wait for the pair: {errors}"
    for thread in threads:
        thread.join(timeout=180)
    assert not errors
    assert GrammaticalityJudgment.objects.filter(pair=pair).count() == 1
    assert sorted(saved.values()) == [0, 1]  # one judge's judgment kept, the other's not needed
    assert grammar.hypotheses_to_judge(make_worker()) == []


def test_a_full_hypothesis_is_skipped_and_the_rest_of_the_page_kept(make_worker, db):
    dataset = factories.dataset("gram-full")
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    full, open_ = (factories.pair(dataset, factories.premise(dataset), ["neutral"]) for _ in range(2))
    grammar.submit_judgments(make_worker(), {full.pk: "minor"})
    late = make_worker()
    created = grammar.submit_judgments(late, {full.pk: "none", open_.pk: "major"})
    assert [judgment.pair_id for judgment in created] == [open_.pk]
    assert GrammaticalityJudgment.objects.filter(pair=full).count() == 1
