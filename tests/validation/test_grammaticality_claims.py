"""The grammaticality task under claims, as validation's batches: a page is claimed, its places are
held, and two judges at once never add a judgment more than wanted nor lose one they were offered."""

import random
import threading
import time

import pytest
from django.db import connection
from django.db.models import Count

from corpus.models import Dataset, GrammaticalityJudgment, Pair
from crowd.models import ClaimStatus
from tests import factories
from validation import grammaticality as grammar
from validation.batch_claims import ValidationRefused
from validation.models import GrammaticalityClaim


def hypotheses(slug, count, wanted):
    dataset = factories.dataset(slug)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=wanted)
    return [factories.pair(dataset, factories.premise(dataset), ["neutral"]) for _ in range(count)]


@pytest.mark.django_db
def test_a_page_holds_its_places_and_a_reload_gives_it_back(make_worker):
    (pair,) = hypotheses("gram-claims", 1, wanted=1)
    first, second = make_worker(), make_worker()
    assert grammar.hypotheses_to_judge(first) == [pair]
    assert grammar.hypotheses_to_judge(second) == []  # the only place is held by the first judge
    assert grammar.hypotheses_to_judge(first) == [pair]  # a reload: the same page
    assert GrammaticalityClaim.objects.filter(worker=first).count() == 1
    grammar.submit_judgments(first, {pair.pk: "minor"})
    assert GrammaticalityClaim.objects.get(worker=first).status == ClaimStatus.SUBMITTED
    assert grammar.hypotheses_to_judge(second) == []  # full now


@pytest.mark.django_db
def test_a_page_sent_in_part_shows_the_rest_and_never_the_judged_ones(make_worker):
    pairs = hypotheses("gram-part", 3, wanted=1)
    judge = make_worker()
    assert grammar.hypotheses_to_judge(judge) == pairs
    grammar.submit_judgments(judge, {pairs[0].pk: "none"})
    assert grammar.hypotheses_to_judge(judge) == pairs[1:]


@pytest.mark.django_db
def test_an_expired_page_gives_its_places_back_and_its_late_judgment_is_not_kept(make_worker):
    (pair,) = hypotheses("gram-expiry", 1, wanted=1)
    slow, quick = make_worker(), make_worker()
    assert grammar.hypotheses_to_judge(slow) == [pair]
    GrammaticalityClaim.objects.filter(worker=slow).update(expires_at="2000-01-01T00:00:00Z")
    assert grammar.hypotheses_to_judge(quick) == [pair]
    grammar.submit_judgments(quick, {pair.pk: "none"})
    assert grammar.submit_judgments(slow, {pair.pk: "major"}) == []
    assert list(GrammaticalityJudgment.objects.values_list("judgment", flat=True)) == ["none"]


@pytest.mark.django_db
def test_a_judgment_sent_without_a_page_never_takes_a_place_another_judge_holds(make_worker):
    (pair,) = hypotheses("gram-held", 1, wanted=1)
    holder, other = make_worker(), make_worker()
    grammar.hypotheses_to_judge(holder)
    # Refused outright: a judgment is taken only for a hypothesis of the judge's own page.
    with pytest.raises(ValidationRefused, match="not in your own task"):
        grammar.submit_judgments(other, {pair.pk: "none"})
    assert len(grammar.submit_judgments(holder, {pair.pk: "minor"})) == 1


def judge_until_done(worker, seed, start, errors, deadline):
    rng = random.Random(seed)
    try:
        start.wait()
        while True:
            page = grammar.hypotheses_to_judge(worker)
            if not page:
                open_left = (
                    Pair.objects.annotate(n=Count("grammaticality_judgments"))
                    .filter(n__lt=2)
                    .exclude(grammaticality_claims__worker=worker)
                    .exclude(grammaticality_judgments__worker=worker)
                )
                if not open_left.exists():
                    return
                if time.monotonic() > deadline:
                    raise AssertionError("hypotheses still lack judgments after the deadline")
                time.sleep(0.01)
                continue
            saved = grammar.submit_judgments(worker, {pair.pk: rng.choice(["none", "minor", "major"]) for pair in page})
            if len(saved) != len(page):
                raise AssertionError(f"a claimed page lost {len(page) - len(saved)} judgments")
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()


def test_judges_at_once_leave_exactly_the_judgments_wanted_and_lose_none(transactional_db, make_worker):
    hypotheses("gram-many", 12, wanted=2)
    judges = [make_worker() for _ in range(8)]
    start = threading.Barrier(len(judges))
    errors: list[str] = []
    threads = [
        threading.Thread(target=judge_until_done, args=(judge, seed, start, errors, time.monotonic() + 240))
        for seed, judge in enumerate(judges)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a judge thread hung"
    assert errors == []
    counts = Pair.objects.annotate(n=Count("grammaticality_judgments"), w=Count("grammaticality_judgments__worker"))
    assert {(pair.n, pair.w) for pair in counts} == {(2, 2)}
