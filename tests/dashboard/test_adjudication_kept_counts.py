"""The adjudication page's queue counts and before-and-after statistics (`dashboard.queries.adjudication`):
kept a few seconds per scope, so a page opened again does not count the queues again; out of date
at once when a researcher decides, undoes, sends pairs to the "sent" queue or takes them back."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Label, Pair, Split
from corpus.scope import Scope
from tests import factories
from validation import adjudication

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
URL = reverse("dashboard:adjudication") + "?dataset=kept-counts"


@pytest.fixture
def torn(settings):
    settings.DASHBOARD_CACHE_SECONDS = 3600  # kept for the whole test unless something marks it out of date
    dataset = factories.dataset("kept-counts")
    premise = factories.premise(dataset, split=Split.DEV)
    return [factories.pair(dataset, premise, [E, E, N, N, C]) for _ in range(3)]


def shown_counts(client) -> dict[str, int]:
    page = client.get(URL).content.decode()
    return {
        slug: int(value)
        for slug, value in re.findall(r'data-queue="([a-z_]+)"[^>]*>[^<]*<span class="count" data-value="(\d+)"', page)
    }


def test_a_page_opened_again_shows_the_kept_counts_without_counting_the_queues(client, torn, researcher):
    client.force_login(researcher)
    first = shown_counts(client)
    assert first["no_gold"] == 3 and first["two_two_one"] == 3
    # A fourth torn pair arrives from the crowd: no decision, nothing marks the counts out of date.
    factories.pair(torn[0].dataset, torn[0].premise, [E, E, N, N, C])
    with CaptureQueriesContext(connection) as again:
        kept = shown_counts(client)
    assert kept == first
    # The queue counts read the pair tally: a kept page reads none of it.
    assert not [q["sql"] for q in again.captured_queries if "corpus_pairtally" in q["sql"]]


def test_the_counts_follow_a_decision_and_its_undo_at_once(client, torn, researcher):
    client.force_login(researcher)
    assert shown_counts(client)["no_gold"] == 3
    decision = adjudication.decide(torn[0], N, researcher=researcher, reason="looked")
    assert shown_counts(client)["no_gold"] == 2
    adjudication.undo(decision, researcher=researcher)
    assert shown_counts(client)["no_gold"] == 3


def test_the_sent_count_follows_a_send_and_its_undo_at_once(client, torn, researcher):
    client.force_login(researcher)
    assert shown_counts(client)["sent"] == 0
    _, _, token = adjudication.send_to_adjudication(
        Pair.objects.filter(pk__in=[p.pk for p in torn[:2]]), researcher=researcher, reason="odd"
    )
    assert shown_counts(client)["sent"] == 2
    adjudication.unsend(token, researcher=researcher)
    assert shown_counts(client)["sent"] == 0


def test_with_no_interval_every_page_counts_afresh(client, torn, researcher, settings):
    settings.DASHBOARD_CACHE_SECONDS = 0
    client.force_login(researcher)
    assert shown_counts(client)["no_gold"] == 3
    factories.pair(torn[0].dataset, torn[0].premise, [E, E, N, N, C])
    assert shown_counts(client)["no_gold"] == 4
    assert adjudication.queue_counts(Scope.named("kept-counts"))["no_gold"] == 4
