"""The workers page's table, the bonus page's pay form and the approval list, sized by what they show.

The workers table is kept as rows (`dashboard.worker_table`) and sorted and paged in SQL; the pay
form's unpaid bonuses are read as plain rows (`quality.bonus_lines`), never as models; the approval
list's flags are the maintained worker-flag rows (`quality.flag_rows.approval_marks`). Each reads as
many statements for 100 workers (or bonuses) as for 10."""

import csv
from decimal import Decimal
from io import StringIO

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.scope import Scope
from crowd.models import StudySession
from dashboard import worker_table
from dashboard.models import WorkerTableRow
from dashboard.queries import workers as worker_queries
from dashboard.views import quality as quality_view
from dashboard.views import workers as workers_view
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.conftest import rows_for_the_module

from . import cost_factories, factories

pytestmark = pytest.mark.django_db


def crowd_of(n, tag="t"):
    """n workers, each the author of one pair its next three neighbours label; a timed writing claim
    for every other writer; names of mixed case and one beyond ASCII, so the order is put to the test."""
    ds = factories.dataset(f"table-{tag}")
    fiction = factories.genre("fiction")
    names = [f"{'W' if index % 3 == 0 else 'w'}orker-{tag}{index:03d}" for index in range(n - 1)] + [f"Émile-{tag}"]
    crowd = [factories.worker(name) for name in names]
    for index, author in enumerate(crowd):
        premise = factories.premise(ds, fiction, "dev", f"Premise {tag}{index} of the table.")
        labels = [factories.E, factories.E, factories.N if index % 4 else factories.E, factories.C]
        validators = [crowd[(index + step) % n] for step in (1, 2, 3)]
        factories.pair(ds, premise, f"Hypothesis {index}.", labels, author=author, validators=validators)
        if index % 2:
            factories.submitted_claim(author, premise, 10 + index)
    return ds, crowd


def statements(client, url):
    cache.clear()  # cold: the figure cache emptied
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return [query["sql"] for query in captured.captured_queries]


def test_the_workers_page_reads_as_many_statements_for_100_workers_as_for_10(client, researcher, settings):
    client.force_login(researcher)
    settings.DASHBOARD_CACHE_SECONDS = 600
    url = reverse("dashboard:workers")
    counts = []
    for n, tag in ((10, "a"), (90, "b")):  # 10 workers, then 100
        crowd_of(n, tag)
        client.get(url)  # the table computed once for the new figures
        counts.append(len(statements(client, url)))
    assert counts[0] == counts[1], counts


def test_a_cold_workers_page_reads_its_page_of_the_kept_table_not_every_worker(
    client, researcher, settings, monkeypatch
):
    """Once computed, a cold page (figure cache emptied) reads the table's count and the rows it
    shows (LIMIT): no worker tally, no writing claim, no row per worker built in Python."""
    monkeypatch.setattr(workers_view, "WORKERS_PER_PAGE", 7)
    settings.DASHBOARD_CACHE_SECONDS = 600
    client.force_login(researcher)
    crowd_of(30)
    url = reverse("dashboard:workers")
    client.get(url)
    read = statements(client, url)
    assert not [sql for sql in read if "workerlabeltally" in sql or "workertally" in sql], read
    assert not [sql for sql in read if "collection_writingclaim" in sql], read
    table = [sql for sql in read if WorkerTableRow._meta.db_table in sql]
    assert any("LIMIT 7" in sql for sql in table), table
    assert len(client.get(url).context["page"].object_list) == 7


def python_order(rows, key, descending):
    """The order the page always had: by the column (names case-folded), then by the name, both
    reversed when descending; empty cells last."""
    present = [row for row in rows if row[key] is not None]
    missing = [row for row in rows if row[key] is None]
    present.sort(
        key=lambda row: (row[key].lower(), row["worker"]) if isinstance(row[key], str) else (row[key], row["worker"]),
        reverse=descending,
    )
    return [row["worker"] for row in present], sorted(row["worker"] for row in missing)


@pytest.fixture(scope="class")
def crowd(django_db_setup, django_db_blocker, tmp_path_factory):
    """One crowd for the class below: each case reads it in a savepoint (`rows_for_the_module`),
    and it is rolled back when the class ends, so the tests after it never see it."""
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("worker-order")):
        ds, _ = crowd_of(24)
        yield ds


class TestSqlOrder:
    """Every column's sort over the one crowd."""

    @pytest.mark.parametrize("key", list(worker_queries.WORKER_COLUMNS))
    def test_the_sql_order_is_the_order_of_the_figures_computed_in_python(self, crowd, key):
        figures = worker_table.worker_rows(Scope.of_dataset(crowd))
        for descending in (False, True):
            table, sort = worker_queries.workers_overview(
                Scope.of_dataset(crowd), sort=("-" if descending else "") + key
            )
            assert sort == ("-" if descending else "") + key
            shown = list(table)
            assert {row["id"]: row for row in shown} == {row["id"]: row for row in figures}
            present, missing = python_order(figures, key, descending)
            assert [row["worker"] for row in shown][: len(present)] == present
            assert sorted(row["worker"] for row in shown[len(present) :]) == missing


