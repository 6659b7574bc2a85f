"""Two labs on one deployment, for the tests of the walls between teams: team A with a dataset
of pairs and premises and a study of each kind a preview serves, team B with a dataset of its own,
and an owner (a researcher in the researchers group, not a superuser) in each."""

from dataclasses import dataclass

from django.contrib.auth.models import User

from base.permissions import ensure_researcher_group
from corpus.models import Dataset
from crowd.models import Study, TaskKind
from teams.models import Membership, Role, Team
from tests import factories


@dataclass
class TwoTeams:
    team_a: Team
    team_b: Team
    dataset_a: Dataset
    dataset_b: Dataset
    owner_a: User
    owner_b: User
    studies_a: dict[TaskKind, Study]


def member(django_user_model, username: str, team: Team, role: str = Role.OWNER) -> User:
    user = django_user_model.objects.create_user(username, password="pw", is_staff=True)
    user.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team, user=user, role=role)
    return user


def two_teams(django_user_model, make_worker) -> TwoTeams:
    team_a = Team.objects.create(slug="lab-a", name="Lab A")
    team_b = Team.objects.create(slug="lab-b", name="Lab B")
    dataset_a = factories.dataset("lab-a-data", team=team_a)
    dataset_b = factories.dataset("lab-b-data", team=team_b)
    validators = [make_worker() for _ in range(2)]
    for number in range(3):
        premise = factories.premise(dataset_a, text=f"Lab A premise number {number} sits on a bench.")
        factories.pair(dataset_a, premise, ["entailment", "neutral"], validators=validators)
    factories.premise(dataset_a, text="Lab A spare premise waits for a writer.")
    studies = {
        kind: Study.objects.create(
            slug=f"a-{kind.replace('_', '-')}",
            name=f"Team A's {kind} study",
            dataset=dataset_a,
            team=team_a,
            task_kind=kind,
            completion_code=f"A-{kind}",
        )
        for kind in (TaskKind.WRITING, TaskKind.VALIDATION, TaskKind.ADVERSARIAL)
    }
    return TwoTeams(
        team_a=team_a,
        team_b=team_b,
        dataset_a=dataset_a,
        dataset_b=dataset_b,
        owner_a=member(django_user_model, "owner-a", team_a),
        owner_b=member(django_user_model, "owner-b", team_b),
        studies_a=studies,
    )
