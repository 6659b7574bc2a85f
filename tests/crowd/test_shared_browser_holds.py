"""Many ids from one browser: a browser that comes to a study under a second,
third, ... participant id has those ids' completion codes held, with a reason the researcher reads;
the first id keeps its code. The researcher releases a held code as other holds are released (an
admin action on the study sessions), and the participant's completion page then shows it."""

import pytest
from django.test import Client
from django.urls import reverse

from crowd.holds import SHARED_BROWSER, decide_code_holds
from crowd.models import CodeHoldDecision, StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.crowd.test_completion_codes import PROLIFIC, arrive, finish

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 20)
    return make_study(dataset, tasks_per_batch=1, completion_code="STUDY-50")


def visit(pid: str) -> dict[str, str]:
    return {**PROLIFIC, "PROLIFIC_PID": pid, "SESSION_ID": f"sess-{pid}"}


def arrive_in(browser: Client, study, pid: str) -> StudySession:
    """Arrive by the study link as `pid` in this browser, switching from an earlier id when asked."""
    response = browser.get(reverse("study_entry", args=[study.slug]), visit(pid))
    if response.status_code == 200:  # signed in as the previous id: asked, and says yes
        browser.post(reverse("study_entry", args=[study.slug]), {**visit(pid), "switch": "yes"})
    return StudySession.objects.get(study=study, external_session_id=f"sess-{pid}")


def completion(browser: Client) -> str:
    return browser.get(reverse("writing_next")).content.decode()


def test_the_second_id_from_one_browser_has_its_code_held_and_the_first_keeps_its_own(study):
    one_browser = Client()
    first = arrive_in(one_browser, study, "pid-first")
    finish(one_browser, study)
    second = arrive_in(one_browser, study, "pid-second")
    finish(one_browser, study)
    third = arrive_in(one_browser, study, "pid-third")
    finish(one_browser, study)
    elsewhere = Client()
    other = arrive(elsewhere, study, visit("pid-elsewhere"))
    finish(elsewhere, study)

    first, second, third, other = (StudySession.objects.get(pk=s.pk) for s in (first, second, third, other))
    assert first.completion_code and not first.code_holds.exists()
    assert other.completion_code and not other.code_holds.exists(), "another browser is another person"
    for extra in (second, third):
        assert extra.is_complete and extra.completion_code == ""
        (held,) = extra.code_holds.all()
        assert held.kind == SHARED_BROWSER and held.text.startswith("Same browser as participant pid-first")
        assert extra.code_held_reason == held.text
    assert "pid-second" in third.code_holds.get().text
    # The participant sees the neutral held page, never the reason nor a code.
    page = completion(one_browser)
    assert 'id="completion-held"' in page and "Same browser" not in page and "STUDY-50" not in page


def test_a_released_hold_shows_the_code_and_a_refused_one_does_not(study):
    one_browser = Client()
    arrive_in(one_browser, study, "pid-first")
    finish(one_browser, study)
    second = arrive_in(one_browser, study, "pid-second")
    finish(one_browser, study)

    decide_code_holds([second.pk], CodeHoldDecision.RELEASED)

    second.refresh_from_db()
    assert second.completion_code == second.expected_completion_code()
    page = completion(one_browser)
    assert second.completion_code in page and 'id="completion-held"' not in page

    third = arrive_in(one_browser, study, "pid-third")
    finish(one_browser, study)
    decide_code_holds([third.pk], CodeHoldDecision.REFUSED)
    assert 'id="completion-held"' in completion(one_browser)
    third.refresh_from_db()
    assert third.completion_code == "" and third.code_holds.get().decision == CodeHoldDecision.REFUSED


def test_the_researcher_releases_a_held_code_by_the_admin_action(client, researcher, study):
    one_browser = Client()
    first = arrive_in(one_browser, study, "pid-first")
    finish(one_browser, study)
    second = arrive_in(one_browser, study, "pid-second")
    finish(one_browser, study)
    client.force_login(researcher)
    changelist = reverse("admin:crowd_studysession_changelist")

    listing = client.get(changelist, {"study__id__exact": study.pk}).content.decode()
    assert "Same browser as participant pid-first" in listing
    response = client.post(
        changelist,
        {"action": "release_held_codes", "_selected_action": [str(first.pk), str(second.pk)]},
        follow=True,
    )

    assert "1 held code(s) released" in response.content.decode()
    second.refresh_from_db()
    decided = second.code_holds.get()
    assert decided.decision == CodeHoldDecision.RELEASED and decided.decided_by == researcher and decided.decided_at
    assert second.completion_code == second.expected_completion_code()
    assert not first.code_holds.exists(), "a code never held is not 'decided'"
