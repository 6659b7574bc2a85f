"""`make demo`'s adversarial study: round 1 written, verified and closed, round 2 open on the new
target; the rounds page shows both; a second load changes nothing."""

from io import StringIO

import pytest
from django.core.management import call_command

from adversarial import rounds
from adversarial.models import AdversarialTry, Round, RoundStatus, Verification
from demo.adversarial import STUDY
from tests.conftest import wait_for
from tests.present import present

# Committed transactions: closing a round queues its exports and the next run when the close commits.
pytestmark = pytest.mark.django_db(transaction=True)


def load():
    out = StringIO()
    call_command("load_demo", "--no-artifacts", "--no-quality", "--no-recast", stdout=out)
    return out.getvalue()


@pytest.mark.celery_worker
def test_the_demo_has_a_finished_round_and_an_open_one(client, make_researcher, celery_worker_process):
    output = load()
    reader = make_researcher(username="rounds-reader")
    first = Round.objects.get(study__slug=STUDY["slug"], number=1)

    def second_round_open():
        # With a broker the round's exports and the next run finish on the worker, and the beat
        # advances the round (adversarial.rounds.advance_round) until it opens the next.
        rounds.advance_round(Round.objects.get(pk=first.pk), user=reader)
        return Round.objects.filter(study__slug=STUDY["slug"]).count() == 2

    wait_for(second_round_open, timeout=300, interval=2, message="round 2 to open")
    round1, round2 = Round.objects.filter(study__slug=STUDY["slug"]).order_by("number")
    assert (round1.status, round2.status) == (RoundStatus.CLOSED, RoundStatus.OPEN)
    assert round2.target_run_id == round1.next_run_id and present(round2.target_run).checkpoint_sha256
    assert round2.dataset.premises.exists() and round2.dataset != round1.dataset
    tries = AdversarialTry.objects.filter(round=round1)
    assert tries.filter(model_fooled=True).exists() and tries.filter(model_fooled=False).exists()
    assert not tries.filter(model_fooled=True, verification=Verification.PENDING).exists()
    assert f"/dashboard/adversarial/{STUDY['slug']}/" in output  # 'round 2 open' once the worker has trained it

    # The printed login itself is tested with the demo (tests/demo); here any researcher reads the rounds.
    client.force_login(reader)
    page = client.get(f"/dashboard/adversarial/{STUDY['slug']}/").content.decode()
    assert 'data-round="1"' in page and 'data-round="2"' in page and "close-round" in page

    before = (Round.objects.count(), AdversarialTry.objects.count())
    load()
    assert (Round.objects.count(), AdversarialTry.objects.count()) == before
