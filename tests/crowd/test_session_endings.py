"""How a closed visit ended is a record (`StudySession.ended_as`) its closer writes: the study page's
funnel and the sessions file read it, never the closing sentence's words; the database refuses a
closed visit that does not say how, and the migration wrote it once for the visits closed before."""

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from consent import services as consent
from crowd.models import SessionEnding, StudySession
from dashboard.queries.study import session_funnel, session_rows
from tests.migration_steps import migrated_back
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


def statuses(study):
    return [row[5] for row in session_rows(study)]


def test_the_funnel_and_the_sessions_file_read_the_ending_not_the_closing_words(make_worker):
    study = make_study(make_dataset())
    now = timezone.now()
    endings = [
        (SessionEnding.RETURNED, "timed out, then returned"),
        (SessionEnding.TIMED_OUT, "rejected after it timed out"),
        (SessionEnding.REJECTED, "returned on MTurk? no: rejected"),
        (SessionEnding.WITHDRAWN, "returned by the participant's own hand"),
    ]
    for number, (ending, words) in enumerate(endings):
        visit = session_for(study, make_worker(), f"S{number}")
        StudySession.objects.filter(pk=visit.pk).update(closed_at=now, ended_as=ending, closed_reason=words)

    session_for(study, make_worker(), "S-arrived")
    working = session_for(study, make_worker(), "S-working")
    stranded = session_for(study, make_worker(), "S-stranded")
    StudySession.objects.filter(pk=working.pk).update(tasks_done=1)
    StudySession.objects.filter(pk=stranded.pk).update(tasks_done=1, stranded_at=now)

    funnel = session_funnel(study)

    assert (funnel["returned"], funnel["timed_out"], funnel["rejected"]) == (1, 1, 1)
    assert (funnel["arrived"], funnel["started"], funnel["in_progress"], funnel["stranded"]) == (7, 2, 1, 1)
    assert statuses(study) == ["returned", "timed out", "rejected", "closed", "arrived", "in progress", "stranded"]


@pytest.mark.parametrize(
    "fields",
    [
        {"closed_at": "now", "ended_as": ""},
        {"closed_at": None, "ended_as": SessionEnding.RETURNED},
        {"closed_at": "now", "ended_as": "gone"},
    ],
    ids=["closed-without-an-ending", "an-ending-while-open", "an-unknown-ending"],
)
def test_a_visit_whose_closing_and_ending_disagree_is_refused(make_worker, fields):
    visit = session_for(make_study(make_dataset()), make_worker())
    values = {**fields, "closed_at": timezone.now() if fields["closed_at"] == "now" else None}
    with pytest.raises(IntegrityError, match="a_closed_session_says_how_it_ended"), transaction.atomic():
        StudySession.objects.filter(pk=visit.pk).update(**values)
    visit.refresh_from_db()
    assert (visit.closed_at, visit.ended_as) == (None, "")


def test_the_migration_reads_each_closed_visits_ending_from_its_words_once(make_worker):
    study = make_study(make_dataset())
    words = [
        "returned on Prolific",
        "timed out on Prolific",
        "rejected on MTurk",
        "Withdrawn by the participant",
        "erased at the participant's request",
        "closed by hand",
    ]
    visits = [session_for(study, make_worker(), f"M{number}") for number in range(len(words) + 1)]
    before, after = [("crowd", "0034_code_hold_decisions_on_holds")], [("crowd", "0035_session_endings")]
    with migrated_back(before, after) as old:
        now = timezone.now()
        for visit, reason in zip(visits, words, strict=False):
            old.get_model("crowd", "StudySession").objects.filter(pk=visit.pk).update(
                closed_at=now, closed_reason=reason
            )

    ended = dict(StudySession.objects.filter(study=study).values_list("pk", "ended_as"))
    assert [ended[visit.pk] for visit in visits] == [
        "returned",
        "timed_out",
        "rejected",
        "withdrawn",
        "erased",
        "other",
        "",
    ]


def test_the_admin_lists_visits_by_ending_and_closes_none_by_hand(admin_client, make_worker):
    study = make_study(make_dataset())
    returned, open_visit = session_for(study, make_worker(), "R"), session_for(study, make_worker(), "O")
    StudySession.objects.filter(pk=returned.pk).update(
        closed_at=timezone.now(), ended_as=SessionEnding.RETURNED, closed_reason="returned on Prolific"
    )
    changelist = reverse("admin:crowd_studysession_changelist")

    listed = admin_client.get(changelist, {"study__id__exact": study.pk, "ended_as__exact": "returned"})

    assert [visit.pk for visit in listed.context["cl"].result_list] == [returned.pk]
    form = admin_client.get(reverse("admin:crowd_studysession_change", args=[open_visit.pk])).context["adminform"]
    assert {"closed_at", "ended_as", "closed_reason"} <= set(form.readonly_fields)
    assert not {"closed_at", "ended_as", "closed_reason"} & set(form.form.fields)


def test_a_withdrawal_closes_an_open_visit_once_and_keeps_the_ending_of_one_closed_before(make_worker):
    study = make_study(make_dataset())
    open_visit = session_for(study, make_worker(), "OPEN")
    returned = session_for(study, make_worker(), "RETURNED")
    closed_at = timezone.now()
    StudySession.objects.filter(pk=returned.pk).update(
        closed_at=closed_at, ended_as=SessionEnding.RETURNED, closed_reason="returned on Prolific"
    )

    first = consent.withdraw(open_visit)
    again = consent.withdraw(open_visit)
    consent.withdraw(returned)

    assert again == first and first.market_note == "market not told: not a market participant"
    ended = {row.pk: (row.ended_as, row.closed_reason) for row in StudySession.objects.filter(study=study)}
    assert ended == {
        open_visit.pk: ("withdrawn", consent.WITHDRAWN_REASON),
        returned.pk: ("returned", "returned on Prolific"),
    }
    assert StudySession.objects.get(pk=returned.pk).closed_at == closed_at
