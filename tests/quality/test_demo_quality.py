"""The quality demo: a catch trial, a flagged guesser and an unpaid bonus to see; idempotent."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from corpus.counters import recompute_gold
from quality import flags
from quality.models import BonusEntry, CatchTrialAnswer, ReferenceLabel

pytestmark = pytest.mark.django_db


def load():
    out = StringIO()
    call_command("load_demo", "--no-artifacts", "--no-training", stdout=out)
    return out.getvalue()


def test_demo_has_a_catch_trial_a_flagged_guesser_and_an_unpaid_bonus(client):
    output = load()
    assert "/dashboard/bonuses/" in output and "'demo-guesser' is flagged" in output
    assert ReferenceLabel.objects.filter(is_catch_trial=True).count() == 1
    assert BonusEntry.objects.filter(kind="earned", payment__isnull=True).count() == 1
    assert recompute_gold(fix=False).disagreements == 0
    client.login(username="researcher", password="researcher-demo")
    page = client.get(reverse("dashboard:workers"))
    guesser = next(row for row in page.context["quality"] if str(row.worker) == "demo-guesser")
    assert flags.RANDOM_GUESSER in {flag.kind for flag in guesser.flags}
    bonuses = client.get(reverse("dashboard:bonuses"))
    assert len(bonuses.context["unpaid"]) == 1
    assert (
        client.get(reverse("dashboard:bonus_export", args=["demo-validation", "prolific"])).content
        == b"demo-pid-catch,1.00\n"
    )
    # Again: nothing new.
    counts = (ReferenceLabel.objects.count(), CatchTrialAnswer.objects.count(), BonusEntry.objects.count())
    load()
    assert (ReferenceLabel.objects.count(), CatchTrialAnswer.objects.count(), BonusEntry.objects.count()) == counts


def test_demo_catch_trial_is_an_ordinary_demo_pair_without_a_marker():
    """Issue 27: the demo's catch trial was '<premise words> (surely).', a text no ordinary pair has.
    Every catch trial the demo marks is one of the demo's own written hypotheses (what validators
    meet in ordinary batches), with five labels that agree, and its text carries no mark."""
    from demo.content import PREMISES, premise_entries

    load()
    written = {
        hypothesis
        for genre in PREMISES
        for _text, hypotheses in premise_entries(genre)
        if hypotheses
        for hypothesis in hypotheses
    }
    catch = list(ReferenceLabel.objects.filter(is_catch_trial=True).select_related("pair"))
    assert catch
    for reference in catch:
        pair = reference.pair
        assert pair.hypothesis in written, pair.hypothesis
        assert "(surely)" not in pair.hypothesis and not pair.pair_id.startswith("quality-")
        assert pair.label_count == 5 and pair.gold_label == pair.author_label == reference.label
