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


def test_each_scope_keeps_its_own_counts(client, torn, researcher):
    other = factories.dataset("kept-elsewhere")
    other_premise = factories.premise(other, split=Split.DEV)
    factories.pair(other, other_premise, [E, E, N, N, C])
    client.force_login(researcher)
    assert client.get(reverse("dashboard:adjudication")).status_code == 200  # every dataset's, kept first
    assert shown_counts(client)["no_gold"] == 3


def test_a_team_keeps_its_own_flagged_count_on_a_dataset_a_superuser_opened_first(
    client, settings, django_user_model, make_worker
):
    """The flagged queue counts the pairs of the workers the quality checks flag on the page's teams'
    labels: a superuser's count (every team's labels) is never shown to a team's owner."""
    from base.permissions import ensure_researcher_group
    from corpus.services import add_labels
    from teams.models import Membership, Role, Team

    settings.DASHBOARD_CACHE_SECONDS = 3600
    rushed, paced = (Team.objects.create(slug=slug, name=slug) for slug in ("lab-rushed", "lab-paced"))
    worker = make_worker(username="two-labs")
    for team, seconds, count in ((rushed, 1.0, 30), (paced, 14.0, 10)):
        dataset = factories.dataset(f"data-of-{team.slug}", team=team)
        pairs = [factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E]) for _ in range(count)]
        add_labels([(pair, E) for pair in pairs], worker=worker, seconds=seconds)
    owner = django_user_model.objects.create_user("paced-owner", password="pw", is_staff=True)
    owner.groups.add(ensure_researcher_group())
    Membership.objects.create(team=paced, user=owner, role=Role.OWNER)
    superuser = django_user_model.objects.create_user("root", password="pw", is_staff=True, is_superuser=True)
    url = reverse("dashboard:adjudication") + "?dataset=data-of-lab-paced"

    def flagged_count(user) -> int:
        client.force_login(user)
        page = client.get(url).content.decode()
        return int(re.findall(r'data-queue="flagged"[^>]*>[^<]*<span class="count" data-value="(\d+)"', page)[0])

    assert flagged_count(superuser) == 10  # flagged on every team's labels: its pairs in this dataset
    assert flagged_count(owner) == 0  # not flagged on this team's labels
