"""The authorship reads the workers page and the snapshots show: the flagged share per study and
UTC day over the last weeks, the typing counts and flags of a set of pairs, and the writers with
copies, most first."""

from datetime import UTC, date, timedelta
from typing import Any

import pytest
from django.utils import timezone

from authorship import selectors, sentence_tally, typing_tally
from authorship.judgements import Flag
from authorship.models import SenseScore, TypingTally, WritingEvidence, WrittenSentence
from corpus import tallies
from corpus.models import Dataset, Pair, Worker
from corpus.scope import Scope
from crowd.models import Study, StudySession
from tests import factories
from tests.collection.writing_helpers import make_study, writing_setup

pytestmark = pytest.mark.django_db


def typed(
    dataset: Dataset,
    study: Study | None,
    worker: Worker,
    day: date,
    *,
    flagged: bool,
    n: int = 1,
    has_evidence: bool = True,
) -> None:
    """`n` typing records of this key, as the writers count them."""
    study_id = None if study is None else study.pk
    key = (dataset.pk if study else None, study_id, worker.pk, day, flagged, has_evidence)
    tallies.insert_deltas(TypingTally, typing_tally.KEY, {key: n})


def utc_today() -> date:
    return timezone.now().astimezone(UTC).date()


def test_the_share_per_study_and_day_lists_newest_day_first_then_by_study(make_worker) -> None:
    dataset, _genre = writing_setup()
    # Created in the other order than their slugs sort in, so the slug alone orders them.
    beta = make_study(dataset, slug="beta")
    alpha = make_study(dataset, slug="alpha")
    writer = make_worker()
    today, yesterday = utc_today(), utc_today() - timedelta(days=1)
    typed(dataset, beta, writer, yesterday, flagged=True)
    typed(dataset, beta, writer, yesterday, flagged=False, n=3)
    typed(dataset, alpha, writer, yesterday, flagged=False, n=2)
    typed(dataset, beta, writer, today, flagged=False)
    typed(dataset, alpha, writer, today, flagged=True, n=2)
    typed(dataset, alpha, writer, today, flagged=False, n=2)
    typed(dataset, None, writer, today, flagged=True)  # outside a study: left out
    shares = selectors.typing_flagged_share_by_study_day()
    assert shares == [
        {"study": "alpha", "study_name": "Study alpha", "day": today, "written": 4, "flagged": 2, "share": 0.5},
        {"study": "beta", "study_name": "Study beta", "day": today, "written": 1, "flagged": 0, "share": 0.0},
        {"study": "alpha", "study_name": "Study alpha", "day": yesterday, "written": 2, "flagged": 0, "share": 0.0},
        {"study": "beta", "study_name": "Study beta", "day": yesterday, "written": 4, "flagged": 1, "share": 0.25},
    ]


def test_the_share_leaves_out_days_before_its_window_and_days_whose_records_all_left(make_worker) -> None:
    dataset, _genre = writing_setup()
    study = make_study(dataset)
    writer = make_worker()
    first_day = utc_today() - timedelta(days=7)
    typed(dataset, study, writer, first_day - timedelta(days=1), flagged=True)
    typed(dataset, study, writer, first_day, flagged=True)
    typed(dataset, study, writer, utc_today(), flagged=False)
    typed(dataset, study, writer, utc_today(), flagged=False, n=-1)
    assert [(row["day"], row["flagged"]) for row in selectors.typing_flagged_share_by_study_day(days=7)] == [
        (first_day, 1)
    ]


def test_the_share_window_starts_on_a_utc_day_whatever_the_servers_time_zone(make_worker, settings) -> None:
    # A zone whose date differs from UTC's at this hour: a day ahead from 10:00 UTC, behind until 12:00.
    settings.TIME_ZONE = "Pacific/Kiritimati" if timezone.now().astimezone(UTC).hour >= 11 else "Etc/GMT+12"
    dataset, _genre = writing_setup()
    study = make_study(dataset)
    writer = make_worker()
    first_day = utc_today() - timedelta(days=2)
    typed(dataset, study, writer, first_day - timedelta(days=1), flagged=False)
    typed(dataset, study, writer, first_day, flagged=True)
    assert [row["day"] for row in selectors.typing_flagged_share_by_study_day(days=2)] == [first_day]


def evidence(pair: Pair | None, worker: Worker, flags: list[str], *, has_evidence: bool = True) -> WritingEvidence:
    return WritingEvidence.objects.create(
        pair=pair, worker=worker, field_name="hypothesis", has_evidence=has_evidence, flags=flags, flagged=bool(flags)
    )


def pairs(count: int) -> list[Pair]:
    dataset = factories.dataset()
    return [factories.pair(dataset, factories.premise(dataset), ["entailment"]) for _ in range(count)]


