"""The researcher pages a lab opens most while a study runs (adjudication with each
of its queues, workers, costs, bonuses) read as many statements with three times the studies,
workers, pairs, catch pools and bonuses as with one: nothing is read once per study, worker or pair.

The crowd is `cost_factories.build` (two studies, five workers, six pairs, claims, bonuses), with a
catch trial marked in each dataset and catch trials served by each validation study, built once and
then twice more in datasets of their own."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from crowd.models import Study
from quality.models import ReferenceLabel
from validation import adjudication

from . import cost_factories

pytestmark = pytest.mark.django_db


def crowd(copy):
    """One copy of the crowd: its own dataset, studies and workers; its validation study serves
    catch trials from a marked pair of its dataset."""
    prefix = f"c{copy}-"
    ds, _writing, validation, pairs = cost_factories.build(f"crowd-{copy}", prefix=prefix)
    ReferenceLabel.objects.create(pair=pairs["A"], label=cost_factories.E, is_catch_trial=True)
    Study.objects.filter(pk=validation.pk).update(catch_trial_share=0.2, is_active=True)
    return ds


def statements(client, url):
    cache.clear()  # cold: every figure read afresh
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def pages():
    yield reverse("dashboard:workers")
    yield reverse("dashboard:costs")
    yield reverse("dashboard:bonuses")
    for queue in adjudication.FILTERS:
        yield f"{reverse('dashboard:adjudication')}?queue={queue.slug}"


def test_the_pages_read_as_many_statements_for_three_times_the_crowd(client, researcher, settings):
    client.force_login(researcher)
    crowd(1)
    # The maintained worker-flag rows (quality.flag_rows) computed by a first load, then read as kept.
    settings.DASHBOARD_CACHE_SECONDS = 600
    for url in pages():
        client.get(url)
    small = {url: statements(client, url) for url in pages()}
    crowd(2)
    crowd(3)
    large = {url: statements(client, url) for url in pages()}
    grew = {url: (small[url], large[url]) for url in small if small[url] != large[url]}
    assert not grew, grew
    # The adjudication page counts its seven queues in one statement and reads the flagged workers
    # once (it read them for the count and again for the list: 30 and 36 statements before).
    adjudication_pages = [url for url in large if "adjudication" in url]
    # 22: the latest decisions (undo), whether the scope has
    # an MPE dataset, the user's teams, and the model's hints; none grows with the crowd.
    assert max(large[url] for url in adjudication_pages) <= 24, large
    # 26: the bonus page's catch pools read their datasets' catch premises in a statement of their
    # own (quality.catch_trials.catch_premises), whatever the crowd; 27: the discretionary bonus
    # form's list of the study's participants, one statement.
    assert max(large.values()) <= 27, large


def test_the_worker_quality_table_is_paged(client, researcher, monkeypatch, settings):
    from dashboard.views import workers as workers_view

    monkeypatch.setattr(workers_view, "WORKERS_PER_PAGE", 2)
    # Each request computes the rows it pages: a page may show rows kept from the last few
    # seconds, and the session's Celery worker can commit a refresh an earlier test queued (of an
    # emptied database) just as this test starts.
    settings.DASHBOARD_CACHE_SECONDS = 0
    client.force_login(researcher)
    crowd(1)
    url = reverse("dashboard:workers")
    first = client.get(url).context["quality"]
    second = client.get(f"{url}?qpage=2").context["quality"]
    assert len(first.object_list) == len(second.object_list) == 2
    assert first.paginator.count == 5  # the four validators and the writer
    assert {row.worker.pk for row in first}.isdisjoint({row.worker.pk for row in second})
    assert "qpage=2" in client.get(url).content.decode()


def test_the_workers_page_sums_the_worker_tally_and_groups_no_label_or_pair(client, researcher):
    """The worker figures are the maintained tally's (corpus.worker_tally): no statement of
    the page reads the label table, or groups the pairs by worker, however large the crowd."""
    client.force_login(researcher)
    for copy in (1, 2, 3):
        crowd(copy)
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dashboard:workers"))
    assert response.status_code == 200
    statements = [query["sql"] for query in captured.captured_queries]
    assert not [sql for sql in statements if "validation_validationlabel" in sql], statements
    assert not [sql for sql in statements if "GROUP BY" in sql and 'FROM "collection_pair"' in sql], statements
    assert any("corpus_workerlabeltally" in sql for sql in statements)


def test_the_adjudication_queue_and_the_bonus_lists_are_paged(client, researcher, monkeypatch):
    """The lists that grow with the crowd are shown a page at a time; the pay form names every
    unpaid bonus by their fingerprint, so "mark paid" pays exactly what the market files pay."""
    from decimal import Decimal

    from corpus.models import Pair
    from dashboard.views import adjudication as adjudication_view
    from dashboard.views import quality as quality_view
    from quality.models import BonusCause, BonusEntry, BonusKind

    monkeypatch.setattr(adjudication_view, "QUEUE_SHOWN", 2)
    monkeypatch.setattr(quality_view, "BONUS_ROWS_PER_PAGE", 2)
    client.force_login(researcher)
    crowd(1)
    sent, kept, _ = adjudication.send_to_adjudication(Pair.objects.all(), researcher=researcher, reason="a look")
    assert (sent, kept) == (6, 0), (sent, kept)
    url = f"{reverse('dashboard:adjudication')}?queue=sent"
    pages = [client.get(f"{url}&page={page}").context for page in (1, 2, 3, 4)]
    shown = [[pair.pk for pair in context["pairs"]] for context in pages]
    assert [len(pks) for pks in shown] == [2, 2, 2, 0]  # six pairs sent, two a page
    assert sorted(pk for pks in shown for pk in pks) == sorted(Pair.objects.values_list("pk", flat=True))
    assert pages[0]["next_page"] == 2 and pages[2]["next_page"] is None

    earned = BonusEntry.objects.get(kind=BonusKind.EARNED, payment__isnull=True)
    for _ in range(3):  # four unpaid bonuses of one worker's session in all
        BonusEntry.objects.create(
            kind=BonusKind.EARNED,
            worker=earned.worker,
            study=earned.study,
            study_session=earned.study_session,
            amount=Decimal("0.50"),
            currency=earned.currency,
            cause=BonusCause.OTHER,
            reason="a discretionary bonus",
        )
    study = earned.study
    first = client.get(reverse("dashboard:bonuses"), {"study": study.slug})
    second = client.get(reverse("dashboard:bonuses"), {"study": study.slug, "upage": 2})
    assert [len(first.context["unpaid_page"]), len(second.context["unpaid_page"])] == [2, 2]
    unpaid = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)
    assert unpaid.count() == 4
    form = first.content.decode().split('id="pay-form"', 1)[1].split("</form>", 1)[0]
    fingerprint = form.split('name="listed" value="', 1)[1].split('"', 1)[0]
    paid = client.post(
        reverse("dashboard:bonus_pay", args=[study.slug]), {"listed": fingerprint, "confirm": "paid"}, follow=True
    )
    assert b"Marked 4 bonus(es) paid" in paid.content
    assert not unpaid.exists()
