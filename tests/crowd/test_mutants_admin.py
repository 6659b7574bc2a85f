"""The studies' and sessions' admin read as a researcher reads them, through the admin's own URLs:
the sessions list's filters (completion, code holds), the counts of participants' sessions beside
each study, the form's import files and pasted worker lists with their exact refusals, the workers'
marks of each session's own team, and the holds no one adds by hand."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from corpus.models import Market, WorkerExclusion
from crowd import holds
from crowd.models import CodeHold, CodeHoldDecision, Study, StudySession
from teams.models import Team
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.crowd.test_pasted_worker_lists import change_form_data

pytestmark = pytest.mark.django_db

SESSIONS = "admin:crowd_studysession_changelist"


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    return make_study(dataset, tasks_per_batch=2, completion_code="CODE-77")


def session_of(study, worker, name, *, completed=False, preview=False):
    return StudySession.objects.create(
        study=study,
        worker=worker,
        external_session_id=name,
        completed_at=timezone.now() - timedelta(minutes=5) if completed else None,
        is_preview=preview,
    )


def listed(admin_client, **params):
    response = admin_client.get(reverse(SESSIONS), params)
    assert response.status_code == 200
    return response, sorted(session.external_session_id for session in response.context["cl"].result_list)


def filter_choices(response, parameter):
    (spec,) = [spec for spec in response.context["cl"].filter_specs if getattr(spec, "parameter_name", "") == parameter]
    return spec.lookup_choices


def test_the_sessions_list_filters_completed_and_not_completed_sessions(admin_client, study, make_worker):
    """Fails if "completed" lists unfinished sessions (a code approved that was never earned) or the reverse."""
    session_of(study, make_worker(), "done", completed=True)
    session_of(study, make_worker(), "open")
    response, every = listed(admin_client, study__id__exact=study.pk)
    assert every == ["done", "open"]
    assert filter_choices(response, "completed") == [("yes", "completed"), ("no", "not completed")]
    assert listed(admin_client, study__id__exact=study.pk, completed="yes")[1] == ["done"]
    assert listed(admin_client, study__id__exact=study.pk, completed="no")[1] == ["open"]


def test_the_sessions_list_filters_by_where_the_code_hold_stands(admin_client, study, make_worker):
    """Fails if the bonus page's "waiting" link, or "refused" or "paid", lists other sessions than its own."""
    session_of(study, make_worker(), "never-held", completed=True)
    for name, decision in [("waiting", ""), ("refused", CodeHoldDecision.REFUSED), ("released", "released")]:
        held = session_of(study, make_worker(), name, completed=True)
        CodeHold.objects.create(session=held, kind=holds.SHARED_BROWSER, text=f"held {name}", decision=decision)
    response, every = listed(admin_client)
    assert every == ["never-held", "refused", "released", "waiting"]
    assert filter_choices(response, "hold") == [
        ("waiting", "waiting for a decision"),
        ("refused", "refused"),
        ("paid", "not held or released"),
    ]
    assert listed(admin_client, hold="waiting")[1] == ["waiting"]
    assert listed(admin_client, hold="refused")[1] == ["refused"]
    assert listed(admin_client, hold="paid")[1] == ["never-held", "released"]


def test_a_sessions_holds_are_shown_and_none_can_be_added_by_hand(admin_client, study, make_worker):
    """Fails if the session page lets a researcher add a hold by hand (holds come from the checks only)."""
    held = session_of(study, make_worker(), "held", completed=True)
    CodeHold.objects.create(session=held, kind=holds.SHARED_BROWSER, text="same browser as pid-1")
    response = admin_client.get(reverse("admin:crowd_studysession_change", args=[held.pk]))
    (inline,) = [i for i in response.context["inline_admin_formsets"] if i.opts.model is CodeHold]
    assert inline.has_add_permission is False
    assert [form.instance.text for form in inline.formset.forms] == ["same browser as pid-1"]


def test_the_study_list_counts_participants_sessions_and_completions_without_previews(admin_client, study, make_worker):
    """Fails if a researcher's previews, or unfinished sessions, are counted as participants' completions."""
    for name in ["a", "b"]:
        session_of(study, make_worker(), name, completed=True)
    session_of(study, make_worker(), "c")
    session_of(study, make_worker(), "preview", completed=True, preview=True)
    response = admin_client.get(reverse("admin:crowd_study_changelist"))
    (row,) = response.context["cl"].result_list
    assert (row._sessions, row._completed) == (3, 2)


def test_the_study_form_offers_each_import_file_once_sorted_and_keeps_a_gone_one(admin_client, study):
    """Fails if the pool offers a blank source, a file twice, out of order, or drops the study's own gone file."""
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2, start=10, source="b-import.csv")
    add_premises(dataset, genre, 2, start=20, source="a-import.csv")
    added = admin_client.get(reverse("admin:crowd_study_add")).context["adminform"].form
    assert list(added.fields["pool_sources"].choices) == [
        ("a-import.csv", "a-import.csv"),
        ("b-import.csv", "b-import.csv"),
    ]
    assert "allowed_ids" not in added.initial and "blocked_ids" not in added.initial
    Study.objects.filter(pk=study.pk).update(pool_sources=["gone.csv"])
    changed = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).context["adminform"].form
    assert [name for name, _ in changed.fields["pool_sources"].choices] == ["a-import.csv", "b-import.csv", "gone.csv"]