def test_the_typing_counts_of_some_pairs_count_each_flag_once_per_record(make_worker) -> None:
    writer = make_worker()
    one, two, three, four, outside = pairs(5)
    evidence(one, writer, [Flag.PASTED, Flag.PASTED, Flag.COPY])
    evidence(two, writer, [Flag.PASTED, "an-old-flag"])
    evidence(three, writer, [])
    evidence(four, writer, [Flag.NO_EVIDENCE], has_evidence=False)
    evidence(outside, writer, [Flag.TIMES_OUTSIDE_CLAIM])
    counts = selectors.typing_evidence_counts([one.pk, two.pk, three.pk, four.pk])
    flags = dict.fromkeys((flag.value for flag in Flag), 0)
    flags.update({Flag.PASTED.value: 2, Flag.COPY.value: 1, Flag.NO_EVIDENCE.value: 1})
    assert counts == {"recorded": 4, "with_evidence": 3, "flagged": 3, "flags": flags}
    by_query = selectors.typing_evidence_counts(Pair.objects.filter(pk__in=[one.pk, outside.pk]).values("pk"))
    assert (by_query["recorded"], by_query["flags"][Flag.TIMES_OUTSIDE_CLAIM.value]) == (2, 1)


def test_the_typing_counts_of_pairs_without_records_are_zero() -> None:
    (pair,) = pairs(1)
    counts: dict[str, Any] = selectors.typing_evidence_counts([pair.pk])
    assert counts == {
        "recorded": 0,
        "with_evidence": 0,
        "flagged": 0,
        "flags": dict.fromkeys((flag.value for flag in Flag), 0),
    }


def test_the_flags_of_some_pairs_are_sorted_and_name_only_flagged_pairs(make_worker) -> None:
    writer = make_worker()
    one, two, outside = pairs(3)
    evidence(one, writer, [Flag.PASTED, Flag.COPY, Flag.MACHINE_CADENCE])
    evidence(two, writer, [])
    evidence(outside, writer, [Flag.PASTED])
    assert selectors.typing_flags_of_pairs([one.pk, two.pk]) == {
        one.pk: sorted([Flag.PASTED.value, Flag.COPY.value, Flag.MACHINE_CADENCE.value])
    }


def sentence(
    worker: Worker,
    *,
    session: StudySession | None = None,
    copy_of: WrittenSentence | None = None,
    root: WrittenSentence | None = None,
) -> WrittenSentence:
    dataset = factories.dataset()
    premise = factories.premise(dataset)
    pair = factories.pair(dataset, premise, ["entailment"], author=worker)
    written = WrittenSentence.objects.create(
        pair=pair,
        premise=premise,
        dataset=dataset,
        worker=worker,
        study_session=session,
        normalised=pair.hypothesis.lower(),
        copy_of=copy_of,
        copies_other_writer=None if copy_of is None else copy_of.worker_id != worker.pk,
        cluster_root=root,
    )
    sentence_tally.recorded([written])  # as the writing submit counts it
    return written


def test_the_writers_with_copies_rank_by_copies_of_others_then_own_repeats_then_id(
    make_worker, django_user_model
) -> None:
    first = make_worker(username="first-writer")
    tied_earlier = make_worker(username="tied-earlier", market="prolific", external_id="D-EXT")
    tied_later = make_worker(username="no-name")
    copier = make_worker(username="copier", market="prolific", external_id="A-EXT")
    repeater = make_worker(username="repeater")
    django_user_model.objects.filter(pk=tied_later.user_id).update(username="")
    original = sentence(first)
    for _ in range(2):
        sentence(copier, copy_of=original)
    study = make_study(writing_setup()[0])
    visits = [StudySession.objects.create(study=study, worker=repeater, external_session_id=f"s{i}") for i in (1, 2)]
    own = sentence(repeater, session=visits[0])
    sentence(repeater, session=visits[0], copy_of=original)
    for _ in range(3):
        sentence(repeater, session=visits[1], copy_of=own)
    for writer in (tied_later, tied_earlier):
        their_own = sentence(writer)
        sentence(writer, copy_of=original)
        sentence(writer, copy_of=their_own)

    def row(writer: Worker, name: str, written: int, of_others: int, own_repeats: int, sessions: int) -> dict[str, Any]:
        return {
            "worker_id": writer.pk,
            "writer": name,
            "written": written,
            "of_others": of_others,
            "own_repeats": own_repeats,
            "sessions": sessions,
        }

    assert selectors.copies_by_writer() == [
        row(copier, "A-EXT", 2, 2, 0, 0),
        row(repeater, "repeater", 5, 1, 3, 2),
        row(tied_earlier, "D-EXT", 3, 1, 1, 0),
        row(tied_later, f"worker {tied_later.pk}", 3, 1, 1, 0),
    ]
    assert [writer["worker_id"] for writer in selectors.copies_by_writer(limit=2)] == [copier.pk, repeater.pk]


