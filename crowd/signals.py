"""Events the crowd layer names for the apps above it (docs/architecture.md).

A signal here is an event: the sender reads nothing back, so nothing the receivers do can change
what the sender does next (tests/test_layering.py refuses a signal whose answers are read). A
question asked of a higher layer is a plain call made by the caller that may import both: the
validation app calls the quality app's catch trials (`quality.catch_trials`), and the task apps
pass the quality app's completion hold (`quality.guessers.hold_code_of_guesser`) to
`crowd.services.record_task_done`.

`validation_labels_added(pair_ids)`: validation labels were added to these pairs (every submitted
    batch, catch trials aside), sent inside the submit's transaction; the adversarial app settles
    its verifications here (connected in `adversarial.apps.AdversarialConfig.ready`).
"""

from django.dispatch import Signal

validation_labels_added = Signal()
