"""Issue 27 item 1: one person under many participant ids is linked for researchers.

The attack: the six cheaters of the issue came back under three new ids from the same browser.
Before: nothing linked the ids. After: the long-lived device cookie (carried by the session too)
links them, the workers page flags each `many_ids`, and no participant page mentions it.
"""

import pytest
from django.test import Client
from django.urls import reverse

from crowd.models import DeviceSighting
from quality import flags
from quality.selectors import worker_quality
from tests.present import present
from tests.quality.test_catch_trials import make_study
from tests.validation.validation_factories import make_dataset, make_pair
from validation import services
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def arrive(client, study, pid):
    return client.get(
        reverse("study_entry", args=[study.slug]),
        {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": f"sess-{pid}"},
    )


def label_a_batch(client):
    from corpus.models import Worker

    worker = Worker.objects.get(user_id=client.session["_auth_user_id"])
    batch = present(services.claim_validation_batch(worker))
    pairs = ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)
    services.submit_validation_batch(worker, batch, dict.fromkeys(pairs, "neutral"))


def test_ids_that_share_a_browser_are_flagged_for_researchers_only(client, researcher):
    dataset = make_dataset()
    for _ in range(30):
        make_pair(dataset)
    study = make_study(dataset, share=0.0)
    study.tasks_per_batch = 5
    study.save()
    one_browser = Client()
    for pid in ("pid-a", "pid-b", "pid-c"):
        response = arrive(one_browser, study, pid)
        if "switch" in response.content.decode():
            one_browser.post(
                reverse("study_entry", args=[study.slug]),
                {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": f"sess-{pid}", "switch": "yes"},
            )
        label_a_batch(one_browser)
    other_browser = Client()
    arrive(other_browser, study, "pid-d")
    label_a_batch(other_browser)
    assert DeviceSighting.objects.values("device").distinct().count() == 2
    flagged = {row.worker.external_id for row in worker_quality() if any(f.kind == flags.MANY_IDS for f in row.flags)}
    print(f"\nids linked as one person: {sorted(flagged)} (pid-d in another browser)")
    assert flagged == {"pid-a", "pid-b", "pid-c"}
    assert "many_ids" not in one_browser.get(reverse("home")).content.decode()
    client.force_login(researcher)
    page = client.get(reverse("dashboard:workers")).content.decode()
    assert page.count('data-flag="many_ids"') == 3