def test_the_copy_clusters_rank_by_size_and_list_their_writers_by_sentences(make_worker, django_user_model) -> None:
    named = make_worker(username="named", market="prolific", external_id="EXT-1")
    most = make_worker(username="writer-two")
    nameless = make_worker(username="no-name")
    author = make_worker(username="author")
    django_user_model.objects.filter(pk=nameless.user_id).update(username="")
    # The two small clusters' roots come first, so the largest cluster is not also the oldest.
    small = sentence(author)
    sentence(named, copy_of=small, root=small)
    smaller = sentence(author)
    sentence(most, copy_of=smaller, root=smaller)
    largest = sentence(named)
    visit = StudySession.objects.create(study=make_study(writing_setup()[0]), worker=most, external_session_id="one")
    for _ in range(2):
        sentence(most, session=visit, copy_of=largest, root=largest)
    sentence(nameless, copy_of=largest, root=largest)

    def writer(worker: Worker, name: str, sentences: int = 1, sessions: int = 0) -> dict[str, Any]:
        return {"worker_id": worker.pk, "writer": name, "sentences": sentences, "sessions": sessions}

    def text(of: WrittenSentence) -> str:
        return of.pair.hypothesis

    assert selectors.copy_clusters() == [
        {
            "root": largest.pk,
            "text": text(largest),
            "sentences": 4,
            "writers": [
                writer(most, "writer-two", 2, 1),
                writer(named, "EXT-1"),
                writer(nameless, f"worker {nameless.pk}"),
            ],
        },
        {
            "root": small.pk,
            "text": text(small),
            "sentences": 2,
            "writers": [writer(named, "EXT-1"), writer(author, "author")],
        },
        {
            "root": smaller.pk,
            "text": text(smaller),
            "sentences": 2,
            "writers": [writer(most, "writer-two"), writer(author, "author")],
        },
    ]
    assert [cluster["root"] for cluster in selectors.copy_clusters(limit=1)] == [largest.pk]


def scored(worker: Worker, dataset: Dataset, *, low: bool) -> None:
    pair = factories.pair(dataset, factories.premise(dataset), ["entailment"], author=worker)
    SenseScore.objects.create(
        pair=pair, worker=worker, similarity=0.5, known_word_share=1.0, low_sense=low, method="test"
    )


def test_a_writers_typing_and_sense_figures_are_summed_over_the_scopes_studies(make_worker) -> None:
    dataset, _genre = writing_setup()
    other = Dataset.objects.create(slug="other-collection", name="Other collection")
    study, other_study = make_study(dataset), make_study(other, slug="study-other")
    writer, all_deleted, not_asked, clean = make_worker(), make_worker(), make_worker(), make_worker()
    day = utc_today()
    typed(dataset, study, writer, day, flagged=True, n=2)
    typed(dataset, study, writer, day - timedelta(days=1), flagged=False)
    typed(dataset, study, writer, day, flagged=True, has_evidence=False)
    typed(other, other_study, writer, day, flagged=True, n=4)
    typed(dataset, study, all_deleted, day, flagged=True)
    typed(dataset, study, all_deleted, day, flagged=True, n=-1)
    typed(dataset, study, not_asked, day, flagged=True)
    typed(dataset, study, clean, day, flagged=False)
    for low in (True, False, False):
        scored(all_deleted, dataset, low=low)
    scored(writer, other, low=True)
    scored(not_asked, dataset, low=True)
    for _ in range(5):
        scored(clean, dataset, low=True)

    def sense(scored: int, low: int, judged: int = 0) -> dict[str, int]:
        return {"sense_scored": scored, "low_sense": low, "low_sense_writer": judged}

    assert selectors.typing_flags_by_worker([writer.pk, all_deleted.pk, clean.pk]) == {
        writer.pk: {"written": 8, "flagged": 7, "no_evidence": 1, **sense(1, 1)},
        all_deleted.pk: {"written": 0, "flagged": 0, "no_evidence": 0, **sense(3, 1)},
        clean.pk: {"written": 1, "flagged": 0, "no_evidence": 0, **sense(5, 5, judged=1)},
    }
    of_dataset = Scope.of_dataset(dataset)
    assert selectors.typing_flags_by_worker([writer.pk, all_deleted.pk], of_dataset) == {
        writer.pk: {"written": 4, "flagged": 3, "no_evidence": 1},
        all_deleted.pk: {"written": 0, "flagged": 0, "no_evidence": 0, **sense(3, 1)},
    }
    assert selectors.sense_by_worker([writer.pk], Scope.of_dataset(other)) == {writer.pk: sense(1, 1)}
    assert selectors.sense_by_worker([writer.pk], of_dataset) == {}