def test_the_study_form_shows_the_saved_block_list_back(admin_client, study, make_worker):
    """Fails if the change page forgets the block-list it saved (the next save would clear it)."""
    study.blocked_workers.set([make_worker(username="zed"), make_worker(username="amy")])
    form = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).context["adminform"].form
    assert form.initial["blocked_ids"] == "amy\nzed"
    assert form.initial["allowed_ids"] == ""


def refusal(admin_client, study, **lists):
    data = change_form_data(admin_client, study)
    data.update({"allowed_ids": "", "blocked_ids": "", **lists})
    response = admin_client.post(reverse("admin:crowd_study_change", args=[study.pk]), data)
    assert response.status_code == 200
    return response.context["adminform"].form.errors


SAVED_NOTHING = (
    "Nothing was saved: correct or remove them (a participant has an id here once they opened a study link)."
)


@pytest.mark.parametrize(
    ("count", "named"),
    [
        (1, "this id: NOBODY-01"),
        (2, "these ids: NOBODY-01, NOBODY-02"),
        (20, "these ids: " + ", ".join(f"NOBODY-{n:02}" for n in range(1, 21))),
        (22, "these ids: " + ", ".join(f"NOBODY-{n:02}" for n in range(1, 21)) + " and 2 more"),
    ],
)
def test_unknown_pasted_ids_are_named_up_to_twenty_and_counted_beyond(admin_client, study, count, named):
    """Fails if the refusal names the unknown ids wrongly, all of a long paste, or miscounts the rest."""
    pasted = "\n".join(f"NOBODY-{n:02}" for n in range(1, count + 1))
    errors = refusal(admin_client, study, blocked_ids=pasted)
    assert errors["blocked_ids"] == [f"No worker has {named}. {SAVED_NOTHING}"]
    assert not study.blocked_workers.exists()


def test_a_worker_on_both_lists_is_named_alone_and_nothing_is_saved(admin_client, study, make_worker):
    """Fails if the both-lists refusal names workers on one list only, or lets the study save."""
    make_worker(username="bob", market=Market.PROLIFIC, external_id="5f00000000000000000000b2")
    make_worker(username="tim")
    make_worker(username="ann")
    make_worker(username="kim")
    errors = refusal(admin_client, study, allowed_ids="tim, bob, ann", blocked_ids="kim\ntim\n5f00000000000000000000b2")
    assert errors["__all__"] == ["On both lists: 5f00000000000000000000b2, tim. Put each worker on one list only."]
    assert not study.allowed_workers.exists() and not study.blocked_workers.exists()


def test_a_study_the_catch_pool_does_not_concern_saves_without_a_warning(admin_client, study):
    """Fails if saving a study whose catch share can be met shows a warning (a spurious "None" one)."""
    data = change_form_data(admin_client, study)
    response = admin_client.post(reverse("admin:crowd_study_change", args=[study.pk]), data, follow=True)
    assert [message.level_tag for message in response.context["messages"]] == ["success"]


def team_study(team, slug):
    dataset, _genre = writing_setup(slug=f"{slug}-collection")
    dataset.team = team
    dataset.save(update_fields=["team"])
    return make_study(dataset, slug=slug)


def worker_marks_shown(admin_client):
    page = admin_client.get(reverse(SESSIONS)).content.decode()
    rows = page.split("<tr>")[1:]
    return {
        session.external_session_id: ('<span class="worker-marks">excluded</span>' in row)
        for session in StudySession.objects.all()
        for row in rows
        if f'<td class="field-external_session_id">{session.external_session_id}</td>' in row
    }


def test_a_worker_is_marked_excluded_only_beside_the_sessions_of_the_team_that_excluded_them(admin_client, make_worker):
    """Fails if a researcher approving from the sessions list sees another team's exclusion, or misses their own."""
    first, second = Team.objects.create(slug="first", name="First"), Team.objects.create(slug="second", name="Second")
    worker = make_worker(username="both-teams")
    session_of(team_study(first, "first-study"), worker, "in-first", completed=True)
    session_of(team_study(second, "second-study"), worker, "in-second", completed=True)
    WorkerExclusion.objects.create(worker=worker, team=second)
    assert worker_marks_shown(admin_client) == {"in-first": False, "in-second": True}


def test_the_sessions_list_reads_the_workers_marks_in_one_pass_whatever_its_length(admin_client, study, make_worker):
    """Fails if each row of the sessions list reads its worker's marks again (a page of 100 rows: 100 reads)."""

    def statements():
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(reverse(SESSIONS)).status_code == 200
        return len(queries)

    session_of(study, make_worker(), "first", completed=True)
    statements()  # the first reading computes the quality flags once, for every later page
    one = statements()
    for n in range(4):
        session_of(study, make_worker(), f"more-{n}", completed=True)
    assert statements() == one
