"""A study set up, run and cleaned from the dashboard alone, in one browser: premises
uploaded on the imports page (the real Celery worker imports them), a writing study created with its
pre-launch check passing and previewed, a participant writing through the study link, the writer's pairs retired
and the retirement undone, the pairs marked for validation and a validation study created with its
check passing, a pair sent to adjudication, decided by keyboard and the decision undone, a
snapshot with label rows exported from the snapshots page, and its release made there: Parquet for
the pairs and the labels, and a dataset card, downloaded from the page."""

import re
from pathlib import Path

import pytest

from collection.models import PremiseImport
from corpus.models import Pair
from crowd.models import Study
from modeling.models import Snapshot
from tests.collection.writing_helpers import writing_setup
from tests.conftest import wait_for
from tests.present import present

pytestmark = [pytest.mark.browser, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]
PREMISES = (
    "The old ferry left the harbour at dawn with a dozen passengers aboard.\n"
    "A fisherman mended his nets on the quay while the gulls circled overhead.\n"
    "The harbour master rang the bell twice to warn the boats of the storm.\n"
)
SENTENCES = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def on_the_workers_disk(settings, celery_worker_process):
    if celery_worker_process is not None:
        settings.DATA_DIR = celery_worker_process.data_dir
    return celery_worker_process


def done(model, **lookup):
    def check():
        row = model.objects.filter(**lookup).order_by("-pk").first()
        return row if row is not None and row.status in ("done", "failed") else None

    return check


def new_study(page, url, name, slug, kind, dataset):
    page.goto(f"{url}/dashboard/studies/new/?task_kind={kind}")
    page.fill("#id_name", name)
    page.fill("#id_slug", slug)
    page.select_option("#id_task_kind", kind)
    page.select_option("#id_dataset", str(dataset.pk))
    page.fill("#id_planned_sessions", "2")
    page.fill("#id_tasks_per_batch", "1")
    page.fill("#id_completion_code", f"{slug.upper()}-CODE")
    page.fill("#id_completion_url", "https://app.prolific.com/submissions/complete?cc={code}")
    with page.expect_navigation():
        page.click("#save-study")
    assert page.url.endswith(f"/dashboard/studies/{slug}/"), page.url
    return page.locator('#launch-check [data-level="block"]')


