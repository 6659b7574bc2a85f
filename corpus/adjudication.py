"""A researcher's (or an imported file's) decision on a pair's gold label (MPE §4.2).

The decision overrides the votes; the pair's labels and counters stay as they are, and every
recompute keeps it (`corpus.recompute`).
"""

from typing import Any

from django.db import transaction

from audit import services as audit

from . import worker_tally
from .errors import LabelRefused
from .gold import VOTE_FIELD, gold_from_votes
from .gold_moves import gold_recounted, labels_moved, move
from .models import RETIRED_LABEL, Adjudication, AdjudicationAction, AdjudicationSource, Pair


def adjudicate(
    pair: Pair,
    label: str,
    *,
    source: str = AdjudicationSource.RESEARCHER,
    researcher: Any = None,
    reason: str = "",
    note: str = "",
    action: str = AdjudicationAction.LABEL,
) -> Adjudication:
    """A decision on a pair's gold label; its judgments stay as they are.

    `action` label: `label` becomes the gold label whatever the votes say. retire: the pair leaves
    snapshots and releases and its gold reads "-" (`label` is ignored). withdraw: the decisions
    before it no longer count and the gold label goes back to the rule (3 of 5, else the imported
    file's). One transaction under the pair's row lock: the Adjudication row (kept as history, with
    the gold label it replaces) and the pair's `adjudicated_label` and `gold_label`. Returns the row.
    """
    if action == AdjudicationAction.LABEL and label not in VOTE_FIELD:
        raise LabelRefused(f"'{label}' is not a label; choose one of {', '.join(VOTE_FIELD)}.")
    if action not in AdjudicationAction.values:
        raise LabelRefused(f"'{action}' is not a decision; choose one of {', '.join(AdjudicationAction.values)}.")
    with transaction.atomic():
        locked = (
            Pair.objects.select_for_update(no_key=True, of=("self",))
            .select_related("premise", "dataset")
            .get(pk=pair.pk)
        )
        was = (locked.gold_label, locked.label_count)
        worker_rows = worker_tally.read([locked.pk])  # the pair's gold is in its labels' worker figures
        if action == AdjudicationAction.RETIRE:
            label = adjudicated = gold = RETIRED_LABEL
        elif action == AdjudicationAction.WITHDRAW:
            label = adjudicated = ""
            gold = gold_from_votes(
                locked.entailment_votes, locked.neutral_votes, locked.contradiction_votes, locked.imported_gold
            )
        else:
            adjudicated = gold = label
        decision = Adjudication.objects.create(
            pair=locked,
            action=action,
            label=label,
            previous_gold=locked.gold_label,
            source=source,
            researcher=researcher,
            reason=reason[:100],
            note=note,
        )
        Pair.objects.filter(pk=locked.pk).update(adjudicated_label=adjudicated, gold_label=gold)
        audit.record(
            f"adjudication.{action}",
            actor=researcher,
            subject=locked,
            subject_label=locked.pair_id,
            team_id=locked.dataset.team_id,
            before={"gold_label": locked.gold_label},
            after={"gold_label": gold, "adjudicated_label": adjudicated, "source": source},
            reason=" — ".join(part for part in (reason[:100], note) if part),
            datasets=[locked.dataset.slug],
        )
        locked.adjudicated_label, locked.gold_label = adjudicated, gold
        labels_moved([move(locked, *was)])
        worker_tally.moved(worker_rows, [locked.pk])
        gold_recounted()
    pair.adjudicated_label, pair.gold_label = adjudicated, gold
    return decision
