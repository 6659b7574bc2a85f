"""Builders for the per-premise (SPE) task of MPE items: items of four captions, marked."""

from collections import Counter

from corpus.labels import LABELS
from corpus.models import ItemKind, Pair, Premise, Split
from tests import factories
from validation.forms import claim_field_name
from validation.models import PremiseLabelClaim, PremisePair
from validation.premise_labels import mark_for_premise_labels
from validation.premise_table import consensus

CAPTIONS = ["A man rides a bike.", "A cyclist on a road.", "Someone pedals uphill.", "A person in a helmet cycles."]


def make_items(count, slug="mpe-spe", split=Split.DEV, golds=None, mark=True, start=0):
    """`count` MPE items (four captions each, their own scene) in one dataset; gold labels as given."""
    dataset = factories.dataset(slug, item_kind=ItemKind.MULTI_PREMISE)
    items = []
    for number in range(count):
        i = start + number
        captions = [f"{caption[:-1]} in scene {i}." for caption in CAPTIONS]
        premise = Premise.objects.create(
            dataset=dataset,
            genre=factories.genre("captions"),
            prompt_id=f"{slug}-scene-{i}",
            split=split,
            text=" ".join(captions),
            sentences=[{"text": text, "source": f"{i}.jpg#{n}"} for n, text in enumerate(captions)],
        )
        items.append(
            Pair.objects.create(
                dataset=dataset,
                premise=premise,
                pair_id=f"{slug}-{i}",
                hypothesis=f"A person moves in scene {i}.",
                author_label="",
                gold_label=(golds[number] if golds else "-"),
            )
        )
    if mark:
        mark_for_premise_labels(dataset, split=split)
    return dataset, items


def field_of(premise_pair_pk, worker):
    """The task page's field name for this worker's claim on a premise pair."""
    return claim_field_name(PremiseLabelClaim.objects.get(premise_pair_id=premise_pair_pk, worker=worker))


def stale_premise_pairs():
    """How many premise pairs' kept counts and consensus differ from what their labels say."""
    stale = 0
    for pair in PremisePair.objects.prefetch_related("labels"):
        labels = [label.label for label in pair.labels.all()]
        counts = Counter(labels)
        kept = [pair.label_count, *(getattr(pair, f"{name}_votes") for name in LABELS), pair.consensus]
        stale += kept != [len(labels), *(counts.get(name, 0) for name in LABELS), consensus(labels)]
    return stale
