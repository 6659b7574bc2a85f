"""The production-mode browser pass: the pages that depend on their scripts, in headless
Chromium, against gunicorn started the way it is deployed (gunicorn.conf.py, annotation_site.settings
with DEBUG off and a real SECRET_KEY, static files from `collectstatic` served by WhiteNoise) on the
test database, with Redis and the suite's Celery worker running the tasks.

Every response and console message of every page is recorded: no response of 400 or more (an
asset's 404 was the shipped deployment's state: no page had its scripts), no console error, no CSP
violation, and every /static/ file under its hashed name with a year's Cache-Control.

With NLI_PRODUCTION_PASS_REPORT=<path>, the module writes what it saw (pages, assets, statuses,
console errors, wall time) to that JSON file: the figures of the closing note.
"""

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from authorship.models import WritingEvidence
from base.permissions import ensure_researcher_group
from collection.models import WritingClaim
from corpus.models import Adjudication, Dataset, Label, Pair, Split, ValidationLabel
from crowd.models import Study, StudySession, TaskKind
from modeling.models import Snapshot
from teams.models import Role, default_team
from teams.services import join
from tests import factories
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.conftest import celery_subprocess_env, needs_broker
from tests.dashboard import cost_factories
from tests.dashboard import factories as dashboard_factories
from tests.dashboard.test_narrow_screen import PAGES
from tests.validation.validation_factories import make_dataset, make_pair

from .conftest import Gunicorn, gunicorn_server, production_environment

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

HASHED_STATIC = re.compile(r"^/static/.+\.[0-9a-f]{12}\.(js|css|svg)$")
A_YEAR = 365 * 24 * 3600
PROLIFIC = "PROLIFIC_PID={pid}&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID={session}"
# Chromium reports a CSP violation as a console error; this makes sure of it whatever the wording.
REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", function (event) {
  console.error("CSP violation: " + event.violatedDirective + " " + event.blockedURI);
});
"""

_seen: dict[str, Any] = {"pages": {}}


@pytest.fixture(scope="module")
def production_site(
    celery_worker_process, collected_static: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gunicorn]:
    """One gunicorn for the module, on the test database (as the Celery worker gets it), with the
    broker and cache of this pass; DATA_DIR is the Celery worker's, so both read the same files."""
    if celery_worker_process is None:
        needs_broker()
    started = time.monotonic()
    folder = tmp_path_factory.mktemp("production-site")
    database = celery_subprocess_env()
    env = production_environment(
        collected_static,
        DATABASE_URL=database["DATABASE_URL"],
        DATABASE_CONN_MAX_AGE="0",  # the suite flushes the tables between tests
        DATA_DIR=str(celery_worker_process.data_dir),
        # One process of gunicorn.conf.py's threads: the pass drives one page at a time.
        GUNICORN_WORKERS="1",
        GUNICORN_ACCESSLOG=str(folder / "access.log"),
    )
    with gunicorn_server(env, folder / "gunicorn.log") as server:
        yield server
    report = os.environ.get("NLI_PRODUCTION_PASS_REPORT")
    if report:
        _seen["wall_seconds_from_server_start"] = round(time.monotonic() - started, 1)
        Path(report).write_text(json.dumps(_seen, indent=2) + "\n")


@pytest.fixture(autouse=True)
def _real_password_hashing(settings):
    # The server checks passwords with the production hashers; the suite's fast MD5 is not among them.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]


