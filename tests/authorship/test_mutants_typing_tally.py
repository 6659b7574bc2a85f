"""The typing tally's keys: a record of a study session counts under its dataset and study (and
leaves them when deleted), its day is the UTC day whatever the server's time zone, and a dataset's
fresh count reads only that dataset's studies."""

from datetime import UTC, date, datetime
from typing import Any

import pytest

from authorship import typing_tally
from authorship.models import TypingTally, WritingEvidence
from corpus.models import Dataset, Worker
from crowd.models import Study, StudySession
from tests.collection.writing_helpers import make_study, writing_setup

pytestmark = pytest.mark.django_db

# 12:00 UTC on the 27th is already the 28th at UTC+14 (Kiritimati).
NOON_UTC = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
UTC_DAY = date(2026, 11, 27)


def tally() -> dict[tuple[Any, ...], int]:
    """The tally's summed rows that are not zero, by key."""
    sums: dict[tuple[Any, ...], int] = {}
    for *key, n in TypingTally.objects.values_list(*typing_tally.KEY, "n"):
        sums[tuple(key)] = sums.get(tuple(key), 0) + n
    return {key: n for key, n in sums.items() if n}


def session_of(study: Study, worker: Worker) -> StudySession:
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{study.slug}-{worker.pk}")


def record(worker: Worker, session: StudySession | None, *, flagged: bool = False) -> WritingEvidence:
    """A typing record written at noon UTC, read back as the database keeps it."""
    row = WritingEvidence.objects.create(
        worker=worker, study_session=session, field_name="hypothesis", has_evidence=True, flagged=flagged
    )
    WritingEvidence.objects.filter(pk=row.pk).update(created_at=NOON_UTC)
    row.refresh_from_db()
    return row


def test_a_study_sessions_records_count_under_its_dataset_and_study_and_leave_them_when_deleted(make_worker) -> None:
    dataset, _genre = writing_setup()
    study = make_study(dataset)
    writer = make_worker()
    session = session_of(study, writer)
    in_study = [record(writer, session), record(writer, session, flagged=True)]
    outside = record(writer, None)
    typing_tally.recorded(in_study, session)
    typing_tally.recorded([outside], None)
    assert tally() == {
        (dataset.pk, study.pk, writer.pk, UTC_DAY, False, True): 1,
        (dataset.pk, study.pk, writer.pk, UTC_DAY, True, True): 1,
        (None, None, writer.pk, UTC_DAY, False, True): 1,
    }
    in_study[1].delete()
    assert tally() == {
        (dataset.pk, study.pk, writer.pk, UTC_DAY, False, True): 1,
        (None, None, writer.pk, UTC_DAY, False, True): 1,
    }
    outside.delete()
    assert tally() == {(dataset.pk, study.pk, writer.pk, UTC_DAY, False, True): 1}


def test_a_records_day_is_the_utc_day_whatever_the_servers_time_zone(make_worker, settings) -> None:
    settings.TIME_ZONE = "Pacific/Kiritimati"
    dataset, _genre = writing_setup()
    study = make_study(dataset)
    writer = make_worker()
    session = session_of(study, writer)
    typing_tally.recorded([record(writer, session)], session)
    key = (dataset.pk, study.pk, writer.pk, UTC_DAY, False, True)
    assert tally() == {key: 1}
    assert typing_tally.fresh_counts() == {key: 1}


def test_a_datasets_fresh_count_reads_only_its_own_studies_records(make_worker) -> None:
    dataset, _genre = writing_setup()
    other = Dataset.objects.create(slug="other-collection", name="Other collection")
    study, other_study = make_study(dataset), make_study(other, slug="study-other")
    writer = make_worker()
    record(writer, session_of(study, writer))
    record(writer, session_of(other_study, writer))
    record(writer, None)
    assert typing_tally.fresh_counts(dataset) == {(dataset.pk, study.pk, writer.pk, UTC_DAY, False, True): 1}
    assert typing_tally.fresh_counts(other) == {(other.pk, other_study.pk, writer.pk, UTC_DAY, False, True): 1}
    assert len(typing_tally.fresh_counts()) == 3
