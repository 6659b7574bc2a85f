"""The stopping-rules page: each dataset split's rule, its pairs stopped early, and a
replay preview of a split's stored five-label sequences under every rule (corpus.stopping.replay)."""

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Count, Sum

from corpus.labels import LABELS_PER_PAIR
from corpus.models import Dataset, Pair, Split, StoppingPolicy, StoppingRule, ValidationLabel
from corpus.stopping import CONFIDENT, DECIDED, FIXED, replay

PREVIEW_PAIRS = 5000  # five-label pairs a preview replays (the first by id): a page, not a bench


def policy_rows(datasets: Sequence[Dataset]) -> list[dict[str, Any]]:
    """One row per dataset and split: its rule (fixed where none was chosen) and what stopped early."""
    ids = [dataset.pk for dataset in datasets]
    policies = {(p.dataset_id, p.split): p for p in StoppingPolicy.objects.filter(dataset_id__in=ids)}
    # `label_sum`, not `labels`: Pair.labels is the reverse relation to the labels.
    stopped: dict[tuple[int, str], Mapping[str, Any]] = {
        (row["dataset_id"], row["premise__split"]): row
        for row in Pair.objects.filter(dataset_id__in=ids, stopped_early=True, label_count__lt=LABELS_PER_PAIR)
        .values("dataset_id", "premise__split")
        .annotate(n=Count("pk"), label_sum=Sum("label_count"))
        .order_by()
    }
    rows = []
    for dataset in sorted(datasets, key=lambda dataset: dataset.slug):
        for split in Split.values:
            policy = policies.get((dataset.pk, split))
            done = stopped.get((dataset.pk, split)) or {"n": 0, "label_sum": 0}
            rows.append(
                {
                    "dataset": dataset,
                    "split": split,
                    "rule": policy.rule if policy else StoppingRule.FIXED,
                    "threshold": policy.threshold if policy else None,
                    "max_labels": policy.max_labels if policy else None,
                    "chosen": policy is not None,
                    "stopped_early": done["n"],
                    "labels_saved": done["n"] * LABELS_PER_PAIR - (done["label_sum"] or 0),
                }
            )
    return rows


def label_sequences(dataset: Dataset, split: str, *, limit: int = PREVIEW_PAIRS) -> list[list[str]]:
    """The stored labels of the split's first `limit` five-label pairs, in position order."""
    pairs = list(
        Pair.objects.filter(dataset=dataset, premise__split=split, label_count=LABELS_PER_PAIR)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    sequences: dict[int, list[str]] = {pk: [] for pk in pairs}
    labels = (
        ValidationLabel.objects.filter(pair_id__in=pairs, position__lte=LABELS_PER_PAIR)
        .order_by("pair_id", "position")
        .values_list("pair_id", "label")
    )
    for pk, label in labels.iterator(chunk_size=10000):
        sequences[pk].append(label)
    return list(sequences.values())


def replay_preview(
    dataset: Dataset, split: str, *, thresholds: Sequence[float] = (0.95, 0.99), shuffles: int = 1
) -> dict[str, Any]:
    sequences = label_sequences(dataset, split)
    rules = [(FIXED, None), (DECIDED, None), *((CONFIDENT, t) for t in thresholds)]
    return {
        "pairs": len(sequences),
        "results": [r.as_dict() for r in replay(sequences, rules=rules, shuffles=shuffles)],
    }