@dataclass
class Recorder:
    """Every response, console message and page error of one browser context."""

    site: str
    responses: list[dict[str, Any]] = field(default_factory=list)
    console: list[dict[str, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def on_response(self, response) -> None:
        headers = response.headers
        self.responses.append(
            {
                "url": response.url,
                "path": re.sub(r"^https?://[^/]+", "", response.url).split("?")[0],
                "status": response.status,
                "type": response.request.resource_type,
                "cache_control": headers.get("cache-control", ""),
                "content_encoding": headers.get("content-encoding", ""),
            }
        )

    def on_console(self, message) -> None:
        self.console.append({"type": message.type, "text": message.text})

    def on_page_error(self, error) -> None:
        self.console.append({"type": "pageerror", "text": str(error)})

    def on_request_failed(self, request) -> None:
        # A navigation that the next one replaced is not a failure of the site.
        if request.failure != "net::ERR_ABORTED":
            self.failed.append(f"{request.url}: {request.failure}")

    def statics(self) -> list[dict[str, Any]]:
        return [r for r in self.responses if r["path"].startswith("/static/")]

    def assert_clean(self, name: str, expected_files: set[str]) -> None:
        """No 4xx/5xx, no console error (CSP violations included), no failed request; every static
        file hashed and cached for a year; the page's own scripts and styles among them."""
        bad = [f"{r['status']} {r['path']}" for r in self.responses if r["status"] >= 400]
        assert bad == [], f"{name}: responses of 400 or more: {bad}"
        errors = [m for m in self.console if m["type"] in ("error", "pageerror")]
        assert errors == [], f"{name}: console errors: {errors}"
        assert self.failed == [], f"{name}: failed requests: {self.failed}"
        statics = self.statics()
        for response in statics:
            assert HASHED_STATIC.match(response["path"]), f"{name}: {response['path']} is not a hashed name"
            age = re.search(r"max-age=(\d+)", response["cache_control"])
            assert age and int(age.group(1)) >= A_YEAR, f"{name}: {response['path']}: {response['cache_control']!r}"
        loaded = {re.sub(r"\.[0-9a-f]{12}(\.\w+)$", r"\1", r["path"][len("/static/") :]) for r in statics}
        assert expected_files <= loaded, f"{name}: {sorted(expected_files - loaded)} never loaded"
        _seen["pages"][name] = {
            "responses": len(self.responses),
            "statuses": sorted({r["status"] for r in self.responses}),
            "assets": len(statics),
            "asset_files": sorted(loaded),
            "asset_statuses": sorted({r["status"] for r in statics}),
            "gzip_assets": sum(1 for r in statics if r["content_encoding"] == "gzip"),
            "console_errors": len(errors),
            "console_messages": len(self.console),
        }


@pytest.fixture
def browser_page(chromium_browser, production_site: Gunicorn):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    recorder = Recorder(production_site.url)
    context.on("response", recorder.on_response)
    context.on("console", recorder.on_console)
    context.on("requestfailed", recorder.on_request_failed)
    page = context.new_page()
    page.on("pageerror", recorder.on_page_error)
    page.set_default_timeout(20_000)
    page.recorder = recorder
    page.site = production_site.url
    yield page
    context.close()


def log_in(page, username: str, password: str, next_path: str) -> None:
    page.goto(f"{page.site}/accounts/login/?next={next_path.replace('?', '%3F').replace('&', '%26')}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")


def test_a_writer_types_with_evidence_recorded_and_takes_more_time_on_the_hold(browser_page):
    page = browser_page
    dataset, genre = writing_setup(slug="production-writing")
    add_premises(dataset, genre, 3)
    study = Study.objects.create(
        slug="production-writing", name="Write", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="PW-1"
    )
    page.goto(f"{page.site}/study/{study.slug}/?" + PROLIFIC.format(pid="7a1b2c3d4e5f6a7b8c9d0e1f", session="pw-1"))
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    task = page.url
    token = task.rstrip("/").rsplit("/", 1)[1]
    # hold.js counts the hold down; near its end it offers "More time", which extends it.
    assert re.fullmatch(r"(29|30) min \d\d s", page.locator("#expiry [data-hold-countdown]").inner_text())
    assert not page.locator("#hold-warning").is_visible()
    WritingClaim.objects.filter(token=token).update(expires_at=timezone.now() + timedelta(minutes=2))
    page.reload()
    page.locator("#hold-warning").wait_for(state="visible")
    page.click("#hold-more-time")
    page.wait_for_url(task)
    assert "more time" in page.locator(".messages").inner_text()
    assert WritingClaim.objects.get(token=token).expires_at - timezone.now() > timedelta(minutes=29)

    sentences = {
        "entailment": "A boat left the harbour.",
        "neutral": "The boat carried nets.",
        "contradiction": "The boat never moved.",
    }
    for name, text in sentences.items():
        page.locator(f"#id_{name}").press_sequentially(text, delay=40)
    page.click("#submit-hypotheses")
    page.wait_for_selector("#completion-code")
    assert page.inner_text("#completion-code") == StudySession.objects.get().completion_code
    # typing_evidence.js ran and sent its record: each sentence has evidence, keystroke by keystroke.
    for name, text in sentences.items():
        evidence = WritingEvidence.objects.get(pair__hypothesis=text)
        assert evidence.has_evidence, f"{name}: no evidence, so typing_evidence.js did not run"
        assert evidence.keystrokes >= len(text) and "pasted" not in evidence.flags
    page.recorder.assert_clean(
        "writing (hold, More time, typing evidence)",
        {"css/site.css", "css/collection.css", "js/hold.js", "js/typing_evidence.js", "js/char_counter.js"},
    )


def test_a_validator_labels_a_batch_by_keys_under_a_hold(browser_page):
    page = browser_page
    dataset = make_dataset("production-validation")
    pairs = [make_pair(dataset, label=Label.NEUTRAL) for _ in range(5)]
    study = Study.objects.create(
        slug="production-validation",
        name="Validate",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="PV-1",
    )
    page.goto(f"{page.site}/study/{study.slug}/?" + PROLIFIC.format(pid="8b1b2c3d4e5f6a7b8c9d0e1f", session="pv-1"))
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    assert re.fullmatch(r"\d+ min \d\d s", page.locator("[data-hold-countdown]").first.inner_text())
    fieldsets = page.locator("fieldset.validation-pair")
    assert fieldsets.count() == 5
    for index, key in enumerate("13231"):
        page.keyboard.press(key)  # validation.js: the key answers the pair in focus and moves on
        assert fieldsets.nth(index).locator(f'input[data-key="{key}"]').is_checked()
    assert page.locator("#answered-count").inner_text() == "5 of 5 answered"
    page.keyboard.press("Enter")
    page.wait_for_selector("#completion-code")
    assert ValidationLabel.objects.filter(pair__in=pairs, position=2).count() == 5
    page.recorder.assert_clean(
        "validation by keys", {"css/site.css", "css/validation.css", "js/validation.js", "js/hold.js"}
    )


def test_a_researcher_adjudicates_by_key_and_makes_a_snapshot_from_the_dashboard(browser_page, make_researcher):
    page = browser_page
    dataset = factories.dataset("production-adjudication")
    E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
    pair = factories.pair(dataset, factories.premise(dataset, split=Split.DEV), [E, E, N, N, C])
    make_researcher(username="ada", password="research-pass-1")
    queue = f"/dashboard/adjudication/?dataset={dataset.slug}&queue=no_gold"
    log_in(page, "ada", "research-pass-1", queue)
    page.wait_for_url(re.compile(r".*/dashboard/adjudication/\?"))
    assert page.evaluate("document.activeElement.dataset.pair") == str(pair.pk)  # adjudication.js focused it
    with page.expect_navigation():
        page.keyboard.press("2")
    assert Pair.objects.get(pk=pair.pk).gold_label == N
    assert Adjudication.objects.filter(pair=pair).count() == 1

    # The snapshot form: dashboard.js guards the button, then polls the row until the worker is done.
    page.goto(f"{page.site}/dashboard/snapshots/")
    page.check(f'#snapshot-form input[name=datasets][value="{dataset.slug}"]')
    page.click("#snapshot-form button[type=submit]")
    page.locator("#table-snapshots tr[data-status]").first.wait_for()
    snapshot = Snapshot.objects.latest("pk")
    page.locator(f'#snapshot-{snapshot.pk}[data-status="done"]').wait_for(timeout=90_000)
    snapshot.refresh_from_db()
    assert snapshot.status == "done" and snapshot.row_count == 1
    assert page.locator(f"#snapshot-{snapshot.pk} [data-field=hash]").inner_text() == snapshot.content_hash
    page.recorder.assert_clean(
        "adjudication by key, snapshot form",
        {"css/site.css", "css/dashboard.css", "js/adjudication.js", "js/dashboard.js"},
    )


def test_every_dashboard_page_answers_cleanly_for_a_superuser_and_a_team_owner(browser_page, make_researcher):
    """Each page a researcher opens from the dashboard's menu, with rows in its tables, as deployed:
    no response of 400 or more, no console error and its styles under their hashed names; once for a
    superuser and once for a team's owner (whose readers are scoped to the team)."""
    page = browser_page
    dashboard_factories.worker_corpus()
    dashboard_factories.corpus()
    dataset, _writing, validation, _pairs = cost_factories.build("every-page", prefix="every-")
    team = default_team()
    Dataset.objects.filter(pk=dataset.pk).update(team=team)
    Study.objects.filter(pk=validation.pk).update(team=team)
    make_researcher(username="ada", password="research-pass-1")
    owner = User.objects.create_user("olu", password="research-pass-1", is_staff=True)
    owner.groups.add(ensure_researcher_group())
    join(owner, team, Role.OWNER)

    paths = [reverse(f"dashboard:{name}") for name in PAGES]
    paths += [reverse("dashboard:study", args=[validation.slug]), reverse("dashboard:teams")]
    for username in ("ada", "olu"):
        page.context.clear_cookies()
        log_in(page, username, "research-pass-1", "/dashboard/")
        page.wait_for_url(re.compile(r".*/dashboard/$"))
        for path in paths:
            for recorded in (page.recorder.responses, page.recorder.console, page.recorder.failed):
                recorded.clear()
            response = page.goto(f"{page.site}{path}")
            assert response is not None and response.status == 200, f"{username} {path}: {response and response.status}"
            page.recorder.assert_clean(f"{username} {path}", {"css/site.css", "css/dashboard.css"})
