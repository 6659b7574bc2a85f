"""The dashboard's quality pages: labelling, bonuses and their exports, excluding workers."""

from decimal import Decimal

import pytest
from django.urls import reverse

from corpus.models import Label, Market, Pair, Worker
from quality.models import BonusEntry, BonusKind, ReferenceLabel
from tests.validation.validation_factories import make_dataset, make_pair

from .test_catch_trials import catch_pair, earn, make_study, session_for
from .test_worker_quality import guesser_corpus

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "name,method",
    [
        ("dashboard:label_pairs", "get"),
        ("dashboard:bonuses", "get"),
        ("dashboard:worker_exclusion", "post"),
    ],
)
def test_quality_pages_are_for_researchers_only(client, make_worker, name, method):
    url = reverse(name)
    assert getattr(client, method)(url).status_code == 302  # to the login page
    client.force_login(make_worker().user)
    assert getattr(client, method)(url, {"action": "exclude", "worker": "1"}).status_code == 403


def test_a_worker_cannot_pay_or_export(client, make_worker):
    dataset = make_dataset()
    study = make_study(dataset)
    client.force_login(make_worker().user)
    assert client.post(reverse("dashboard:bonus_pay", args=[study.slug]), {"bonus": "1"}).status_code == 403
    assert client.get(reverse("dashboard:bonus_export", args=[study.slug, "prolific"])).status_code == 403


def test_labelling_page_saves_a_catch_trial_and_moves_on(client, researcher):
    dataset = make_dataset()
    first, second = make_pair(dataset), make_pair(dataset)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:label_pairs"))
    assert page.status_code == 200 and page.context["pair"] == first
    assert b'data-key="1"' in page.content
    response = client.post(
        reverse("dashboard:label_pairs"), {"pair": first.pk, "label": N, "is_catch_trial": "on", "note": "clear"}
    )
    assert response.status_code == 302
    reference = ReferenceLabel.objects.get(pair=first)
    assert (reference.label, reference.is_catch_trial, reference.labelled_by, reference.note) == (
        N,
        True,
        researcher,
        "clear",
    )
    assert client.get(reverse("dashboard:label_pairs")).context["pair"] == second
    # The pair's own labels and counters are untouched.
    first.refresh_from_db()
    assert (first.label_count, first.gold_label) == (1, "-")


def test_labelling_page_offers_five_label_pairs_first_then_the_oldest(client, researcher):
    from corpus.services import add_label

    dataset = make_dataset()
    oldest, judged, half_judged = make_pair(dataset), make_pair(dataset), make_pair(dataset)
    for label in (E, E, N, C):
        add_label(judged, label)
    for label in (E, N):
        add_label(half_judged, label)
    other = make_pair(make_dataset("other"))
    for label in (E, E, N, C):
        add_label(other, label)
    client.force_login(researcher)

    def offered(**scope):
        return client.get(reverse("dashboard:label_pairs"), scope).context["pair"]

    assert offered(dataset="collected") == judged and offered() == judged  # the crowd's judged pair, though newer
    ReferenceLabel.objects.create(pair=judged, label=E, labelled_by=researcher)
    assert offered(dataset="collected") == oldest  # then the oldest, however many labels the rest have
    assert offered() == other == offered(dataset="other")  # every dataset's judged pairs come first
    ReferenceLabel.objects.create(pair=other, label=E, labelled_by=researcher)
    assert offered() == oldest and offered(dataset="other") is None


def test_labelling_page_refuses_a_missing_label_and_keeps_the_input(client, researcher):
    dataset = make_dataset()
    pair = make_pair(dataset)
    client.force_login(researcher)
    response = client.post(
        reverse("dashboard:label_pairs"), {"pair": pair.pk, "label": "", "is_catch_trial": "on", "note": "kept"}
    )
    assert response.status_code == 400
    assert b"Choose one of the three labels" in response.content and b'value="kept"' in response.content
    assert not ReferenceLabel.objects.exists()


def test_admin_lists_catch_trials(client, researcher):
    dataset = make_dataset()
    trap = catch_pair(dataset)
    client.force_login(researcher)
    response = client.get(reverse("admin:quality_referencelabel_changelist") + "?is_catch_trial__exact=1")
    assert response.status_code == 200 and trap.pair_id.encode() in response.content


def bonus_setup(make_worker):
    dataset = make_dataset()
    study = make_study(dataset, bonus="1.00", currency="GBP")
    worker = make_worker(market=Market.PROLIFIC, external_id="PID123")
    session = session_for(study, worker, "SESS")
    entries = [earn(study, worker, catch_pair(dataset), session) for _ in range(2)]
    return study, worker, entries


