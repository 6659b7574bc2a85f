"""Attack: a writer validates their own pairs from a fresh browser under a second participant id
(verifiers and validators are never the writer).

The writer wrote every pair of a validation study's queue under their real Prolific id, in a
writing study (their submission's SESSION_ID is theirs on the market STAND-IN, bench/attacks/
_market.py). They open the validation study in a fresh browser (no cookie shared with the writing)
under a second id, presenting either their own writing submission's SESSION_ID ("own session") or
one they made up ("made-up session"), and take two batches each.

    PROLIFIC_API_URL=http://127.0.0.1:8899/api/v1/ (the server's) DATABASE_URL=... \\
        .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 --only self_validation_second_id

Succeeded: a second id offered any of the writer's pairs. Refused: none offered, and none of the
second ids' labels count towards gold. Since the arrival check (Prolific is asked in the
arrival request, `markets.identity.check_at_arrival`), a made-up session is refused before its first
batch; before it, each made-up session's id was shown a batch of the writer's pairs before the
Celery task's refusal arrived. A label a pending session writes waits out of gold
(`awaiting_market_session`): counted apart in the detail.
"""

import secrets
import urllib.parse
from typing import Any

from . import _common, _market

NAME = "self_validation_second_id"
CLAIM = "A writer under a second id in a fresh browser is offered their own pairs to validate."
VARIANTS = ("own session", "made-up session")
PER_VARIANT = 3


def setup(seed: int) -> tuple[str, str, Any]:
    """The validation study (its pairs all the writer's), the writer's submission id, the stand-in."""
    slug = _common.build_validation_study(NAME, seed=seed, premises=30, catch_premises=0, share=0.0, tasks_per_batch=2)
    market = _market.connected_study(slug)
    from django.contrib.auth.models import User

    from corpus.models import Market, Pair, Worker
    from crowd.models import Study, StudySession, TaskKind

    study = Study.objects.get(slug=slug)
    writer_id = f"WRITER{slug[-8:]}"
    writer = Worker.objects.create(
        user=User.objects.create(username=f"prolific-{writer_id}"), market=Market.PROLIFIC, external_id=writer_id
    )
    writing = Study.objects.create(
        slug=f"{slug}-w", name=f"{slug} writing", dataset=study.dataset, task_kind=TaskKind.WRITING, completion_code="W"
    )
    submission = _market.submission_id()
    market.add_submission(submission, writer_id)
    StudySession.objects.create(
        study=writing, worker=writer, external_study_id=market.study_id, external_session_id=submission
    )
    Pair.objects.filter(dataset=study.dataset).update(author=writer)
    return slug, submission, market


def run(base_url: str, *, seed: int = 0, per_variant: int = PER_VARIANT) -> dict:
    slug, writers_submission, market = setup(seed)
    offered: dict[str, int] = dict.fromkeys(VARIANTS, 0)
    ids_offered = 0
    for variant in VARIANTS:
        for number in range(per_variant):
            browser = _common.Participant(base_url)
            session_id = writers_submission if variant == "own session" else _market.submission_id()
            query = urllib.parse.urlencode(
                {
                    "PROLIFIC_PID": f"SECOND{slug[-8:]}{variant[0]}{number}{secrets.token_hex(2)}",
                    "STUDY_ID": market.study_id,
                    "SESSION_ID": session_id,
                }
            )
            browser.request(f"/study/{slug}/?{query}")
            seen = 0
            for _ in range(2):
                batch = browser.next_batch()
                if isinstance(batch, str):
                    break
                truth = _common.batch_truth(batch.batch_id)
                seen += len(batch.items)  # every pair of the queue is the writer's
                browser.submit(batch, {item.name: truth[item.name].author_label for item in batch.items})
            offered[variant] += seen
            ids_offered += seen > 0

    from corpus.models import ValidationLabel
    from corpus.selectors import labels_that_count
    from crowd.models import StudySession

    labels = ValidationLabel.objects.filter(pair__dataset__slug=slug, position__gt=1)
    counting = labels.filter(labels_that_count()).count()
    waiting = (
        labels.filter(awaiting_market_session__isnull=False).count()
        if any(field.name == "awaiting_market_session" for field in ValidationLabel._meta.get_fields())
        else "no such column"
    )
    sessions = StudySession.objects.filter(study__slug=slug)
    checks = {
        state: sessions.filter(market_check=state).count()
        for state in sorted(set(sessions.values_list("market_check", flat=True)))
    }
    tries = per_variant * len(VARIANTS)
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": ids_offered,
        "measure": "second ids offered the writer's own pairs",
        "value": ids_offered,
        "interval": _common.wilson_interval(ids_offered, tries),
        "at_chance_or_refused": ids_offered == 0 and counting == 0,
        "detail": (
            f"the writer's pairs offered: {offered}; {counting} of {labels.count()} of the second ids' labels "
            f"count towards gold ({waiting} waiting for the market); the market's checks: {checks}"
        ),
    }
