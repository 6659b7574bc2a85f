"""The workers and bonus pages write their long lists a row at a time (dashboard/templatetags/
worker_rows.py, bonus_rows.py): every text from the data escaped, every cell as the template wrote
it. The bonus page's money is read on every request; its catch pools and its list of participants
are figures of the figure cache."""

from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Worker
from privacy.services import erase_participant
from quality.models import BonusCause, BonusEntry, BonusKind
from teams.models import default_team_id

from .test_crowd_page_statements import crowd

pytestmark = pytest.mark.django_db

MARKUP = '<b class="x">&'
ESCAPED = "&lt;b class=&quot;x&quot;&gt;&amp;"


def named_in_markup():
    """Every worker of the crowd renamed to a participant id holding markup, each its own."""
    for worker in Worker.objects.all():
        worker.external_id = f"{MARKUP}{worker.pk}"
        worker.save(update_fields=["external_id"])


def test_the_workers_page_escapes_every_name_in_both_tables(client, researcher):
    client.force_login(researcher)
    crowd(1)
    named_in_markup()
    cache.clear()
    page = client.get(reverse("dashboard:workers")).content.decode()
    workers = page.split('id="table-workers"', 1)[1].split("</table>", 1)[0]
    quality = page.split('id="table-quality"', 1)[1].split("</table>", 1)[0]
    for table in (workers, quality):
        assert MARKUP not in table
        assert table.count(ESCAPED) >= Worker.objects.count()
    assert f'aria-label="select {ESCAPED}' in quality


def test_the_bonus_page_escapes_names_in_its_lists(client, researcher):
    client.force_login(researcher)
    crowd(1)
    named_in_markup()
    study = BonusEntry.objects.earliest("pk").study
    page = client.get(reverse("dashboard:bonuses"), {"study": study.slug}).content.decode()
    for list_id, end in (
        ("table-unpaid", "</table>"),
        ("table-bonus-workers", "</table>"),
        ("give-session", "</select>"),
    ):
        shown = page.split(f'id="{list_id}"', 1)[1].split(end, 1)[0]
        assert MARKUP not in shown and ESCAPED in shown, list_id


def test_the_warm_bonus_page_reads_money_now_and_pools_and_participants_from_the_figure_cache(client, researcher):
    client.force_login(researcher)
    crowd(1)
    earned = BonusEntry.objects.filter(kind=BonusKind.EARNED, payment__isnull=True).earliest("pk")
    url = f"{reverse('dashboard:bonuses')}?study={earned.study.slug}"
    cache.clear()
    cold = client.get(url)
    assert cold.context["catch_pools"] and cold.context["bonus_recipients"]["rows"]
    owed = cold.context["listed"].count
    # A bonus earned since: the money is the ledger's now, the cached lists stay as they were.
    BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=earned.worker,
        study=earned.study,
        study_session=earned.study_session,
        amount=Decimal("0.40"),
        currency=earned.currency,
        cause=BonusCause.OTHER,
        reason="a discretionary bonus",
    )
    with CaptureQueriesContext(connection) as captured:
        warm = client.get(url)
    statements = [query["sql"] for query in captured.captured_queries]
    assert warm.context["listed"].count == owed + 1
    assert f'data-bonus="{BonusEntry.objects.latest("pk").pk}"' in warm.content.decode()
    assert not [sql for sql in statements if "quality_referencelabel" in sql], statements  # the catch pools
    assert not [sql for sql in statements if 'FROM "collection_studysession"' in sql], statements  # participants
    assert warm.context["bonus_recipients"] == cold.context["bonus_recipients"]


def test_an_erased_participant_leaves_the_bonus_form_at_once_on_a_large_corpus(client, researcher, settings):
    # The participant list is people, not a figure: an erasure pseudonymises their ids, and the
    # next page must not show the kept list (a large corpus shows other figures as last computed).
    settings.DASHBOARD_CACHE_SECONDS = 3600
    settings.DASHBOARD_LARGE_PAIRS = 1
    client.force_login(researcher)
    crowd(1)
    earned = BonusEntry.objects.filter(kind=BonusKind.EARNED).earliest("pk")
    worker, study = earned.worker, earned.study
    Worker.objects.filter(pk=worker.pk).update(external_id="5f3c2a1b9d8e7f6a5b4c3d2e")
    url = f"{reverse('dashboard:bonuses')}?study={study.slug}"
    cache.clear()
    before = client.get(url).content.decode().split('id="give-session"', 1)[1].split("</select>", 1)[0]
    assert "5f3c2a1b9d8e7f6a5b4c3d2e" in before

    erase_participant(Worker.objects.get(pk=worker.pk), team_id=study.team_id or default_team_id(), by=researcher)

    after = client.get(url).content.decode().split('id="give-session"', 1)[1].split("</select>", 1)[0]
    assert "5f3c2a1b9d8e7f6a5b4c3d2e" not in after
