"""The bot bench/attacks/nonsense_verified_by_colluders.py against a live server: a writer's
grammatical nonsense fools the target, two colluders in fresh browsers on the writer's machine
give it the writer's label, and none of it becomes gold (verified): each colluder is tied to the
writer by their network group, so the examples wait for verifiers tied to nobody."""

import pytest
from django.test import override_settings

from adversarial.models import AdversarialTry, TieKind, Verification, VerifierTie
from bench.attacks import nonsense_verified_by_colluders as bot


@pytest.mark.django_db(transaction=True)
def test_no_nonsense_verified_by_colluders_becomes_gold(live_server):
    # The bot's target is served on loopback, as a lab allow-lists its own model server.
    with override_settings(OUTBOUND_ALLOWED_NETWORKS=["127.0.0.0/8"]):
        result = bot.run(live_server.url, seed=3)
    fooled = AdversarialTry.objects.filter(model_fooled=True)
    assert result["tries"] == fooled.count() >= 2, result["detail"]
    assert result["succeeded"] == 0, result["detail"]
    assert not AdversarialTry.objects.filter(verification=Verification.VERIFIED).exists()
    # The colluders did label them: their labels were set aside, each with its reason.
    ties = VerifierTie.objects.all()
    assert ties.count() == bot.COLLUDERS * fooled.count(), result["detail"]
    assert set(ties.values_list("kind", flat=True)) == {TieKind.WRITER}
