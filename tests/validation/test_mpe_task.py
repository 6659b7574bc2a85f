"""The MPE judgment task: claims and batches as in validation, five judgments per item, MPE's wording,
and the researcher's adjudication on the dashboard."""

import pytest
from django.urls import reverse

from corpus.adjudication import adjudicate
from corpus.agreement import mpe_statistics
from corpus.models import Adjudication, AdjudicationSource, ItemKind, Label, Pair, Premise, Split, ValidationLabel
from corpus.mpe_wording import QUESTION
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.selectors import adjudication_queue
from corpus.services import add_labels
from tests import factories
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import item_field, make_dataset, make_pair

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
CAPTIONS = ["A man rides a bike.", "A cyclist on a road.", "Someone pedals uphill.", "A person in a helmet cycles."]


def make_mpe_items(count, slug="mpe-task", split=Split.DEV):
    dataset = factories.dataset(slug, item_kind=ItemKind.MULTI_PREMISE)
    premise = Premise.objects.create(
        dataset=dataset,
        genre=factories.genre("captions"),
        prompt_id=f"{slug}-scene",
        split=split,
        text=" ".join(CAPTIONS),
        sentences=[{"text": text, "source": f"1.jpg#{n}"} for n, text in enumerate(CAPTIONS)],
    )
    return dataset, [
        Pair.objects.create(
            dataset=dataset,
            premise=premise,
            pair_id=f"{slug}-{i}",
            hypothesis=f"A person moves {i}.",
            author_label="",
            needs_validation=True,
        )
        for i in range(count)
    ]


def judge(pairs, workers, votes):
    """Each worker labels every pair; votes[i] is the list of the five labels of pairs[i]."""
    for position, worker in enumerate(workers):
        add_labels([(pair, votes[i][position]) for i, pair in enumerate(pairs)], worker=worker)


def test_mpe_items_and_single_pairs_never_share_a_batch(make_worker):
    collected = make_dataset()
    single = [make_pair(collected) for _ in range(5)]
    _, items = make_mpe_items(5)
    worker = make_worker("judge")

    mpe_batch = present(batch_claims.claim_validation_batch(worker, item_kind=ItemKind.MULTI_PREMISE))
    mpe_pairs = set(ValidationClaim.objects.filter(batch=mpe_batch).values_list("pair_id", flat=True))
    assert mpe_pairs == {item.pk for item in items}
    # The MultiNLI task gives single-premise pairs only, and its open batch is a different one.
    batch = present(batch_claims.claim_validation_batch(worker))
    assert batch != mpe_batch
    assert set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)) == {p.pk for p in single}
    # A reload of either task gives its own batch back.
    assert batch_claims.claim_validation_batch(worker, item_kind=ItemKind.MULTI_PREMISE) == mpe_batch
    assert batch_claims.claim_validation_batch(worker) == batch


def test_an_item_takes_exactly_five_judgments_from_five_workers(make_worker):
    _, items = make_mpe_items(1)
    workers = [make_worker(f"j{i}") for i in range(6)]
    for worker in workers[:5]:
        batch = present(batch_claims.claim_validation_batch(worker, item_kind=ItemKind.MULTI_PREMISE))
        services.submit_validation_batch(worker, batch, {items[0].pk: E})
    assert batch_claims.claim_validation_batch(workers[5], item_kind=ItemKind.MULTI_PREMISE) is None
    item = Pair.objects.get(pk=items[0].pk)
    assert (item.label_count, item.entailment_votes, item.gold_label) == (5, 5, E)
    assert list(ValidationLabel.objects.filter(pair=item).values_list("position", flat=True)) == [1, 2, 3, 4, 5]


def test_the_page_shows_the_four_captions_and_yes_unknown_no_and_stores_labels(client, make_worker):
    _, items = make_mpe_items(2)
    user = make_worker("judge").user
    client.force_login(user)
    response = client.get(reverse("validation:mpe-next"))
    assert response.status_code == 302
    page = client.get(response["Location"])
    html = page.content.decode()
    assert QUESTION in html and all(caption in html for caption in CAPTIONS)
    # The buttons name the answers as the instructions do: "Yes", never "yes" beside "Yes".
    assert all(f"</kbd> {answer}</label>" in html for answer in ("Yes", "Unknown", "No"))
    assert all(f"<strong>{answer}</strong>" in html for answer in ("Yes", "Unknown", "No"))
    assert "Definitely correct" not in html  # not the MultiNLI wording
    # A missing answer: nothing saved, the item named.
    missing = client.post(response["Location"], {item_field(items[0].pk): N})
    assert missing.status_code == 400 and ValidationLabel.objects.count() == 0
    done = client.post(response["Location"], {item_field(items[0].pk): N, item_field(items[1].pk): C})
    assert done.status_code == 302 and done["Location"] == reverse("validation:mpe-next")
    assert dict(ValidationLabel.objects.values_list("pair_id", "label")) == {items[0].pk: N, items[1].pk: C}


def test_the_multinli_batch_page_sends_an_mpe_batch_to_its_own_page(client, make_worker):
    make_mpe_items(1)
    user = make_worker("judge").user
    batch = batch_claims.claim_validation_batch(user.worker, item_kind=ItemKind.MULTI_PREMISE)
    client.force_login(user)
    response = client.get(reverse("validation:batch", args=[batch]))
    assert response["Location"] == reverse("validation:mpe-batch", args=[batch])


