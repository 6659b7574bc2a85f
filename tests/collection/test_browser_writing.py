"""A Prolific worker writes three hypotheses in a real browser and leaves with the completion code."""

import pytest

from corpus.models import Pair, PremiseStatus, Worker
from crowd.models import StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ENTAILMENT = "A boat departed early in the morning."
NEUTRAL = "The boat carried tourists to an island."
CONTRADICTION = "The boat never left the harbour."


def test_prolific_worker_writes_meets_an_error_fixes_it_and_gets_the_code(page, live_server):
    dataset, genre = writing_setup(slug="browser-collection")
    (premise,) = add_premises(dataset, genre, 1, split="dev")
    study = make_study(dataset, slug="browser-study", tasks_per_batch=1, completion_code="BROWSER-CODE-7")
    family = genre.family

    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e"
        "&STUDY_ID=60aa11bb22cc33dd44ee55ff&SESSION_ID=browser-session-1"
    )
    assert "/write/" in page.url
    assert page.locator("#premise").inner_text() == premise.text
    page.get_by_label(family.entailment_prompt).fill(ENTAILMENT)
    page.get_by_label(family.neutral_prompt).fill(ENTAILMENT.lower())  # copies the entailment
    page.get_by_label(family.contradiction_prompt).fill(CONTRADICTION)
    page.locator("#submit-hypotheses").click()

    error = page.locator("#neutral-errors")
    error.wait_for()
    assert "same as your 'definitely correct' sentence" in error.inner_text()
    # What the worker typed is still there.
    assert page.get_by_label(family.entailment_prompt).input_value() == ENTAILMENT
    assert page.get_by_label(family.neutral_prompt).input_value() == ENTAILMENT.lower()
    assert page.get_by_label(family.contradiction_prompt).input_value() == CONTRADICTION
    assert not Pair.objects.exists()

    page.get_by_label(family.neutral_prompt).fill(NEUTRAL)
    page.locator("#submit-hypotheses").click()
    page.locator("#completion-code").wait_for()
    # The session's own code: the study's code and a suffix only this session gets.
    code = StudySession.objects.get().completion_code
    assert code.startswith("BROWSER-CODE-7-") and page.locator("#completion-code").inner_text() == code

    worker = Worker.objects.get(external_id="5f1a2b3c4d5e6f7a8b9c0d1e")
    assert dict(Pair.objects.filter(author=worker).values_list("author_label", "hypothesis")) == {
        "entailment": ENTAILMENT,
        "neutral": NEUTRAL,
        "contradiction": CONTRADICTION,
    }
    session = StudySession.objects.get(worker=worker)
    assert session.tasks_done == 1 and session.is_complete
    premise.refresh_from_db()
    assert premise.writings_done == 1 and premise.status == PremiseStatus.AVAILABLE


def test_a_worker_reports_a_broken_line_and_gets_another(page, live_server, make_worker):
    dataset, genre = writing_setup(slug="browser-collection")
    first, second = add_premises(dataset, genre, 2)
    worker = make_worker(username="reporter", password="reporter-pass-1")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "reporter")
    page.fill("input[name=password]", "reporter-pass-1")
    page.click("button[type=submit]")
    page.get_by_role("link", name="Next writing task").click()
    assert page.locator("#premise").inner_text() == first.text
    page.locator(".problem-report summary").click()
    page.locator("textarea[name=problem_report]").fill("This line is cut off.")
    page.locator("#submit-hypotheses").click()
    page.get_by_text("Thank you for the report").wait_for()
    assert page.locator("#premise").inner_text() == second.text
    first.refresh_from_db()
    assert first.status == PremiseStatus.AVAILABLE  # one reporter: back in the pool (2 distinct hold it)
    assert first.reports.get().worker == worker


def test_the_line_is_in_the_first_screen_of_the_first_task(page_on_phone_and_desktop, live_server):
    """On a phone the open instructions put the line two screens down; the line
    comes first now, the instructions (open on the first task) under it, and nothing is wider than
    the screen."""
    page = page_on_phone_and_desktop
    dataset, genre = writing_setup(slug="browser-collection")
    (premise,) = add_premises(dataset, genre, 1, split="dev")
    study = make_study(dataset, slug="phone-study", tasks_per_batch=2, completion_code="PHONE-CODE")
    page.goto(f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=phone0writer&STUDY_ID=s1&SESSION_ID=phone-1")
    assert page.locator("#premise").inner_text() == premise.text
    assert page.locator("details.instructions").evaluate("el => el.open")  # the first task: open
    bottom = page.locator("#premise").evaluate("el => el.getBoundingClientRect().bottom")
    height = page.evaluate("window.innerHeight")
    assert bottom <= height, f"the line ends {bottom} px down a {height} px screen"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
