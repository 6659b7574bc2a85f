"""The one writer of a pair's validation flags, `needs_validation` and `stopped_early`, apart from
the label writers (`corpus.services`, which move them with the counters in one UPDATE).

The pair tally keys both flags (the cost page's pool and the adjudication page's settled
pairs are sums of it), so whatever sets them moves the tally in the same transaction: marking pairs
for validation (`corpus.services.set_needs_validation`, the train sample), stopping them early and
reopening them (`corpus.stopping_policies`). The pairs are locked first, in pk order as every
writer of pairs locks them, so a submit that moves their counters waits, and the keys read are the
keys the UPDATE leaves behind. Apps that keep figures of their own by pair are told first
(`corpus.signals.pairs_flagging`).
"""

from django.db import transaction
from django.db.models import Q, QuerySet

from . import signals, tallies
from .models import Pair, PairTally

# Pairs locked and moved per statement: a split's stop or reopen may touch tens of thousands.
CHUNK = 5000


def set_validation_flags(
    pairs: QuerySet[Pair], *, needs_validation: bool | None = None, stopped_early: bool | None = None
) -> int:
    """Set the flags given (None: left as it is) on these pairs, with the pair tally's deltas and
    the `pairs_flagging` signal, in one transaction; returns how many pairs changed."""
    values = {
        name: value
        for name, value in (("needs_validation", needs_validation), ("stopped_early", stopped_early))
        if value is not None
    }
    if not values:
        return 0
    differs = Q()
    for name, value in values.items():
        differs |= ~Q(**{name: value})
    changed = 0
    with transaction.atomic():
        pks = list(
            Pair.objects.filter(pk__in=pairs.values("pk"))
            .filter(differs)
            .select_for_update(no_key=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        for start in range(0, len(pks), CHUNK):
            chosen = Pair.objects.filter(pk__in=pks[start : start + CHUNK])
            signals.pairs_flagging.send(sender=Pair, pairs=chosen, values=values)
            tallies.insert_deltas(PairTally, tallies.PAIR_KEY, tallies.flags_moved(tallies.pair_rows(chosen), values))
            changed += chosen.update(**values)
    return changed