def test_queue_gold_and_statistics_after_five_judgments(make_worker):
    dataset, items = make_mpe_items(5)
    workers = [make_worker(f"j{i}") for i in range(5)]
    judge(
        items,
        workers,
        [
            [E, E, E, E, E],  # unanimous entailment
            [E, E, N, N, C],  # 2-2-1: no majority, queued
            [E, E, E, C, C],  # 3-2 E/C: queued though it has a majority
            [E, E, E, N, N],  # 3-2 E/N: the majority stands
            [C, C, C, N, E],
        ],
    )
    queue = {pair.pair_id: pair.adjudication_reason for pair in adjudication_queue(Scope.of_dataset(dataset))}
    assert queue == {"mpe-task-1": "2-2-1 split", "mpe-task-2": "3-2 split between entailment and contradiction"}
    stats = mpe_statistics(Scope.of_dataset(dataset))
    assert (stats.items, stats.unanimous, stats.with_majority, stats.gold_equals_majority) == (5, 1, 4, 4)
    assert stats.label_counts == {E: 3, N: 0, C: 1} and stats.pending == 2


def test_adjudication_makes_the_researchers_label_gold_keeps_the_judgments_and_leaves_the_queue(
    make_worker, researcher
):
    dataset, items = make_mpe_items(2)
    workers = [make_worker(f"j{i}") for i in range(5)]
    judge(items, workers, [[E, E, N, N, C], [E, E, E, C, C]])
    labels_before = list(ValidationLabel.objects.order_by("pk").values_list("pair_id", "position", "label"))

    decision = adjudicate(items[0], C, researcher=researcher, reason="2-2-1 split")
    item = Pair.objects.get(pk=items[0].pk)
    assert (item.gold_label, item.adjudicated_label, item.label_count) == (C, C, 5)
    assert (decision.previous_gold, decision.source, decision.researcher) == (
        "-",
        AdjudicationSource.RESEARCHER,
        researcher,
    )
    assert list(ValidationLabel.objects.order_by("pk").values_list("pair_id", "position", "label")) == labels_before
    assert [pair.pk for pair in adjudication_queue(Scope.of_dataset(dataset))] == [items[1].pk]
    # Recomputing the counters from the label table keeps the decision.
    assert recompute_gold(dataset).disagreements == 0
    assert Pair.objects.get(pk=items[0].pk).gold_label == C
    # A second decision is kept too; the latest is gold.
    adjudicate(items[0], N, researcher=researcher)
    assert Pair.objects.get(pk=items[0].pk).gold_label == N
    assert list(Adjudication.objects.filter(pair=items[0]).values_list("label", flat=True)) == [C, N]


def test_dashboard_queue_and_adjudication_need_a_researcher(client, make_worker, researcher):
    dataset, items = make_mpe_items(1)
    workers = [make_worker(f"j{i}") for i in range(5)]
    judge(items, workers, [[E, N, N, E, C]])
    url = reverse("dashboard:mpe_adjudicate", args=[items[0].pk])
    client.force_login(workers[0].user)
    assert client.post(url, {"label": E}).status_code == 403
    assert not Adjudication.objects.exists()

    client.force_login(researcher)
    page = client.get(reverse("dashboard:mpe") + f"?dataset={dataset.slug}")
    html = page.content.decode()
    assert page.status_code == 200 and f'data-pair="{items[0].pk}"' in html and "2-2-1 split" in html
    assert client.post(url, {"label": "maybe"}).status_code == 302
    assert not Adjudication.objects.exists()  # a bad label changes nothing
    response = client.post(url, {"label": E, "next": "https://evil.example/"})
    assert response["Location"] == reverse("dashboard:mpe")
    decision = Adjudication.objects.get()
    assert (decision.label, decision.reason, decision.researcher) == (E, "2-2-1 split", researcher)
    assert (
        f'data-pair="{items[0].pk}"'
        not in client.get(reverse("dashboard:mpe")).content.decode().split("Word overlap")[0]
    )


def test_the_mpe_task_claims_across_mpe_datasets_and_skips_trusted_only_ones(make_worker):
    from validation.models import ValidationPolicy

    closed, closed_items = make_mpe_items(2, slug="mpe-closed")
    ValidationPolicy.objects.create(dataset=closed, trusted_only=True)
    _, open_items = make_mpe_items(2, slug="mpe-open")
    worker = make_worker("judge")
    batch = present(batch_claims.claim_mpe_batch(worker))
    assert set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)) == {
        p.pk for p in open_items
    }
    trusted = make_worker("trusted", is_trusted=True)
    batch = present(batch_claims.claim_mpe_batch(trusted))
    assert set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)) == {
        p.pk for p in closed_items
    }
    # Excluded by the datasets' team: none of its items is offered, and its study refuses them.
    excluded = make_worker("excluded", is_excluded=True)
    assert batch_claims.claim_mpe_batch(excluded) is None
    with pytest.raises(batch_claims.NotAllowedToValidate):
        batch_claims.claim_validation_batch(excluded, dataset=open_items[0].dataset, item_kind=ItemKind.MULTI_PREMISE)


def test_a_worker_sees_only_their_own_mpe_batch(client, make_worker):
    make_mpe_items(2)
    owner, other = make_worker("owner"), make_worker("other")
    batch = batch_claims.claim_mpe_batch(owner)
    client.force_login(other.user)
    assert client.get(reverse("validation:mpe-batch", args=[batch])).status_code == 404
    assert client.post(reverse("validation:mpe-batch", args=[batch]), {}).status_code == 404
    assert not ValidationLabel.objects.exists()
