"""A worker judges a batch of MPE items in a real browser: four captions, the proposed sentence, yes / unknown / no."""

import re

import pytest

from corpus.models import Label, Pair, ValidationLabel
from corpus.mpe_wording import QUESTION
from tests.present import present

from .test_mpe_task import CAPTIONS, make_mpe_items
from .validation_factories import pair_of_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_worker_judges_five_mpe_items_by_mouse_and_keys(page, live_server, make_worker):
    _, _items = make_mpe_items(5, slug="browser-mpe")
    make_worker(username="mpe-browser", password="mpe-browser-pass")
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/mpe/next/")
    page.fill("#id_username", "mpe-browser")
    page.fill("#id_password", "mpe-browser-pass")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/validate/mpe/batch/[0-9a-f-]+/$"))

    assert page.get_by_role("heading", name=QUESTION).count() == 1
    fieldsets = page.locator("fieldset.mpe-item")
    assert fieldsets.count() == 5
    first = fieldsets.nth(0)
    assert first.locator("li.caption").all_inner_texts() == CAPTIONS
    items = [fieldsets.nth(i).get_attribute("data-item") for i in range(5)]
    order = [pair_of_item()[item] for item in items]

    # Two answers with the mouse (the buttons say Yes / Unknown / No), three with the keys 1/2/3.
    first.get_by_text("unknown", exact=False).click()
    fieldsets.nth(1).locator("label", has_text=re.compile(r"\bNo$")).click()
    page.keyboard.press("1")
    page.keyboard.press("3")
    # One left out: the page names it and nothing is saved.
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    assert "every item" in page.get_by_role("alert").inner_text()
    assert not ValidationLabel.objects.exists()
    page.keyboard.press("2")
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    page.wait_for_url(f"{live_server.url}/validate/mpe/next/")

    expected = [Label.NEUTRAL, Label.CONTRADICTION, Label.ENTAILMENT, Label.CONTRADICTION, Label.NEUTRAL]
    assert [ValidationLabel.objects.get(pair_id=pk).label for pk in order] == expected
    assert all(Pair.objects.get(pk=pk).label_count == 1 for pk in order)


def test_researcher_adjudicates_a_split_item_on_a_phone(page, live_server, make_worker, make_researcher):
    from corpus.models import Adjudication

    from .test_mpe_task import judge

    dataset, items = make_mpe_items(2, slug="browser-adjudication")
    workers = [make_worker(username=f"j{i}") for i in range(5)]
    E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
    judge(items, workers, [[E, E, N, N, C], [E, E, E, E, N]])
    make_researcher(username="ada", password="research-pass-1")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/mpe/%3Fdataset%3D{dataset.slug}")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/mpe/\?dataset="))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    queued = page.locator("article.adjudication")
    assert queued.count() == 1 and queued.get_attribute("data-pair") == str(items[0].pk)
    assert "2-2-1 split" in queued.inner_text()
    queued.get_by_role("button", name=re.compile("^contradiction")).click()
    page.wait_for_url(re.compile(r".*/dashboard/mpe/\?dataset="))
    assert "gold label is now contradiction" in page.content()
    assert page.locator("article.adjudication").count() == 0
    item = Pair.objects.get(pk=items[0].pk)
    assert (item.gold_label, item.label_count) == (C, 5)
    assert present(Adjudication.objects.get().researcher).username == "ada"


def test_prolific_participant_arrives_by_an_mpe_study_link_judges_by_keys_and_gets_the_code(page, live_server):
    from crowd.models import Study, StudySession, TaskKind

    dataset, _items = make_mpe_items(10, slug="browser-mpe-study")
    study = Study.objects.create(
        slug="browser-mpe-study",
        name="Judge sentences against captions",
        dataset=dataset,
        task_kind=TaskKind.MPE_JUDGMENT,
        tasks_per_batch=2,
        completion_code="MPE-CODE-3",
        catch_trial_share=0,
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=9a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=62aa11bb22cc33dd44ee55ff&SESSION_ID=mpe-session-1"
    )
    batches = []
    for keys in ("12312", "33221"):
        # The study link (then each submit) leads to a fresh batch of the study's items.
        page.wait_for_url(lambda url: re.search(r"/validate/mpe/batch/[0-9a-f-]+/$", url) and url not in batches)
        batches.append(page.url)
        assert page.get_by_role("heading", name=QUESTION).count() == 1
        assert page.locator("fieldset.mpe-item").count() == 5
        for key in keys:
            page.keyboard.press(key)
        page.get_by_role("button", name=re.compile("Submit all 5")).click()
    # After the second batch, the next task is the completion page with the session's own code.
    page.wait_for_selector("#completion-code")
    page.wait_for_url(f"{live_server.url}/validate/mpe/next/")

    session = StudySession.objects.get()
    assert session.tasks_done == 2 and session.completion_code.startswith("MPE-CODE-3")
    assert page.inner_text("#completion-code") == session.completion_code
    assert page.locator(".messages").count() == 0  # no "Saved" above "All done"
    assert ValidationLabel.objects.count() == 10
    assert set(ValidationLabel.objects.values_list("pair__dataset", flat=True)) == {dataset.pk}
