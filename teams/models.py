"""Teams (a lab's workspace) and who belongs to them in which role (docs/teams.md).

Every study, dataset and snapshot names its team (a foreign key on the roots); what hangs from
them (sessions, market connections, imports, training runs, releases, labels) belongs to the
root's team. A fresh install and the demo live in one default team, made on first use.
"""

from django.conf import settings
from django.db import models

DEFAULT_TEAM_SLUG = "default"


class Role(models.TextChoices):
    # The order is the order of power: each role may do what the ones below it may (teams.access).
    OWNER = "owner", "Owner (members, market connections, payments)"
    RESEARCHER = "researcher", "Researcher (studies, data, snapshots, adjudication)"
    ANNOTATOR = "annotator", "Annotator (adjudication and labelling only)"


class Team(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.RESEARCHER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


def default_team() -> Team:
    """The team of everything made without a word about teams (made here when missing: a fresh
    database, or a test database flushed after its migrations)."""
    team, _ = Team.objects.get_or_create(slug=DEFAULT_TEAM_SLUG, defaults={"name": "Default team"})
    return team


def default_team_id() -> int:
    """The default of every root's `team` field."""
    return default_team().pk
