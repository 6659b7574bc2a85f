"""Extension points between feature apps that may not import each other (docs/architecture.md).

Validation sends these; quality answers them (connected in `quality.apps.QualityConfig.ready`).
Both are sent inside the sender's transaction, so whatever a receiver writes commits or rolls
back with the batch.

`catch_trials_wanted(worker, study_session, dataset, count, seen, taken, claims)`: a receiver returns a
    list of up to `count` pair pks to serve as catch trials in the worker's next validation batch,
    none of them in `seen` (a queryset of the pair pks the worker was ever served) nor in `taken`
    (the batch's ordinary pairs), nor written or labelled by the worker; `claims` is every
    validation claim (a queryset with `pair_id`), for counting how often a pair was served.
`validation_batch_submitted(worker, study_session, batch, catch_labels, seconds)`: a batch was
    submitted; `catch_labels` maps each catch-trial pair pk to the worker's label (never added to
    the pair's labels), `seconds` is the time per item.
`completion_hold_wanted(study_session)`: the session is completing in a study that holds the codes
    of sessions at chance; a receiver returns a reason (words for researchers) to hold its code, or None.
`worker_marks_wanted(worker_ids)`: the approval and bonus lists are being drawn; a receiver returns
    {worker pk: [words]} marking those of these workers a researcher should look at before paying
    (flagged by the quality checks), so no list pays them unmarked (issue 27).
`validation_labels_added(pair_ids)`: validation labels were added to these pairs (every submitted
    batch, catch trials aside); the adversarial app settles its verifications here.
"""

from django.dispatch import Signal

catch_trials_wanted = Signal()
validation_batch_submitted = Signal()
completion_hold_wanted = Signal()
validation_labels_added = Signal()
worker_marks_wanted = Signal()