def test_bonus_page_lists_unpaid_exports_and_pays_in_one_action(client, researcher, make_worker):
    study, _worker, entries = bonus_setup(make_worker)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:bonuses"))
    assert page.status_code == 200
    assert [e.pk for e in page.context["unpaid_page"]] == [e.pk for e in entries]
    assert page.context["totals"][0]["unpaid"] == Decimal("2.00")
    export = client.get(reverse("dashboard:bonus_export", args=[study.slug, "prolific"]))
    assert export["Content-Type"].startswith("text/csv")
    assert export.content == b"PID123,2.00\n"
    assert client.get(reverse("dashboard:bonus_export", args=[study.slug, "paypal"])).status_code == 404
    assert client.get(reverse("dashboard:bonus_pay", args=[study.slug])).status_code == 405
    assert b'id="unpaid-total">2.00 GBP' in page.content  # the sum, beside the confirmation
    response = client.post(
        reverse("dashboard:bonus_pay", args=[study.slug]), {"bonus": [e.pk for e in entries]}, follow=True
    )
    assert b"Nothing was marked paid: tick the box" in response.content  # one click is not enough
    assert not BonusEntry.objects.filter(kind=BonusKind.PAID).exists()
    response = client.post(
        reverse("dashboard:bonus_pay", args=[study.slug]),
        {"bonus": [e.pk for e in entries], "confirm": "paid"},
        follow=True,
    )
    assert b"Marked 2 bonus(es) paid: 2.00 GBP" in response.content
    assert BonusEntry.objects.filter(kind=BonusKind.PAID).count() == 2
    assert client.get(reverse("dashboard:bonus_export", args=[study.slug, "prolific"])).content == b""


def test_paying_with_bad_ids_changes_nothing(client, researcher, make_worker):
    study, _worker, entries = bonus_setup(make_worker)
    client.force_login(researcher)
    response = client.post(
        reverse("dashboard:bonus_pay", args=[study.slug]),
        {"bonus": [entries[0].pk, "x"], "confirm": "paid"},
        follow=True,
    )
    assert b"nothing was marked paid" in response.content
    assert not BonusEntry.objects.filter(kind=BonusKind.PAID).exists()


def test_workers_page_shows_flags_and_excludes_then_includes_in_bulk(client, researcher, make_worker):
    _dataset, _honest, guesser = guesser_corpus(make_worker)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:workers"))
    assert page.status_code == 200
    assert page.context["quality"][0].worker.pk == guesser.pk
    assert b'data-flag="random_guesser"' in page.content
    response = client.post(
        reverse("dashboard:worker_exclusion"), {"action": "exclude", "worker": [guesser.pk]}, follow=True
    )
    assert b"Excluded: 1 worker(s)" in response.content
    assert Worker.objects.get(pk=guesser.pk).exclusions.exists()
    assert set(Pair.objects.values_list("label_count", flat=True)) == {4}
    client.post(reverse("dashboard:worker_exclusion"), {"action": "include", "worker": [guesser.pk]})
    assert not Worker.objects.get(pk=guesser.pk).exclusions.exists()
    assert set(Pair.objects.values_list("label_count", flat=True)) == {5}
    assert client.post(reverse("dashboard:worker_exclusion"), {"action": "exclude"}, follow=True).status_code == 200
    assert not Worker.objects.filter(exclusions__isnull=False).distinct().exists()


def faq_for(client, worker, study=None):
    from crowd.arrival import SESSION_KEY

    client.force_login(worker.user)
    if study is not None:
        session = client.session
        session[SESSION_KEY] = session_for(study, worker, f"faq-{study.slug}").pk
        session.save()
    return client.get(reverse("validation:faq")).content.decode()


def test_the_faq_states_exactly_what_the_study_pays(client, make_worker):
    dataset = make_dataset()
    paying = make_study(dataset, share=0.02, bonus="0.50", currency="GBP", slug="paying")
    text = faq_for(client, make_worker(), paying)
    assert "about 2.0% of the pairs" in text and "<strong>0.50 GBP</strong>" in text
    unpaid = make_study(dataset, share=0.0, slug="no-bonus")
    assert "this study (no-bonus) pays no bonus" in faq_for(client, make_worker(), unpaid)
    assert "Outside a study" in faq_for(client, make_worker())


def test_labelling_page_answers_404_for_a_pair_that_is_not_there(client, researcher):
    client.force_login(researcher)
    assert client.get(reverse("dashboard:label_pairs") + "?pair=abc").status_code == 404
    assert client.get(reverse("dashboard:label_pairs") + "?pair=99999").status_code == 404
    assert client.post(reverse("dashboard:label_pairs"), {"pair": "1; drop", "label": "neutral"}).status_code == 404


def test_the_latest_catch_trials_are_of_the_dataset_chosen(client, researcher):
    ours, theirs = make_dataset("ours"), make_dataset("theirs")
    mine, other = catch_pair(ours), catch_pair(theirs)
    client.force_login(researcher)
    shown = client.get(reverse("dashboard:label_pairs"), {"dataset": "ours"}).context["catch_trials"]
    assert [reference.pair_id for reference in shown] == [mine.pk]
    every = client.get(reverse("dashboard:label_pairs")).context["catch_trials"]
    assert {reference.pair_id for reference in every} == {mine.pk, other.pk}
