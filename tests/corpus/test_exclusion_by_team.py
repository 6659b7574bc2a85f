"""An exclusion is a team's decision. Two labs share a worker; lab A excludes them: A's
gold labels, figures, tasks and log follow, lab B's data and pages do not move, and B may not act
in A's name."""

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from base.permissions import ensure_researcher_group
from corpus.exclusions import set_workers_excluded
from corpus.models import Label, Pair, ValidationLabel, WorkerExclusion
from corpus.scope import Scope
from corpus.selectors import excluded_workers
from corpus.services import LabelRefused, add_label
from teams.models import Role, Team
from teams.services import join
from tests import factories
from tests.present import present
from validation import batch_claims
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db

E, N = Label.ENTAILMENT, Label.NEUTRAL


def gold(pair):
    pair.refresh_from_db()
    return (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.gold_label)


@pytest.fixture
def labs(make_worker, django_user_model):
    """Labs A and B, a dataset each, a pair each labelled E by its author, E by two validators and N
    by the shared worker (gold E with 5 labels after a fourth validator's E), and a researcher each."""
    teams = {name: Team.objects.create(slug=f"lab-{name}", name=f"Lab {name}") for name in "ab"}
    factories.genre("fiction")
    shared = make_worker(username="shared")
    others = [make_worker() for _ in range(3)]
    pairs, researchers = {}, {}
    for name, team in teams.items():
        dataset = factories.dataset(f"data-{name}", team=team)
        pair = factories.pair(dataset, factories.premise(dataset), [E], needs_validation=True)
        for worker, label in ((others[0], E), (shared, N), (others[1], E), (others[2], E)):
            add_label(Pair.objects.get(pk=pair.pk), label, worker=worker)
        pairs[name] = pair
        user = django_user_model.objects.create_user(f"researcher-{name}", password="pass-word-1", is_staff=True)
        user.groups.add(ensure_researcher_group())
        join(user, team, Role.RESEARCHER)
        researchers[name] = user
    return teams, pairs, researchers, shared


def test_an_exclusion_moves_only_its_teams_gold_labels(labs):
    teams, pairs, _, shared = labs
    assert gold(pairs["a"]) == gold(pairs["b"]) == (5, 4, 1, E)
    outcome = set_workers_excluded(type(shared).objects.filter(pk=shared.pk), True, teams=[teams["a"].pk])
    assert outcome.changed == 1
    assert gold(pairs["a"]) == (4, 4, 0, E)  # lab A's pair lost the shared worker's label
    assert gold(pairs["b"]) == (5, 4, 1, E)  # lab B's did not
    assert ValidationLabel.objects.get(pair=pairs["a"], worker=shared).excluded
    assert not ValidationLabel.objects.get(pair=pairs["b"], worker=shared).excluded
    set_workers_excluded(type(shared).objects.filter(pk=shared.pk), False, teams=[teams["a"].pk])
    assert gold(pairs["a"]) == (5, 4, 1, E)
    assert not WorkerExclusion.objects.exists()


def test_an_excluded_worker_takes_no_more_of_the_teams_tasks_and_goes_on_with_the_other_teams(labs, make_worker):
    teams, pairs, _, shared = labs
    author = make_worker()
    fresh = {}
    for name in "ab":
        dataset = pairs[name].dataset
        fresh[name] = factories.pair(dataset, factories.premise(dataset), [E], author=author, needs_validation=True)
    factories.exclude(shared, teams=[teams["a"].pk])
    # In lab A's dataset (a study's): refused; anywhere: only lab B's pairs are offered.
    with pytest.raises(batch_claims.NotAllowedToValidate):
        batch_claims.claim_validation_batch(shared, dataset=pairs["a"].dataset)
    batch = present(batch_claims.claim_validation_batch(shared))
    offered = set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
    assert offered == {fresh["b"].pk}
    # A label on lab A's pair, however it arrives, is refused.
    with pytest.raises(LabelRefused, match="excluded"):
        add_label(Pair.objects.get(pk=fresh["a"].pk), E, worker=shared)


def test_the_exclusion_is_in_the_teams_own_log_and_on_its_pages_only(labs, client):
    teams, pairs, researchers, shared = labs
    client.force_login(researchers["a"])
    answer = client.post(
        reverse("dashboard:worker_exclusion"), {"action": "exclude", "worker": [shared.pk], "reason": "guessing"}
    )
    assert answer.status_code == 302
    entry = AuditEntry.objects.get(action="worker.excluded")
    assert entry.team_id == teams["a"].pk and entry.reason == "guessing" and entry.dataset_slugs == ["data-a"]
    assert excluded_workers(Scope.of_dataset(pairs["a"].dataset)) == {shared.pk}
    assert excluded_workers(Scope.of_dataset(pairs["b"].dataset)) == set()
    client.force_login(researchers["b"])
    page = client.get(reverse("dashboard:workers")).content.decode()
    assert 'class="flag bad">excluded' not in page
    audit = client.get(reverse("dashboard:audit")).content.decode()
    assert "worker.excluded" not in audit


def test_a_researcher_cannot_exclude_in_another_teams_name(labs, client):
    teams, pairs, researchers, shared = labs
    client.force_login(researchers["b"])
    answer = client.post(
        reverse("dashboard:worker_exclusion"),
        {"action": "exclude", "worker": [shared.pk], "team": teams["a"].pk},
        follow=True,
    )
    assert "Choose the team whose data they leave" in answer.content.decode()
    assert not WorkerExclusion.objects.exists()
    assert gold(pairs["a"]) == (5, 4, 1, E)


def test_a_dataset_moved_to_another_team_follows_that_teams_exclusions(labs):
    from django.core.management import call_command

    teams, pairs, _, shared = labs
    factories.exclude(shared, teams=[teams["a"].pk])
    assert gold(pairs["a"]) == (4, 4, 0, E)
    call_command("move_to_team", "lab-b", "--dataset", "data-a", "--reason", "handed over")
    assert gold(pairs["a"]) == (5, 4, 1, E)  # lab B never excluded the worker
    assert not ValidationLabel.objects.filter(excluded=True).exists()
    call_command("move_to_team", "lab-a", "--dataset", "data-a", "--reason", "back")
    assert gold(pairs["a"]) == (4, 4, 0, E)
