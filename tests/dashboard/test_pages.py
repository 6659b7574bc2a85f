"""Collection, corpus and workers pages: their figures against hand counts of small corpora."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collection.models import WritingClaim
from corpus.models import Pair, PremiseStatus
from corpus.scope import Scope
from crowd.models import ClaimStatus
from dashboard.queries import collection, corpus
from dashboard.queries import workers as worker_queries
from validation.models import ValidationClaim

from . import factories
from .pagefigures import figures, number

pytestmark = pytest.mark.django_db


def words(text):
    return len(text.split())


def test_collection_page_counts(client, researcher, make_worker):
    dataset = factories.corpus()
    client.force_login(researcher)
    now = timezone.now()
    writer, validator = make_worker(), make_worker()
    premise = dataset.premises.get(split="train")
    WritingClaim.objects.create(worker=writer, premise=premise, expires_at=now + timedelta(minutes=5))
    # Expired or submitted claims are not in flight.
    WritingClaim.objects.create(worker=validator, premise=premise, expires_at=now - timedelta(minutes=1))
    pair = Pair.objects.get(hypothesis="The friend was thanked.")
    ValidationClaim.objects.create(worker=validator, pair=pair, expires_at=now + timedelta(minutes=5))
    ValidationClaim.objects.create(
        worker=writer, pair=pair, expires_at=now + timedelta(minutes=5), status=ClaimStatus.SUBMITTED
    )
    dataset.premises.filter(split="dev").update(status=PremiseStatus.HELD)
    # A pair written two hours ago shows in its own hour of the chart; a pair without an author
    # (imported) is not written and counts in the imports table, not here.
    Pair.objects.filter(hypothesis="She was sad.").update(created_at=now - timedelta(hours=2))
    for written in Pair.objects.exclude(hypothesis="A man walked."):
        Pair.objects.filter(pk=written.pk).update(author=make_worker())

    html = client.get(reverse("dashboard:collection")).content.decode()
    page = figures(html)
    assert number(page.by_id["stat-premises"][0]) == 3
    assert number(page.by_id["stat-pairs"][0]) == 6
    assert number(page.by_id["stat-writing-claims"][0]) == 1
    assert number(page.by_id["stat-validation-claims"][0]) == 1
    assert number(page.by_id["stat-held"][0]) == 2
    assert "/admin/corpus/premise/?status__exact=held" in html
    per_row = {
        (row["data-genre"], row["data-split"], stat): number(value)
        for row, stat, value, _ in page.rows
        if "data-split" in row
    }
    assert per_row == {
        ("fiction", "dev", "premises"): 1,
        ("fiction", "dev", "pairs"): 3,
        ("fiction", "train", "premises"): 1,
        ("fiction", "train", "pairs"): 1,
        ("letters", "dev", "premises"): 1,
        ("letters", "dev", "pairs"): 2,
    }
    assert 'id="figure-hourly"' in html and '<img class="plot" src="/dashboard/figures/hourly.svg?v=' in html

    hourly = collection.pairs_per_hour(Scope.of_dataset(dataset))
    assert len(hourly) == 48 and sum(n for _, n in hourly) == 5
    assert dict(hourly)[(now - timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)] == 1


def test_collection_split_filter(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    page = figures(client.get(reverse("dashboard:collection"), {"split": "dev"}).content.decode())
    assert number(page.by_id["stat-premises"][0]) == 2
    assert number(page.by_id["stat-pairs"][0]) == 5


def test_corpus_lengths_and_labels(client, researcher):
    dataset = factories.corpus()
    # Extra spaces must not count as words.
    factories.premise(dataset, factories.genre("letters", is_training=False), "test", "  Two   spaced words  ")
    client.force_login(researcher)
    html = client.get(reverse("dashboard:corpus"), {"dataset": dataset.slug}).content.decode()
    page = figures(html)

    premises = list(dataset.premises.values_list("text", flat=True))
    hypotheses = list(dataset.pairs.values_list("hypothesis", flat=True))
    premise_words = [words(t) for t in premises]
    hypothesis_words = [words(t) for t in hypotheses]
    assert number(page.by_id["stat-premise-count"][0]) == len(premises)
    assert number(page.by_id["stat-premise-mean"][0]) == pytest.approx(sum(premise_words) / len(premise_words))
    assert number(page.by_id["stat-hypothesis-mean"][0]) == pytest.approx(sum(hypothesis_words) / len(hypotheses))

    overview = corpus.corpus_overview(Scope.of_dataset(dataset))
    expected: dict[int, int] = {}
    for n in premise_words:
        expected[n] = expected.get(n, 0) + 1
    assert overview["premise_lengths"] == expected

    mean_by_genre = {row["data-genre"]: number(value) for row, stat, value, _ in page.rows if stat == "mean-words"}
    fiction = [words(t) for t in dataset.premises.filter(genre__slug="fiction").values_list("text", flat=True)]
    assert mean_by_genre["fiction"] == pytest.approx(sum(fiction) / len(fiction))

    gold = {row["data-label"]: number(value) for row, stat, value, _ in page.rows if stat == "gold"}
    author = {row["data-label"]: number(value) for row, stat, value, _ in page.rows if stat == "author"}
    assert gold == {"entailment": 1, "neutral": 1, "contradiction": 1, "-": 3}
    assert author == {"entailment": 3, "neutral": 1, "contradiction": 2, "-": None}
    assert 'id="figure-lengths"' in html
    assert f'src="/dashboard/figures/lengths.svg?dataset={dataset.slug}&amp;v=' in html
    assert f'src="/dashboard/figures/labels.svg?dataset={dataset.slug}&amp;v=' in html


def test_histogram_bins_long_sentences_into_the_last_bar():
    from dashboard.plots import binned

    assert binned({1: 2, 3: 1, 9: 4, 70: 1}, cap=5) == [2, 0, 1, 0, 5]


def test_worker_figures(client, researcher, make_worker):
    dataset, workers = factories.worker_corpus()
    rows = {row["username"]: row for row in worker_queries.workers_overview(Scope.of_dataset(dataset))[0]}
    assert rows["alice"]["pairs_written"] == 3
    assert rows["alice"]["labels_given"] == 0
    assert rows["alice"]["author_gold"] == pytest.approx(1 / 2)  # h1 gold E = E; h2 gold C != N; h3 no gold
    assert rows["alice"]["median_writing_seconds"] == pytest.approx(60, abs=0.01)
    assert rows["bob"]["median_writing_seconds"] == pytest.approx(25, abs=0.01)  # (10 + 40) / 2
    assert rows["bob"]["labels_given"] == 3
    assert rows["bob"]["gold_agreement"] == pytest.approx(2 / 2)  # E on h1, C on h2; h3 has no gold
    assert rows["dan"]["gold_agreement"] == pytest.approx(1 / 2)  # N on h1 (gold E), C on h2
    assert rows["erin"]["gold_agreement"] == pytest.approx(1 / 2)  # E on h1, N on h2 (gold C)
    assert rows["carol"]["median_writing_seconds"] is None

    client.force_login(researcher)
    html = client.get(reverse("dashboard:workers"), {"sort": "-gold_agreement"}).content.decode()
    page = figures(html)
    order = [row["data-worker"] for row, stat, _, _ in page.rows if stat == "gold_agreement"]
    agreement = [number(value) for _, stat, value, _ in page.rows if stat == "gold_agreement"]
    present = [a for a in agreement if a is not None]
    assert present == sorted(present, reverse=True)
    assert agreement[-1] is None  # alice validated nothing: last, whichever way we sort
    assert order[-1] == str(workers["alice"].pk)
    assert f"/admin/corpus/worker/{workers['alice'].pk}/change/" in html


def test_workers_sort_by_every_column_both_ways(client, researcher, make_worker):
    factories.worker_corpus()
    client.force_login(researcher)
    for sort in [s for column in worker_queries.WORKER_COLUMNS for s in (column, f"-{column}")]:
        column = sort.lstrip("-")
        response = client.get(reverse("dashboard:workers"), {"sort": sort})
        assert response.status_code == 200
        assert response.context["sort"] == sort
        rows = response.context["page"].object_list
        values = [row[column] for row in rows if row[column] is not None]
        if values and isinstance(values[0], str):
            values = [value.lower() for value in values]
        assert values == sorted(values, reverse=sort.startswith("-")), sort


def test_unknown_sort_falls_back(client, researcher, make_worker):
    factories.worker_corpus()
    client.force_login(researcher)
    response = client.get(reverse("dashboard:workers"), {"sort": "password"})
    assert response.status_code == 200 and response.context["sort"] == "-pairs_written"


@pytest.mark.parametrize(
    "premise, hypothesis, deletion, one_word",
    [
        ("Two dogs run in the park.", "Two dogs run.", True, False),
        ("Two dogs run in the park.", "Two dogs run in the big park.", False, True),  # inserted
        ("Two dogs run in the park.", "Two cats run in the park.", False, True),  # substituted
        ("Two dogs run in the park.", "In the park two dogs run.", False, False),  # more than one move
        ("two dogs run fast today", "two dogs fast run today", False, True),  # moved
        ("Two dogs run in the park.", "Two dogs run in the park.", False, False),  # identical
        ("Two dogs run in the park.", "A cat sleeps.", False, False),
    ],
)
def test_edit_relations(premise, hypothesis, deletion, one_word):
    from corpus import overlap

    p, h = overlap.tokens(premise), overlap.tokens(hypothesis)
    assert overlap.only_deletion(p, h) is deletion
    assert overlap.one_word_edit(p, h) is one_word


def test_corpus_page_shows_edit_relations_of_every_pair_from_the_maintained_aggregates(client, researcher):
    dataset = factories.dataset()
    fiction = factories.genre("fiction")
    premise = factories.premise(dataset, fiction, "train", "Two dogs run in the park.")
    for hypothesis in ("Two dogs run.", "Two cats run in the park.", "A cat sleeps.", "Dogs are outside."):
        factories.pair(dataset, premise, hypothesis, [factories.E])
    client.force_login(researcher)
    page = figures(client.get(reverse("dashboard:corpus")).content.decode())
    assert number(page.by_id["stat-relations-pairs"][0]) == 4
    assert number(page.by_id["stat-only-deletion"][0]) == 0.25
    assert number(page.by_id["stat-one-word-edit"][0]) == 0.25
    # Shared distinct words over the longer sentence's (6): "Two dogs run." 3/6, "Two cats run in the
    # park." 5/6, "Dogs are outside." 1/6, "A cat sleeps." 0.
    assert number(page.by_id["stat-high-overlap"][0]) == 0.5

    # Tallied by the writers as the pairs went in: no sample, no pair read.
    assert corpus.edit_relations(Scope.of_dataset(dataset)) == {
        "pairs": 4,
        "only_deletion": 1,
        "one_word_edit": 1,
        "high_overlap": 2,
        "total": 4,
        "step": 1,
    }
