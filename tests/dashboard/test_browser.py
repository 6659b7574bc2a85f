"""A researcher in Chromium: logs in, reads SNLI dev's figures, makes a snapshot, trains, watches it finish.

Screenshots of every page go to $DASHBOARD_SHOTS (default /tmp/dashboard-shots/).
"""

import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from corpus.agreement import agreement_stats
from corpus.models import Pair
from corpus.scope import Scope
from modeling.models import TrainingRun
from tests.conftest import shared_file

from . import factories

SHOTS = Path(os.environ.get("DASHBOARD_SHOTS", "/tmp/dashboard-shots"))


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def tiny_train_set():
    """Three train pairs (2 entailment, 1 neutral) beside SNLI dev, so the majority model predicts entailment."""
    dataset = factories.dataset("tiny-train")
    captions = factories.genre("captions")
    premise = factories.premise(dataset, captions, "train", "A dog runs across a grassy field.")
    for hypothesis, label in (
        ("An animal runs.", "entailment"),
        ("A dog moves.", "entailment"),
        ("The dog chases a ball.", "neutral"),
    ):
        factories.pair(dataset, premise, hypothesis, [label])
    return dataset


@pytest.mark.browser
@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_researcher_reads_snli_figures_snapshots_and_trains(celery_worker_process, live_server, page, make_researcher):
    # --no-tag: without a broker the command would tag the 10,000 pairs inline (spaCy, seconds) and no
    # page read here shows tags; the inline tagging has its own test (tests/artifacts/test_tagging_jobs.py).
    call_command(
        "import_pairs", str(shared_file("snli_1.0_dev.jsonl")), "--dataset", "snli", "--no-progress", "--no-tag"
    )
    tiny_train_set()
    make_researcher(username="ada", password="research-pass-1")
    stats = agreement_stats(Scope.named("snli"))

    page.goto(f"{live_server.url}/dashboard/")
    assert "/accounts/login/" in page.url  # anonymous: to the login page first
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/$"))
    assert page.text_content("#stat-pairs") == f"{Pair.objects.count():,}"
    assert page.locator("#figure-hourly img.plot").evaluate("image => image.complete && image.naturalWidth > 0")
    shot(page, "1-collection")

    page.select_option("#scope-dataset", "snli")
    page.click(".scope button")
    page.wait_for_url(re.compile(r".*dataset=snli.*"))
    assert page.text_content("#stat-pairs") == "10,000"

    page.click(".dash-nav >> text=Validation")
    page.wait_for_selector("#table-agreement")
    assert page.url.endswith("/dashboard/validation/?dataset=snli")  # the sub-nav keeps the choice
    for key in (
        "unanimous",
        "individual_eq_gold",
        "individual_eq_author",
        "gold_eq_author",
        "gold_ne_author",
        "no_gold",
    ):
        assert page.text_content(f"#stat-{key}") == f"{100 * stats[key]:.1f}%", key
    for label, kappa in stats["fleiss_kappa"].items():
        assert page.text_content(f"#stat-kappa-{label}") == f"{kappa:.3f}"
    # The README's SNLI dev figures: 3329 entailment, 158 without gold (1.55% of the 9986 pairs with
    # five labels have no consensus; the rest of the 158 have four labels), 9986 pairs with 5 labels.
    assert page.text_content("#stat-gold-entailment") == "3,329"
    no_consensus = round(stats["no_gold"] * stats["five_label_pairs"])
    assert no_consensus == 155
    assert page.text_content("#stat-gold-none") == str(no_consensus)
    assert page.text_content("#stat-gold-unvalidated") == str(158 - no_consensus)
    assert page.text_content("#stat-labels-5") == "9,986"
    shot(page, "2-validation")

    page.goto(f"{live_server.url}/dashboard/corpus/?dataset=snli")
    assert page.locator("#figure-lengths img.plot").evaluate("image => image.complete && image.naturalWidth > 0")
    shot(page, "3-corpus")
    factories.worker_corpus()
    page.goto(f"{live_server.url}/dashboard/workers/?sort=-gold_agreement")
    assert page.locator("#table-workers tbody tr").count() == 5
    shot(page, "4-workers")
    page.goto(f"{live_server.url}/admin/corpus/pair/?gold_label=-")
    shot(page, "8-admin-pairs")
    page.click("#result_list tbody tr th a >> nth=0")
    page.wait_for_selector("#labels-group")
    shot(page, "9-admin-pair")

    page.goto(f"{live_server.url}/dashboard/snapshots/")
    page.check("input[name=datasets][value=snli]")
    page.check("input[name=datasets][value=tiny-train]")
    page.click("#snapshot-form button[type=submit]")
    # Pending or running rows are polled until done; the files appear in place.
    row = page.locator("#table-snapshots tbody tr").first
    page.wait_for_selector("#table-snapshots tbody tr[data-status=done]", timeout=120_000)
    # One genre (captions), none held out: SNLI's layout, dev.jsonl rather than dev_matched/mismatched.
    assert "train.jsonl" in row.text_content() and "dev.jsonl" in row.text_content()
    shot(page, "5-snapshots")

    page.goto(f"{live_server.url}/dashboard/training/")
    page.select_option("#run-snapshot", index=1)
    page.select_option("#run-model", "majority")
    page.click("#training-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/training/\d+/$"))
    # The page polls while the run is queued or running and reloads with the results once done.
    page.wait_for_selector("#table-splits", timeout=180_000)
    run = TrainingRun.objects.get()
    assert run.status == "done"
    snli = Pair.objects.filter(dataset__slug="snli").exclude(gold_label="-")
    expected = snli.filter(gold_label="entailment").count() / snli.count()
    assert run.results["accuracy"]["dev"] == pytest.approx(expected, abs=1e-6)
    assert page.text_content("[data-stat=accuracy-dev]") == f"{100 * expected:.1f}%"
    shot(page, "6-training-run")
    page.goto(f"{live_server.url}/dashboard/training/")
    assert page.locator(f"#run-{run.pk}[data-status=done]").count() == 1
    shot(page, "7-training")
