"""Events the corpus sends and reads nothing back from: apps above keep figures of their own
that follow the pairs (the artifacts app's tag tally), and the corpus must not know them
(docs/architecture.md: a receiver imports the signal, which is the arrow the layering test sees).

All but the last are sent inside the writer's transaction, so a receiver's writes commit or roll
back with the change they follow.
"""

from django.dispatch import Signal

# A pair's gold label changed: `moves`, a list of (pair pk, old gold label, new gold label), sent
# by every writer of gold labels: corpus.services (labels added), corpus.recompute (its fix) and
# corpus.adjudication.
gold_moved = Signal()

# Gold labels or counters moved in a way the maintained aggregates do not follow: a researcher's
# decision (corpus.adjudication), a recompute's fix (an exclusion, a market's word: corpus.recompute).
# Sent inside the writer's transaction, with no arguments; figures kept from before are out of date
# (the dashboard's figure cache keeps its own mark of when, dashboard.figure_cache).
gold_recounted = Signal()

# Pairs' counters moved (labels added, a recompute's fix): `moves`, a list of (pair pk, old
# PAIR_KEY, new PAIR_KEY) of `corpus.tallies`, sent by `corpus.tallies.pairs_moved` inside the
# writer's transaction with the pairs locked (the validation app's credited pairs follow them).
pairs_moved = Signal()

# Pairs' validation flags are about to be set (`corpus.validation_flags`, their one writer apart
# from the label writers): `pairs`, a queryset of the pairs that change (locked, read before the
# update), and `values`, {"needs_validation" or "stopped_early": the value they take}.
pairs_flagging = Signal()

# Premises move to another split with their pairs: `pairs`, a queryset of the pairs (read before
# the update), and `split`, the split they move to (corpus.tallies.premises_moving).
pairs_moving_split = Signal()

# The maintained tallies' deltas were folded (corpus.tallies.fold), sent after its transaction:
# the folded keys' rows have new ids (figures kept from them by id see they may have moved).
tallies_folded = Signal()
