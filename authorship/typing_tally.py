"""Typing records per dataset × study × writer × day × flagged × with a record, maintained for the
workers page as append-only signed deltas (`TypingTally`, the core's `Tally` pattern), written in
the writer's transaction:

  - a writing submit's and an adversarial try's records (`authorship.services`): one each;
  - a record deleted with its pair or premise, or on its own: it leaves the count
    (`evidence_deleting`, before the delete). A worker's, a dataset's or a study's deletion takes
    its tally rows with it (CASCADE).

Retention and erasure reduce a record to its flags, so its key does not move. Anything else (a
study session deleted, a bulk load) is repaired by `manage.py rebuild_tallies typing`.
"""

from collections import Counter
from collections.abc import Iterable
from datetime import UTC
from typing import Any

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDate

from corpus import tallies
from corpus.models import Dataset, Pair, Premise
from crowd.models import StudySession

from .models import TypingTally, WritingEvidence

KEY = ("dataset_id", "study_id", "worker_id", "day", "flagged", "has_evidence")

Key = tuple[Any, ...]
Place = tuple[int | None, int | None]  # (dataset id, study id) of a record's study session
NO_STUDY: Place = (None, None)


def _key(row: WritingEvidence, place: Place) -> Key:
    return (*place, row.worker_id, row.created_at.astimezone(UTC).date(), row.flagged, row.has_evidence)


def recorded(rows: Iterable[WritingEvidence], study_session: StudySession | None) -> int:
    """Count new typing records (saved, of `study_session`): one INSERT in the caller's transaction."""
    place = NO_STUDY if study_session is None else (study_session.study.dataset_id, study_session.study_id)
    deltas: Counter[Key] = Counter(_key(row, place) for row in rows)
    return tallies.insert_deltas(TypingTally, KEY, deltas)


def fresh_counts(dataset: Dataset | None = None) -> dict[Key, int]:
    """{KEY: records} counted from the typing records (of a dataset's studies, or every one)."""
    rows: QuerySet[WritingEvidence] = WritingEvidence.objects.all()
    if dataset is not None:
        rows = rows.filter(study_session__study__dataset=dataset)
    counted = (
        rows.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values_list(
            "study_session__study__dataset_id", "study_session__study_id", "worker_id", "day", "flagged", "has_evidence"
        )
        .annotate(n=Count("id"))
        .order_by()
    )
    return {tuple(row[:-1]): row[-1] for row in counted}


def evidence_deleting(
    sender: type[WritingEvidence], instance: WritingEvidence, origin: Any = None, **kwargs: Any
) -> None:
    """pre_delete receiver (connected in authorship.apps): a record deleted on its own, or with its
    pair or premise, leaves the count, in the delete's transaction."""
    # Started from records, pairs or premises (the admin's, an erasure's), not from a worker,
    # dataset or study, whose deletion removes their tally rows by CASCADE.
    if not tallies.delete_started_from(origin, (WritingEvidence, Pair, Premise)):
        return
    place = NO_STUDY
    if instance.study_session_id is not None:
        place = (
            StudySession.objects.filter(pk=instance.study_session_id)
            .values_list("study__dataset_id", "study_id")
            .first()
        ) or NO_STUDY
    tallies.insert_deltas(TypingTally, KEY, {_key(instance, place): -1})


# Folded, checked and rebuilt with the corpus's tallies (registered in authorship.apps).
TALLY = tallies.Maintained(
    "typing", ((TypingTally, KEY),), lambda dataset: {TypingTally: fresh_counts(dataset)}, "the typing records"
)
