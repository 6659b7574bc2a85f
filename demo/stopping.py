"""Demo of the decided stopping rule (issue 24): a small dataset whose dev split is on the decided
rule, its pairs labelled one label at a time through `corpus.counters` as validators would, so the
dashboard's validation page (?dataset=demo-decided) shows the pairs that stopped early and the
validation labels they saved."""

from django.db import transaction

from corpus.counters import add_label, create_pairs
from corpus.models import Dataset, Genre, Pair, Premise, Split, StoppingPolicy, StoppingRule

DATASET = "demo-decided"
GENRE = "captions"
# Label sequences (the author's first) in the shapes SNLI dev has: unanimous, 4-1, 3-2, no gold.
SEQUENCES = [
    ["entailment"] * 5,
    ["contradiction"] * 5,
    ["neutral", "neutral", "entailment", "neutral", "neutral"],
    ["entailment", "neutral", "entailment", "entailment", "contradiction"],
    ["contradiction", "contradiction", "neutral", "contradiction", "contradiction"],
    ["neutral", "entailment", "neutral", "contradiction", "entailment"],
    ["entailment", "entailment", "entailment", "neutral", "entailment"],
    ["neutral"] * 5,
]
PREMISE = "A man in a red jacket rides a bicycle past a market stall."


@transaction.atomic
def ensure_stopping_demo():
    """Create the dataset once (idempotent); returns a line for the command's summary."""
    dataset, created = Dataset.objects.get_or_create(slug=DATASET, defaults={"name": "Demo: decided stopping rule"})
    if created or not dataset.pairs.exists():
        StoppingPolicy.objects.update_or_create(
            dataset=dataset, split=Split.DEV, defaults={"rule": StoppingRule.DECIDED}
        )
        genre = Genre.objects.filter(slug=GENRE).first() or Genre.objects.order_by("slug").first()
        premise = Premise.objects.create(
            dataset=dataset, genre=genre, split=Split.DEV, prompt_id="decided-1", text=PREMISE
        )
        pairs = [
            Pair(premise=premise, pair_id=f"decided-1-{i}", hypothesis=f"A person is outside ({i}).", author_label=s[0])
            for i, s in enumerate(SEQUENCES)
        ]
        created_pairs = create_pairs(dataset, Split.DEV, pairs, [s[:1] for s in SEQUENCES], needs_validation=True)
        for pair, sequence in zip(created_pairs, SEQUENCES, strict=True):
            for label in sequence[1:]:
                pair.refresh_from_db(fields=["needs_validation"])
                if not pair.needs_validation:
                    break  # the decided rule stopped it: no validator is served it again
                add_label(pair, label)
    stopped = Pair.objects.filter(dataset=dataset, stopped_early=True)
    saved = sum(5 - n for n in stopped.values_list("label_count", flat=True))
    return (
        f"Dataset '{DATASET}' (dev on the decided stopping rule): {dataset.pairs.count()} pairs, "
        f"{stopped.count()} stopped early, {saved} validation labels saved, no gold label changed."
    )
