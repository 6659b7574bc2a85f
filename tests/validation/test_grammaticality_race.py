"""Two judges submitting the same hypothesis at once never give it more judgments than wanted
(PostgreSQL: real row locks, two connections)."""

from datetime import timedelta
from functools import partial

import pytest
from django.utils import timezone

from corpus.models import Dataset, GrammaticalityJudgment, Pair
from tests import factories
from validation import grammaticality as grammar
from validation.models import GrammaticalityClaim

from .concurrent_submits import submit_at_once


@pytest.mark.django_db(transaction=True)
def test_two_judges_at_once_never_add_a_judgment_more_than_wanted(make_worker):
    dataset = factories.dataset("gram-race")
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    pair = factories.pair(dataset, factories.premise(dataset), ["neutral"])
    judges = [make_worker(), make_worker()]
    for judge in judges:  # both were served the hypothesis; their pages ran out, so neither holds its place
        GrammaticalityClaim.objects.create(worker=judge, pair=pair, expires_at=timezone.now() - timedelta(minutes=1))
    outcomes = submit_at_once(
        lambda: Pair.objects.select_for_update().get(pk=pair.pk),
        [partial(grammar.submit_judgments, worker, {pair.pk: "none"}) for worker in judges],
        what="the pair",
    )
    assert not [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert GrammaticalityJudgment.objects.filter(pair=pair).count() == 1
    assert sorted(len(created) for created in outcomes) == [0, 1]  # one judge's judgment kept, the other's not needed
    assert grammar.hypotheses_to_judge(make_worker()) == []


def test_a_full_hypothesis_is_skipped_and_the_rest_of_the_page_kept(make_worker, db):
    dataset = factories.dataset("gram-full")
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    full, open_ = (factories.pair(dataset, factories.premise(dataset), ["neutral"]) for _ in range(2))
    late, quick = make_worker(), make_worker()
    # A page the late judge was served (it ran out meanwhile); the quick judge filled one of its hypotheses.
    for pair in (full, open_):
        GrammaticalityClaim.objects.create(worker=late, pair=pair, expires_at=timezone.now() - timedelta(minutes=1))
    GrammaticalityClaim.objects.create(worker=quick, pair=full, expires_at=timezone.now() + timedelta(minutes=5))
    grammar.submit_judgments(quick, {full.pk: "minor"})
    created = grammar.submit_judgments(late, {full.pk: "none", open_.pk: "major"})
    assert [judgment.pair_id for judgment in created] == [open_.pk]
    assert GrammaticalityJudgment.objects.filter(pair=full).count() == 1
