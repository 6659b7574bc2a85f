"""The researcher side of rounds: opening round 1 by command, the rounds page, closing, the export."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse

from adversarial.models import Round, RoundStatus
from corpus.models import Split
from modeling.models import RunStatus, Snapshot, TrainingRun

from .helpers import adversarial_study

pytestmark = pytest.mark.django_db


def test_round_one_opens_only_on_a_target_that_can_serve(researcher):
    study, round1 = adversarial_study(target_endpoint="http://127.0.0.1:9/predict")
    with pytest.raises(CommandError, match="has a round open"):
        call_command("open_adversarial_round", study=study.slug, dataset=round1.dataset.slug, endpoint="http://x/")
    round1.delete()
    snapshot = Snapshot.objects.create(status="done", directory="/nowhere", content_hash="h")
    queued = TrainingRun.objects.create(snapshot=snapshot, snapshot_hash="h", model="esim", status=RunStatus.QUEUED)
    with pytest.raises(CommandError, match="no finished, verified checkpoint"):
        call_command("open_adversarial_round", study=study.slug, dataset=round1.dataset.slug, run=queued.pk)
    with pytest.raises(CommandError, match=r"The endpoint cannot be used: .*loopback"):
        call_command(
            "open_adversarial_round", study=study.slug, dataset=round1.dataset.slug, endpoint="http://127.0.0.1:9/"
        )
    out = StringIO()
    with override_settings(OUTBOUND_ALLOWED_NETWORKS=["127.0.0.0/8"]):
        call_command(
            "open_adversarial_round",
            study=study.slug,
            dataset=round1.dataset.slug,
            endpoint="http://127.0.0.1:9/",
            stdout=out,
        )
    assert "Round 1 of adv is open on http://127.0.0.1:9/" in out.getvalue()


def test_the_rounds_page_is_for_researchers_and_closing_requests_the_snapshots(client, researcher, make_worker):
    study, round1 = adversarial_study(target_endpoint="http://127.0.0.1:9/predict", split=Split.TEST)
    url = reverse("dashboard:adversarial_rounds", args=[study.slug])
    client.force_login(make_worker().user)
    assert client.get(url).status_code == 403
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert 'data-round="1"' in page and "Tries per fooled" in page
    response = client.post(reverse("dashboard:adversarial_close", args=[study.slug, 1]))
    assert response.status_code == 302
    round1.refresh_from_db()
    assert round1.status == RoundStatus.CLOSING and round1.round_snapshot.datasets == [round1.dataset.slug]
    waiting = " ".join(client.get(url).content.decode().split())
    status = round1.round_snapshot.status
    assert f"waits for its snapshots: round data {status}, training data {round1.training_snapshot.status}" in waiting
    assert client.post(reverse("dashboard:adversarial_close", args=[study.slug, 1]), follow=True).status_code == 200
    assert Round.objects.get(pk=round1.pk).round_snapshot_id == round1.round_snapshot_id  # closed once
    export = client.get(reverse("dashboard:adversarial_export", args=[study.slug, 1]) + "?split=test")
    assert export.status_code == 200 and b"".join(export.streaming_content) == b""
    assert client.get(reverse("dashboard:adversarial_export", args=[study.slug, 1]) + "?split=nope").status_code == 404


def test_closing_a_round_with_unverified_fooled_examples_says_how_many_and_asks_to_confirm(
    client, researcher, make_worker
):
    from django.test import Client

    from adversarial.models import AdversarialTask, TaskState
    from adversarial.rounds import unverified_fooled

    from .helpers import ContractModel, arrive, hypothesis_for

    model = ContractModel()
    study, round1 = adversarial_study(target_endpoint=model.url, max_tries=3)
    writer, writing = make_worker(), Client()
    arrive(writing, writer, study)
    writing.get(reverse("adversarial:next"))
    task = AdversarialTask.objects.get(worker=writer, state=TaskState.WRITING)
    token = task.writing_claim.token
    writing.post(reverse("adversarial:try", args=[token]), {"hypothesis": hypothesis_for(task.target_label, True)})
    writing.post(reverse("adversarial:reason", args=[token]), {"reason": "It says the opposite of the line."})
    model.close()
    assert unverified_fooled(round1) == 1

    client.force_login(researcher)
    url = reverse("dashboard:adversarial_rounds", args=[study.slug])
    page = " ".join(client.get(url).content.decode().split())
    assert 'id="unverified-warning"' in page and "1 fooled example still waits for verifiers" in page
    assert 'name="confirm_unverified"' in page
    close = reverse("dashboard:adversarial_close", args=[study.slug, 1])
    refused = client.post(close, follow=True).content.decode()
    assert "1 fooled example(s) still waiting for verifiers" in refused
    assert Round.objects.get(pk=round1.pk).status == RoundStatus.OPEN  # nothing closed unconfirmed
    client.post(close, {"confirm_unverified": "yes"})
    assert Round.objects.get(pk=round1.pk).status == RoundStatus.CLOSING


def test_a_participant_arriving_while_the_round_closes_is_told_the_study_is_between_rounds(client, make_worker):
    from .helpers import arrive

    study, round1 = adversarial_study(target_endpoint="http://127.0.0.1:9/predict")
    Round.objects.filter(pk=round1.pk).update(status=RoundStatus.CLOSING)
    arrive(client, make_worker(), study)
    page = client.get(reverse("adversarial:next")).content.decode()
    assert 'id="between-rounds"' in page and "Every line has been taken" not in page
