"""The end of a study in a real browser: the code with a copy button, the way back to the market,
no message from the last submit that contradicts "all done", and a page that fits a phone."""

import re

import pytest

from corpus.models import Label
from crowd.models import Study, StudySession, TaskKind
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_completion_page_copies_the_code_and_leads_back_to_prolific(chromium_browser, live_server):
    dataset = make_dataset("browser-completion")
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL)
    study = Study.objects.create(
        slug="browser-completion",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="DONE-7",
        completion_url="https://app.prolific.com/submissions/complete?cc={code}",
    )
    context = chromium_browser.new_context(viewport={"width": 390, "height": 844})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=8a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=completion-session-1"
    )
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    for key in "12321":
        page.keyboard.press(key)
    page.click("#submit-batch")
    page.wait_for_selector("#completion-code")

    code = StudySession.objects.get().completion_code
    assert code.startswith("DONE-7") and page.inner_text("#completion-code") == code
    page.click("#copy-code")
    # A locator wait, not wait_for_function: the page's CSP forbids evaluating strings as code.
    page.locator("#copy-code", has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == code
    back = page.locator("#completion-link")
    assert back.get_attribute("href") == f"https://app.prolific.com/submissions/complete?cc={code}"
    assert page.locator(".messages").count() == 0  # no "Saved, here is the next task" above "All done"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()
