"""Adjudication with history: the decided pairs listed with who
and when, the decision just made undone (the pair back where it stood, the decision before it
re-applied), a later decision refusing the undo of an earlier one, and the MPE queue only where a
dataset is multi-premise."""

import pytest
from django.urls import reverse

from corpus.models import Adjudication, ItemKind, Label, Pair, Split
from corpus.scope import Scope
from corpus.services import LabelRefused
from tests import factories
from validation import adjudication

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


@pytest.fixture
def torn_pair():
    dataset = factories.dataset("history")
    return factories.pair(dataset, factories.premise(dataset, split=Split.DEV), [E, E, N, N, C])


def test_undo_puts_back_the_decision_before_it(torn_pair, researcher):
    adjudication.decide(torn_pair, N, researcher=researcher, reason="first look")
    second = adjudication.decide(torn_pair, C, researcher=researcher, reason="second look")
    adjudication.undo(second, researcher=researcher)
    assert Pair.objects.get(pk=torn_pair.pk).gold_label == N
    first_again = Adjudication.objects.order_by("-pk").first()
    assert first_again is not None
    adjudication.undo(first_again, researcher=researcher)
    assert Pair.objects.get(pk=torn_pair.pk).gold_label == C  # undoing the undo


def test_undo_of_a_first_decision_goes_back_to_the_rule(torn_pair, researcher):
    decision = adjudication.decide(torn_pair, "retire", researcher=researcher, reason="broken")
    adjudication.undo(decision, researcher=researcher)
    assert (
        Pair.objects.get(pk=torn_pair.pk).gold_label == "-"
        and Pair.objects.get(pk=torn_pair.pk).adjudicated_label == ""
    )


def test_an_earlier_decision_is_not_undone_under_a_later_one(torn_pair, researcher):
    first = adjudication.decide(torn_pair, N, researcher=researcher, reason="first look")
    adjudication.decide(torn_pair, C, researcher=researcher, reason="second look")
    with pytest.raises(LabelRefused, match="later decision"):
        adjudication.undo(first, researcher=researcher)


def test_the_page_lists_decisions_with_who_and_offers_the_undo_of_the_last(client, torn_pair, researcher):
    client.force_login(researcher)
    url = reverse("dashboard:adjudication") + "?dataset=history"
    client.post(reverse("dashboard:adjudicate", args=[torn_pair.pk]), {"decision": N, "reason": "looked", "next": url})
    page = client.get(url).content.decode()
    decision = Adjudication.objects.get()
    assert f'data-decision="{decision.pk}"' in page and researcher.username in page and "looked" in page
    assert 'id="undo-last"' in page and reverse("dashboard:adjudication_undo", args=[decision.pk]) in page
    response = client.post(reverse("dashboard:adjudication_undo", args=[decision.pk]), {"next": url}, follow=True)
    assert "undone" in response.content.decode()
    assert Pair.objects.get(pk=torn_pair.pk).gold_label == "-"
    assert 'id="undo-last"' not in response.content.decode()


def test_the_mpe_queue_shows_only_where_a_dataset_is_multi_premise(client, torn_pair, researcher):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:adjudication") + "?dataset=history").content.decode()
    assert 'data-queue="mpe"' not in page
    factories.dataset("mpe-items", item_kind=ItemKind.MULTI_PREMISE)
    page = client.get(reverse("dashboard:adjudication") + "?dataset=mpe-items").content.decode()
    assert 'data-queue="mpe"' in page
    assert [f.slug for f in adjudication.filters_for(Scope.named("history"))].count("mpe") == 0
