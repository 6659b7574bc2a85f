"""One person under many participant ids is linked for researchers.

The attack: the six cheaters of the issue came back under three new ids from the same browser.
Before: nothing linked the ids. After: the long-lived device cookie (carried by the session too)
links them, the workers page flags each `many_ids`, and no participant page mentions it.
"""

import pytest
from django.test import Client
from django.urls import reverse

from corpus.scope import Scope
from crowd.models import DeviceSighting
from quality import flags
from quality.selectors import worker_quality
from tests.present import present
from tests.quality.test_catch_trials import make_study
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
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
    batch = present(batch_claims.claim_validation_batch(worker))
    pairs = ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)
    services.submit_validation_batch(worker, batch, dict.fromkeys(pairs, "neutral"))


def test_ids_that_share_a_browser_are_flagged_for_researchers_only(client, researcher):
    dataset = make_dataset()
    for _ in range(30):
        make_pair(dataset)
    study = make_study(dataset, share=0.0)
    study.tasks_per_batch = 5
    study.open_link_unverified = True  # paid, no market connection: an open link
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


def test_an_id_seen_in_the_browser_of_another_labs_worker_is_not_named_on_this_labs_pages(make_worker):
    """The many-ids flag of a team's workers page counts only ids that worked on that team's
    datasets: one browser used for lab A's study by pid-a and for lab B's by pid-b flags neither on
    lab A's page (pid-b is no id of lab A's), and both where every dataset is read."""
    from corpus.models import Label, Split
    from corpus.services import add_labels
    from teams.models import Team
    from tests import factories

    workers = {}
    for pid, lab in (("pid-a", "lab-a"), ("pid-b", "lab-b")):
        team = Team.objects.create(slug=lab, name=lab)
        dataset = factories.dataset(f"data-{lab}", team=team)
        pairs = [
            factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [Label.ENTAILMENT]) for _ in range(3)
        ]
        workers[pid] = make_worker(username=pid, external_id=pid)
        add_labels([(pair, Label.ENTAILMENT) for pair in pairs], worker=workers[pid], seconds=12.0)
        DeviceSighting.objects.create(device="one-browser", worker=workers[pid])

    def many_ids(scope):
        return {
            row.worker.external_id for row in worker_quality(scope) if any(f.kind == flags.MANY_IDS for f in row.flags)
        }

    lab_a = Scope.of_teams(Team.objects.filter(slug="lab-a").values_list("pk", flat=True))
    assert many_ids(lab_a) == set()
    assert many_ids(Scope.everything()) == {"pid-a", "pid-b"}