def test_the_kept_table_follows_a_new_label_after_the_interval(settings):
    settings.DASHBOARD_CACHE_SECONDS = 0  # every read finds the rows out of date (a small corpus: recomputed)
    ds, crowd = crowd_of(10)
    before = {row["id"]: row["labels_given"] for row in worker_queries.workers_overview(Scope.of_dataset(ds))[0]}
    premise = factories.premise(ds, factories.genre("fiction"), "dev", "One premise more.")
    factories.pair(ds, premise, "One more.", [factories.E, factories.N], author=crowd[1], validators=[crowd[0]])
    after = {row["id"]: row["labels_given"] for row in worker_queries.workers_overview(Scope.of_dataset(ds))[0]}
    assert after[crowd[0].pk] == before[crowd[0].pk] + 1


def unpaid_bonuses(n):
    """The cost corpus with n unpaid earned bonuses of one validation session more."""
    _, _, validation, _ = cost_factories.build(f"bonus-rows-{n}", prefix=f"n{n}-")
    session = StudySession.objects.filter(study=validation).order_by("pk").first()
    assert session is not None
    BonusEntry.objects.bulk_create(
        BonusEntry(
            kind=BonusKind.EARNED,
            worker_id=session.worker_id,
            study_id=session.study_id,
            study_session=session,
            amount=Decimal("0.10"),
            currency="GBP",
            cause=BonusCause.OTHER,
            reason=f"a discretionary bonus {index}",
        )
        for index in range(n)
    )
    return session.study


def test_the_bonus_page_builds_no_bonus_entry_and_writes_one_page_of_its_unpaid_bonuses(client, researcher):
    """100 unpaid bonuses build no model, and the page writes one page of them: the pay form names
    all of them by their fingerprint, not one input each."""
    client.force_login(researcher)
    study = unpaid_bonuses(100)
    built = []

    def count(sender, instance, **kwargs):
        built.append(instance)

    post_init.connect(count, sender=BonusEntry)
    try:
        response = client.get(reverse("dashboard:bonuses"), {"study": study.slug})
    finally:
        post_init.disconnect(count, sender=BonusEntry)
    assert response.status_code == 200
    listed = response.context["listed"]
    assert listed.count >= 100
    assert built == []
    html = response.content.decode()
    assert html.count("data-bonus=") == quality_view.BONUS_ROWS_PER_PAGE
    assert 'name="bonus"' not in html
    assert f'<input type="hidden" name="listed" value="{listed.fingerprint}">' in html
    assert f"Mark these {listed.count} bonus(es) as paid" in html


def test_the_bonus_page_reads_as_many_statements_for_100_unpaid_bonuses_as_for_10(client, researcher, settings):
    client.force_login(researcher)
    settings.DASHBOARD_CACHE_SECONDS = 600
    counts = []
    for n in (10, 100):
        study = unpaid_bonuses(n)
        url = f"{reverse('dashboard:bonuses')}?study={study.slug}"
        client.get(url)
        counts.append(len(statements(client, url)))
    assert counts[0] == counts[1], counts


def approval_csv(client, study):
    response = client.post(
        reverse("admin:crowd_study_changelist"), {"action": "export_completions", "_selected_action": [study.pk]}
    )
    assert response.status_code == 200
    return list(csv.DictReader(StringIO(response.content.decode())))


def test_the_approval_list_reads_the_kept_flag_rows_not_every_workers_figures(admin_client, settings):
    """Once every dataset's worker-flag rows are computed, the approval CSV reads its workers' rows:
    no statement of it reads the workers' tallies or labels (`worker_quality` over every worker did)."""
    settings.DASHBOARD_CACHE_SECONDS = 600
    study = unpaid_bonuses(3)
    StudySession.objects.filter(study=study).update(completed_at=study.created_at)
    first = approval_csv(admin_client, study)  # the flag rows computed once
    with CaptureQueriesContext(connection) as captured:
        again = approval_csv(admin_client, study)
    read = [query["sql"] for query in captured.captured_queries]
    assert again == first and again
    figures = ("corpus_workersecondstally", "corpus_workerlabeltally", "validation_validationlabel")
    assert not [sql for sql in read if any(table in sql for table in figures)], read
    assert any("quality_workerflagrow" in sql for sql in read), read


def test_the_give_forms_options_name_each_session_as_they_did(client, researcher):
    """The discretionary bonus form's options, their text now written in Python: the participant,
    the session id or "(none)", the tasks ("1 task", "2 tasks") and "complete" when it is."""
    client.force_login(researcher)
    study = unpaid_bonuses(2)
    first = StudySession.objects.filter(study=study).order_by("pk").first()
    assert first is not None
    StudySession.objects.filter(pk=first.pk).update(external_session_id="", tasks_done=1, completed_at=study.created_at)
    html = client.get(reverse("dashboard:bonuses"), {"study": study.slug}).content.decode()
    sessions = StudySession.objects.filter(study=study, is_preview=False).select_related("worker__user")
    assert sessions.count() > 1
    for session in sessions:
        tasks = f"{session.tasks_done} task{'' if session.tasks_done == 1 else 's'}"
        done = " · complete" if session.completed_at else ""
        text = f"{session.worker} · session {session.external_session_id or '(none)'} · {tasks}{done}"
        assert f'<option value="{session.pk}">{text}</option>' in html, text
