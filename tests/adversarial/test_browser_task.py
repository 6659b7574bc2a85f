"""The adversarial task in a real browser at desktop and phone width, by keyboard alone: arrive by
the study link, type a hypothesis and press Enter, see the model's answer, try again, fool it, give
the one-line reason with Enter, and find the next premise."""

import re

import pytest

from adversarial.models import AdversarialTask, AdversarialTry, TaskState

from .helpers import ContractModel, adversarial_study, hypothesis_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_tries_fooled_and_reason_by_keyboard(chromium_browser, live_server, width, height):
    model = ContractModel()
    try:
        study, _ = adversarial_study(slug=f"adv-{width}", target_endpoint=model.url, max_tries=3, tasks_per_batch=2)
        context = chromium_browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(60_000)  # a loaded CI machine
        page.goto(
            f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=8a1b2c3d4e5f6a7b8c9d0e1f"
            f"&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=adversarial-{width}"
        )
        page.wait_for_url(re.compile(r"/adversarial/[0-9a-f-]+/$"))
        task = AdversarialTask.objects.get(state=TaskState.WRITING)
        target = page.get_attribute("#target-label", "data-label")
        assert target == task.target_label

        # The box has the focus: type and press Enter.
        page.keyboard.type(hypothesis_for(target, fooled=False))
        page.keyboard.press("Enter")
        page.locator("#model-right").wait_for()
        assert "2 tries left" in page.inner_text("#model-right")
        assert page.locator("#tries li.not-fooled").count() == 1
        assert re.search(r"\(\d+% sure\)", page.inner_text("#tries"))

        page.fill("#hypothesis", "")
        page.keyboard.type(hypothesis_for(target, fooled=True))
        page.keyboard.press("Enter")
        page.locator("#fooled-note").wait_for()
        assert page.locator("#tries li.fooled").count() == 1
        assert page.evaluate("document.activeElement.id") == "reason"
        page.keyboard.press("Enter")  # an empty reason is refused, nothing lost
        page.locator("#reason-errors").wait_for()
        page.keyboard.type("Outside is the opposite of what the line says.")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/adversarial/[0-9a-f-]+/$"))
        page.locator("#hypothesis").wait_for()
        assert "you fooled the model" in page.inner_text(".messages")
        assert page.evaluate("document.documentElement.scrollWidth") <= width

        fooled = AdversarialTry.objects.get(model_fooled=True)
        assert fooled.task.reason == "Outside is the opposite of what the line says." and fooled.pair_id
        context.close()
    finally:
        model.close()
