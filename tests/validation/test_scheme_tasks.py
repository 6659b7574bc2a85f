"""The recast-data tasks: the two-way and ordinal validation batches (buttons and keys of the
dataset's scheme, answers mapped to core labels), one scheme per batch, and the grammaticality task."""

import re

import pytest
from django.urls import reverse

from corpus.models import Dataset, Grammaticality, GrammaticalityJudgment, LabelScheme, Pair, ValidationLabel
from corpus.services import create_pairs
from tests import factories
from tests.present import present
from validation import grammaticality as grammar
from validation.batch_claims import BatchIncomplete, ValidationRefused, claim_validation_batch
from validation.models import GrammaticalityClaim, ValidationClaim
from validation.services import submit_validation_batch

from .validation_factories import item_field

pytestmark = pytest.mark.django_db


def scheme_pairs(slug, scheme, n=5, author_label="entailment", ordinal=None):
    dataset = factories.dataset(slug, label_scheme=scheme)
    premise = factories.premise(dataset, factories.genre("recast"))
    return dataset, create_pairs(
        dataset,
        "dev",
        [
            Pair(premise=premise, pair_id=f"{slug}-{i}", hypothesis=f"Sam liked thing {i} .", author_label=author_label)
            for i in range(n)
        ],
        [[author_label]] * n,
        ordinals=[[ordinal]] * n if ordinal else None,
    )


def batch_page(client, worker):
    client.force_login(worker.user)
    response = client.get(reverse("validation:next"))
    assert response.status_code == 302
    return response["Location"], client.get(response["Location"]).content.decode()


def test_two_way_batch_shows_entailed_and_not_entailed_on_keys_1_and_2(client, make_worker):
    _, pairs = scheme_pairs("two", LabelScheme.TWO_WAY)
    worker = make_worker()
    url, page = batch_page(client, worker)
    assert 'data-scheme="two_way"' in page and "Not entailed" in page and "Definitely correct" not in page
    assert page.count('data-key="1"') == 5 and page.count('data-key="2"') == 5 and 'data-key="3"' not in page
    answers = {item_field(p.pk): ("entailed" if i % 2 else "not-entailed") for i, p in enumerate(pairs)}
    assert client.post(url, answers).status_code == 302
    stored = dict(ValidationLabel.objects.filter(worker=worker).values_list("pair_id", "label"))
    assert stored == {p.pk: ("entailment" if i % 2 else "neutral") for i, p in enumerate(pairs)}
    assert not Pair.objects.filter(contradiction_votes__gt=0).exists()


def test_a_three_way_answer_is_refused_on_a_two_way_batch_and_nothing_is_saved(make_worker):
    _, pairs = scheme_pairs("two-b", LabelScheme.TWO_WAY)
    worker = make_worker()
    batch = present(claim_validation_batch(worker))
    # The page shows the batch in claim order, which is drawn at random.
    shown = list(ValidationClaim.objects.filter(batch=batch).order_by("id").values_list("pair_id", flat=True))
    with pytest.raises(BatchIncomplete, match=f"missing: pair {shown.index(pairs[0].pk) + 1}\\."):
        submit_validation_batch(
            worker, batch, {p.pk: "contradiction" if i == 0 else "entailed" for i, p in enumerate(pairs)}
        )
    assert not ValidationLabel.objects.filter(worker=worker).exists()


def test_ordinal_batch_takes_ratings_1_to_5_and_keeps_them(client, make_worker):
    _, pairs = scheme_pairs("ord", LabelScheme.ORDINAL, author_label="neutral", ordinal=3)
    worker = make_worker()
    url, page = batch_page(client, worker)
    assert 'data-scheme="ordinal"' in page and "very likely" in page
    assert all(page.count(f'data-key="{k}"') == 5 for k in "12345")
    ratings = [5, 4, 3, 2, 1]
    assert client.post(url, {item_field(p.pk): str(r) for p, r in zip(pairs, ratings, strict=False)}).status_code == 302
    rows = {
        pk: (label, rating)
        for pk, label, rating in ValidationLabel.objects.filter(worker=worker).values_list(
            "pair_id", "label", "ordinal"
        )
    }
    assert [rows[p.pk] for p in pairs] == [
        ("entailment", 5),
        ("neutral", 4),
        ("neutral", 3),
        ("neutral", 2),
        ("neutral", 1),
    ]


def test_a_batch_never_mixes_label_schemes(make_worker):
    scheme_pairs("mix-two", LabelScheme.TWO_WAY, n=3)
    dataset = factories.dataset("mix-three")
    for _ in range(3):
        factories.pair(dataset, factories.premise(dataset), ["entailment"])
    batch = present(claim_validation_batch(make_worker()))
    from validation.models import ValidationClaim

    schemes = set(ValidationClaim.objects.filter(batch=batch).values_list("pair__dataset__label_scheme", flat=True))
    assert len(schemes) == 1


def test_three_way_batches_read_as_before(client, make_worker):
    dataset = factories.dataset("plain")
    for _ in range(5):
        factories.pair(dataset, factories.premise(dataset), ["neutral"])
    _, page = batch_page(client, make_worker())
    assert "Definitely correct" in page and "Entailed" not in page and page.count('data-key="3"') == 5


def test_grammaticality_task_saves_a_page_of_judgments(client, make_worker):
    dataset, pairs = scheme_pairs("gram", LabelScheme.TWO_WAY, n=3)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=2)
    worker = make_worker()
    client.force_login(worker.user)
    page = client.get(reverse("validation:grammaticality")).content.decode()
    # Shown as written English ("Sam liked thing 0 ." is stored; corpus/detokenize.py).
    assert all(f"Sam liked thing {i}." in page for i in range(3)) and "major grammatical issues" in page
    answers = {f"grammar-{p.pk}": value for p, value in zip(pairs, ["none", "minor", "major"], strict=False)}
    assert client.post(reverse("validation:grammaticality"), answers).status_code == 302
    assert GrammaticalityJudgment.objects.filter(worker=worker).count() == 3
    # Judged once by this worker: not offered to them again.
    assert grammar.hypotheses_to_judge(worker) == []
    assert len(grammar.hypotheses_to_judge(make_worker())) == 3


def test_grammaticality_refuses_bad_values_and_unopened_datasets_whole(make_worker):
    dataset, pairs = scheme_pairs("gram2", LabelScheme.TWO_WAY, n=2)
    worker = make_worker()
    with pytest.raises(ValidationRefused, match="not open"):
        grammar.submit_judgments(worker, {pairs[0].pk: Grammaticality.NONE})
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    assert grammar.hypotheses_to_judge(worker) == pairs  # the worker's page (only its own are taken)
    with pytest.raises(ValidationRefused, match="nothing was saved"):
        grammar.submit_judgments(worker, {pairs[0].pk: "none", pairs[1].pk: "awful"})
    grammar.submit_judgments(worker, {pairs[0].pk: "none"})
    with pytest.raises(ValidationRefused, match="already judged"):
        grammar.submit_judgments(worker, {pairs[0].pk: "major", pairs[1].pk: "none"})
    assert GrammaticalityJudgment.objects.count() == 1
    # Enough judgments: the hypothesis is no longer offered (the other one is, once the page holding it runs out).
    GrammaticalityClaim.objects.filter(worker=worker, status="open").update(expires_at="2000-01-01T00:00:00Z")
    assert [p.pk for p in grammar.hypotheses_to_judge(make_worker())] == [pairs[1].pk]


def test_grammaticality_page_needs_a_login(client):
    response = client.get(reverse("validation:grammaticality"))
    assert response.status_code == 302 and re.search("login", response["Location"])
