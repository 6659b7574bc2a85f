"""One reader per fact: every page that shows how many pairs have each gold label
reads them from `corpus.agreement.gold_counts`, so after a researcher's decision and a retirement
the corpus, validation, adjudication and MPE pages show the same counts; and one rule of
"pending adjudication" (`corpus.selectors.awaiting_decision`), so a withdrawn decision puts a pair
back in the queue on the MPE page and on the adjudication page alike."""

import pytest
from django.urls import reverse

from corpus.models import ItemKind, Label, Split
from tests import factories
from validation import adjudication

from .pagefigures import figures

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
GOLD = (E, N, C, "-")

# Every item judged five times, so the MPE page's judged items are every pair in scope.
PLAN = {
    "split_221": [E, E, N, N, C],  # no gold: 2-2-1, in the MPE queue
    "torn": [C, E, C, E, C],  # gold C, 3-2 between entailment and contradiction: in the MPE queue
    "against_author": [N, E, E, E, C],  # gold E
    "unanimous": [N, N, N, N, N],  # gold N
}


@pytest.fixture
def items():
    dataset = factories.dataset("one-reader", item_kind=ItemKind.MULTI_PREMISE)
    return dataset, {
        name: factories.pair(dataset, factories.premise(dataset, split=Split.DEV), labels)
        for name, labels in PLAN.items()
    }


def corpus_page(html):
    return {row["data-label"]: int(value) for row, stat, value, _ in figures(html).rows if stat == "gold"}


def validation_page(html):
    counts = dict.fromkeys(GOLD, 0)
    for _, stat, value, _ in figures(html).rows:
        if stat and stat.startswith("gold-"):
            counts[stat.removeprefix("gold-")] += int(value)  # "-": no consensus + no gold yet
    return counts


def adjudication_page(html):
    found = {stat: int(value) for _, stat, value, _ in figures(html).rows if stat and stat.startswith("after-gold-")}
    return {label: found[f"after-gold-{label}"] for label in GOLD}


def mpe_page(html):
    found = {stat: value for _, stat, value, _ in figures(html).rows}
    return {label: int(found[f"gold-{label}"]) for label in (E, N, C)}


def every_page(client, dataset):
    query = f"?dataset={dataset.slug}"

    def get(name, extra=""):
        response = client.get(reverse(f"dashboard:{name}") + query + extra)
        assert response.status_code == 200
        return response.content.decode()

    return {
        "corpus": corpus_page(get("corpus")),
        "validation": validation_page(get("validation")),
        "adjudication": adjudication_page(get("adjudication")),
        "mpe": mpe_page(get("mpe")),
    }


def test_every_page_shows_the_same_gold_counts_after_an_adjudication_and_a_retirement(
    client, researcher, items, settings
):
    settings.DASHBOARD_CACHE_SECONDS = 600  # only the decisions' event (corpus.signals.gold_recounted) moves them
    dataset, pairs = items
    client.force_login(researcher)
    before = every_page(client, dataset)  # the pages' figures are cached now
    assert before["corpus"] == {E: 1, N: 1, C: 1, "-": 1}

    adjudication.decide(pairs["split_221"], N, researcher=researcher, reason="the hypothesis says 'may'")
    adjudication.decide(pairs["against_author"], adjudication.RETIRE, researcher=researcher, reason="not English")

    wanted = {E: 0, N: 2, C: 1, "-": 1}  # split_221 now N; the retired pair reads "-"
    shown = every_page(client, dataset)
    assert shown["corpus"] == shown["validation"] == shown["adjudication"] == wanted
    assert shown["mpe"] == {label: wanted[label] for label in (E, N, C)}


def pending_on_both_pages(client, dataset):
    """The pks pending on the MPE page (its queue) and on the adjudication page (its `mpe` queue)."""
    mpe = client.get(reverse("dashboard:mpe") + f"?dataset={dataset.slug}").content.decode()
    queue_section = mpe.split("Word overlap")[0]
    adjudication_page = client.get(reverse("dashboard:adjudication") + f"?dataset={dataset.slug}&queue=mpe")
    return queue_pks(queue_section), queue_pks(adjudication_page.content.decode())


def queue_pks(html):
    return {int(part.split('"', 1)[0]) for part in html.split('data-pair="')[1:]}


def test_a_withdrawn_decision_is_pending_again_on_the_mpe_page_and_the_adjudication_page(client, researcher, items):
    dataset, pairs = items
    client.force_login(researcher)
    queued = {pairs["split_221"].pk, pairs["torn"].pk}
    assert pending_on_both_pages(client, dataset) == (queued, queued)

    adjudication.decide(pairs["split_221"], N, researcher=researcher, reason="2-2-1 split")
    rest = {pairs["torn"].pk}
    assert pending_on_both_pages(client, dataset) == (rest, rest)

    adjudication.decide(pairs["split_221"], adjudication.WITHDRAW, researcher=researcher, reason="second look")
    assert pending_on_both_pages(client, dataset) == (queued, queued)
    mpe = client.get(reverse("dashboard:mpe") + f"?dataset={dataset.slug}").content.decode()
    assert {stat: value for _, stat, value, _ in figures(mpe).rows}["pending"] == "2"
