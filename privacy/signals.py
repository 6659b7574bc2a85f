"""Events the privacy app sends and reads nothing back from: apps above keep figures that may name
or count a participant, and the privacy app must not know them (a receiver imports the signal)."""

from django.dispatch import Signal

# A participant's contributions are leaving, or their ids are being erased: `remove_contributions`
# sends it inside its transaction with `worker`. Figures kept from before may name or count the
# person: they are not to be shown again, not even while they are recomputed.
participant_removed = Signal()
