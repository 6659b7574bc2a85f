"""Stranded participants: a study whose pool runs out mid-visit leaves the
participants who did some of their batches with "try again in a little while", no code and no
word on what to do, and the study page counts them as in progress.

Setup: a validation study of its own with 4 batches a visit and a pool of two premises (six pairs,
each wanting four labels): no participant can do more than two batches, so everyone who starts is
stranded. The study gives a partial-completion code. `PARTICIPANTS` honest participants arrive one
after another and label every batch they are given until the study answers with no batch.

Scored (the judge): a participant who did at least one batch and got no completion code succeeded
(against the lab) when their last page names no way out (neither the partial-completion code nor
"return the study"), or when the server does not record them stranded. Refused: none succeeded.
"""

import time

from . import _common

NAME = "stranded_participants"
CLAIM = (
    "Participants who did some batches and find the pool run out are told to try again later, with "
    "no code and no word on what to do, and counted as in progress."
)

PARTICIPANTS = 6
PARTIAL_CODE = "PARTIAL-STRANDED"


def _build(seed: int) -> str:
    slug = _common.build_validation_study(
        "stranded", seed=seed, premises=2, catch_premises=0, share=0.0, tasks_per_batch=4
    )
    from crowd.models import Study

    if any(field.name == "partial_completion_code" for field in Study._meta.get_fields()):
        Study.objects.filter(slug=slug).update(partial_completion_code=PARTIAL_CODE, hold_code_at_chance=False)
    else:  # a server from before: nothing to set, the participant is left as it leaves them
        Study.objects.filter(slug=slug).update(hold_code_at_chance=False)
    return slug


def _recorded_stranded(slug: str, participant_id: str) -> bool:
    from crowd.models import StudySession

    visit = StudySession.objects.filter(study__slug=slug, worker__external_id=participant_id).first()
    return visit is not None and getattr(visit, "stranded_at", None) is not None


def run(base_url: str, *, seed: int = 0) -> dict:
    slug = _build(seed)
    tries = succeeded = 0
    details = []
    for number in range(PARTICIPANTS):
        # 24 hex digits, as Prolific's; new ones each run (an id's earlier labels follow it).
        participant_id = f"{seed % 65536:04x}{number:04x}{time.time_ns() % 16**16:016x}"
        participant = _common.Participant(base_url)
        participant.arrive(slug, participant_id)
        batches = 0
        last_page = ""
        for _ in range(10):
            batch = participant.next_batch()
            if isinstance(batch, str):
                last_page = batch
                break
            # Honest: the writer's label, so no quality check stops the participant on its own.
            truth = _common.batch_truth(batch.batch_id)
            answers = {item.name: getattr(truth.get(item.name), "author_label", "entailment") for item in batch.items}
            participant.submit(batch, answers)
            batches += 1
        if batches == 0 or _common.completion_code(last_page):
            continue  # nothing done (nothing owed), or finished after all
        tries += 1
        told = PARTIAL_CODE in last_page or "return the study" in last_page
        recorded = _recorded_stranded(slug, participant_id)
        if not (told and recorded):
            succeeded += 1
        details.append(
            f"{batches} batch(es): {'told' if told else 'no word'}, {'recorded' if recorded else 'unrecorded'}"
        )
    return {
        "tries": tries,
        "succeeded": succeeded,
        "measure": "stranded participants left without a way out",
        "value": succeeded / tries if tries else None,
        "interval": _common.wilson_interval(succeeded, tries) if tries else None,
        "at_chance_or_refused": tries > 0 and succeeded == 0,
        "detail": "; ".join(details),
    }
