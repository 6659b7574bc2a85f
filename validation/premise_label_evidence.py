"""MPE's per-premise labels (Lai et al. 2017 §5.2) as evidence of the quality test.

A per-premise label is a judgment like any other: a clicker's are random. The quality app cannot
read this app's table (it sits beneath validation), so validation adds the worker's per-premise
labels to the completion hold at start (`quality.guessers.add_strata`) as strata: each label against
the other judges' most common label of its premise pair (ties and premise pairs nobody else judged
are left out). Excluded workers and workers whose code was held are no reference.
"""

from collections import Counter

from corpus.models import Worker
from corpus.selectors import answers_of_counted_workers
from crowd.models import CodeHold
from quality import sequential

from .models import PremiseLabel


def premise_label_strata(worker: Worker) -> list[sequential.QualityStratum]:
    """The worker's per-premise labels against the other judges', as the quality test's strata."""
    mine = dict(PremiseLabel.objects.filter(worker=worker).values_list("premise_pair_id", "label"))
    if not mine:
        return []
    held = CodeHold.objects.values("session__worker_id")
    others: dict[int, Counter[str]] = {}
    for pair, label in (
        PremiseLabel.objects.filter(premise_pair_id__in=list(mine), worker__isnull=False)
        .filter(answers_of_counted_workers(dataset="premise_pair__item__dataset"))
        .exclude(worker=worker)
        .exclude(worker_id__in=held)
        .values_list("premise_pair_id", "label")
    ):
        others.setdefault(pair, Counter())[label] += 1
    tallies: dict[str, tuple[Counter[str], Counter[str], list[int]]] = {}
    for pair, label in mine.items():
        counted = others.get(pair, Counter()).most_common(2)
        if not counted or (len(counted) == 2 and counted[0][1] == counted[1][1]):
            continue
        reference, votes = counted[0]
        own, references, agreements = tallies.setdefault(
            "agreeing" if votes >= 2 else "one other", (Counter(), Counter(), [0])
        )
        own[label] += 1
        references[reference] += 1
        agreements[0] += label == reference
    return [
        sequential.QualityStratum(
            own=dict(own),
            reference=dict(references),
            agreements=agreements[0],
            reference_accuracy=sequential.REFERENCE_ACCURACY[kind],
        )
        for kind, (own, references, agreements) in tallies.items()
    ]
