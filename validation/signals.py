"""Events the validation app sends, for the apps above it (docs/architecture.md).

A signal here is an event: the sender reads nothing back, so nothing the receivers do can change
what the sender does next (tests/test_layering.py refuses a signal whose answers are read). It
lives with its sender: a receiver imports it from here, and that import is the arrow the layering
test sees (the sender knows nothing of its receivers).

`validation_labels_added(pair_ids)`: validation labels were added to these pairs (every submitted
    batch, catch trials aside), sent inside the submit's transaction; the adversarial app settles
    its verifications here (connected in `adversarial.apps.AdversarialConfig.ready`).
`adjudication_requests_changed()`: pairs were sent to the adjudication page's "sent" queue or
    taken back out of it (`validation.adjudication.send_to_adjudication`, `unsend`), sent inside
    the writer's transaction; the dashboard's kept queue counts are out of date
    (`dashboard.apps.DashboardConfig.ready`).
"""

from django.dispatch import Signal

validation_labels_added = Signal()
adjudication_requests_changed = Signal()
