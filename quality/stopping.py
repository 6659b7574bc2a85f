"""The confident stopping rule (docs/quality.md "Stopping rules"), run after an aggregation run.

A split on the confident rule stops a pair once the Dawid–Skene posterior of its leading label
reaches the split's threshold (unless that label is a minority of the pair's labels), or at the
split's maximum of labels (`corpus.stopping.confident_stop`), through
`corpus.stopping_policies.stop_pairs`. The stored gold stays the 3-of-5 rule's.
"""

from base.long_tasks import JobStatus
from corpus import stopping_policies
from corpus.labels import LABELS_PER_PAIR
from corpus.models import Pair, StoppingPolicy, StoppingRule
from corpus.stopping import confident_stop

from .models import AggregatedLabel, AggregationRun

METHOD = "dawid_skene"


def stop_confident_pairs(run: AggregationRun) -> int:
    """Stop the run's dataset's confident-rule pairs its Dawid–Skene posteriors settle; returns how many."""
    if run.status != JobStatus.DONE:
        return 0
    stopped = 0
    for policy in StoppingPolicy.objects.filter(dataset=run.dataset_id, rule=StoppingRule.CONFIDENT):
        open_pairs = Pair.objects.filter(
            dataset=run.dataset_id,
            premise__split=policy.split,
            stopping_rule=StoppingRule.CONFIDENT,
            needs_validation=True,
            stopped_early=False,
            label_count__lt=LABELS_PER_PAIR,
        )
        rows = AggregatedLabel.objects.filter(run=run, method=METHOD, pair__in=open_pairs).values_list(
            "pair_id",
            "label",
            "posterior",
            "pair__entailment_votes",
            "pair__neutral_votes",
            "pair__contradiction_votes",
        )
        chosen = []
        for pk, label, posterior, e, n, c in rows.iterator(chunk_size=5000):
            labels = ["entailment"] * e + ["neutral"] * n + ["contradiction"] * c
            if confident_stop({label: posterior}, labels, policy.threshold, max_labels=policy.max_labels):
                chosen.append(pk)
        at_most = open_pairs.filter(label_count__gte=policy.max_labels).values_list("pk", flat=True)
        chosen += list(at_most)
        if chosen:
            stopped += stopping_policies.stop_pairs(Pair.objects.filter(pk__in=chosen))
    return stopped