def test_a_study_set_up_run_and_cleaned_from_the_dashboard(
    live_server, page, chromium_browser, make_researcher, on_the_workers_disk, tmp_path
):
    dataset, genre = writing_setup(slug="loop", writings_per_premise=1)
    make_researcher(username="ada", password="research-pass-1")
    url = live_server.url
    page.goto(f"{url}/accounts/login/?next=/dashboard/imports/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/dashboard/imports/$"))

    # 1. Premises uploaded; the Celery worker imports them into train.
    source = tmp_path / "harbour.txt"
    source.write_text(PREMISES)
    page.select_option("#premises-genre", genre.slug)
    page.fill("#premises-dataset", dataset.slug)
    page.select_option("#premises-split", "train")
    page.set_input_files("#premises-file", str(source))
    with page.expect_navigation():
        page.click("#import-premises button[type=submit]")
    run = wait_for(done(PremiseImport, dataset=dataset), timeout=90, message="the premise import")
    assert (run.status, run.kept) == ("done", 3), run.error

    # 2. A writing study whose pre-launch check passes.
    assert new_study(page, url, "Harbour writing", "harbour-writing", "writing", dataset).count() == 0

    # The researcher previews it as a participant: a premise of the upload, nothing saved.
    page.click("#preview-study")
    with page.expect_navigation():
        page.click("form button[type=submit]:has-text('Start the preview')")
    assert "nothing you do here is saved" in page.content()
    # A new study has the lab's information sheet: the preview reads it as a participant would.
    assert page.locator("#information-sheet").count() == 1
    with page.expect_navigation():
        page.click("#consent-agree")
    assert page.locator("#premise").inner_text() in PREMISES
    with page.expect_navigation():
        page.click("button:has-text('End preview')")
    assert not Pair.objects.filter(dataset=dataset).exists()

    # 3. A participant writes through the study link.
    participant = chromium_browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    participant.goto(f"{url}/study/harbour-writing/?PROLIFIC_PID=LOOPWRITER1&STUDY_ID=s&SESSION_ID=loop-1")
    with participant.expect_navigation():
        participant.click("#consent-agree")  # the information sheet comes before the first task
    family = genre.family
    prompts = {
        "entailment": family.entailment_prompt,
        "neutral": family.neutral_prompt,
        "contradiction": family.contradiction_prompt,
    }
    for label, text in SENTENCES.items():
        participant.get_by_label(prompts[label]).fill(text)
    participant.locator("#submit-hypotheses").click()
    participant.locator("#completion-code").wait_for()
    participant.context.close()
    assert Pair.objects.filter(dataset=dataset, author__external_id="LOOPWRITER1").count() == 3

    # 4. The writer's pairs retired in one step, and the retirement undone.
    page.goto(f"{url}/dashboard/pairs/?dataset=loop&writer=LOOPWRITER1")
    page.fill("#bulk-reason", "checking the loop")
    with page.expect_navigation():
        page.click("#bulk-retire")
    assert Pair.objects.filter(dataset=dataset, adjudicated_label="-").count() == 3
    with page.expect_navigation():
        page.click("#bulk-history button[data-undo]")
    assert not Pair.objects.filter(dataset=dataset, adjudicated_label="-").exists()

    # 5. Every train pair marked for validation; a validation study's check passes.
    page.goto(f"{url}/dashboard/imports/")
    page.select_option("#mark-dataset", dataset.slug)
    page.fill("#mark-share", "100")
    with page.expect_navigation():
        page.click("#mark-validation-form button[type=submit]")
    assert Pair.objects.filter(dataset=dataset, needs_validation=True).count() == 3
    assert new_study(page, url, "Harbour labels", "harbour-labels", "validation", dataset).count() == 0
    assert Study.objects.filter(dataset=dataset).count() == 2

    # 6. One pair sent to adjudication, decided by keyboard, the decision undone.
    first = present(Pair.objects.filter(dataset=dataset).order_by("pk").first())
    page.goto(f"{url}/dashboard/pairs/?dataset=loop&text={first.pair_id}")
    page.fill("#bulk-reason", "a second look")
    with page.expect_navigation():
        page.click("#bulk-adjudicate")
    page.goto(f"{url}/dashboard/adjudication/?dataset=loop&queue=sent")
    with page.expect_navigation():
        page.keyboard.press("3")  # contradiction
    assert Pair.objects.get(pk=first.pk).gold_label == "contradiction"
    with page.expect_navigation():
        page.keyboard.press("u")
    assert Pair.objects.get(pk=first.pk).adjudicated_label == ""

    # 7. A snapshot with label rows, exported by the worker.
    page.goto(f"{url}/dashboard/snapshots/")
    page.check("#snapshot-form input[name=datasets][value=loop]")
    page.check("#snapshot-label-rows")
    with page.expect_navigation():
        page.click("#snapshot-form button[type=submit]")
    snapshot = wait_for(done(Snapshot), timeout=90, message="the snapshot export")
    assert snapshot.status == "done" and snapshot.row_count == 3
    assert {file.name for file in snapshot.files.all()} >= {"train.jsonl", "labels.jsonl"}

    # 8. Its release, made and downloaded on the same page: Parquet for the pairs and the label rows
    # (the card's `labels` configuration), and the dataset card.
    page.goto(f"{url}/dashboard/snapshots/")
    page.select_option("#release-form select[name=snapshot]", str(snapshot.pk))
    page.fill("#release-form input[name=name]", "loop-release")
    with page.expect_navigation():
        page.click("#release-form button[type=submit]")
    release = page.locator("#table-releases > tbody > tr", has_text="loop-release")
    files = release.locator("a").all_inner_texts()
    assert "README.md" in files, files
    assert any(name.startswith("labels/") and name.endswith(".parquet") for name in files), files
    assert any(name.startswith("pairs/") and name.endswith(".parquet") for name in files), files
    with page.expect_download() as download:
        release.locator("a", has_text="README.md").click()
    card = Path(download.value.path()).read_text()
    assert "config_name: labels" in card and "config_name: pairs" in card
