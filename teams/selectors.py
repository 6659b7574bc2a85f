"""Who is in a team, read for the team pages (docs/teams.md, "A second lab")."""

from typing import Any

from django.db.models import Case, IntegerField, QuerySet, Value, When

from .models import Membership, Role, Team

# Owners first, then researchers, then annotators: the order of power (teams.models.Role).
_ROLE_ORDER = Case(
    *(When(role=role, then=Value(rank)) for rank, role in enumerate(Role.values)),
    default=Value(len(Role.values)),
    output_field=IntegerField(),
)


def members(team: Team) -> QuerySet[Membership]:
    """The team's memberships with their accounts, owners first, then by username."""
    return (
        Membership.objects.filter(team=team)
        .select_related("user")
        .annotate(role_rank=_ROLE_ORDER)
        .order_by("role_rank", "user__username")
    )


def teams_of(user: Any) -> list[tuple[Team, str]]:
    """Each team `user` belongs to with their role there, by name; a superuser's every team (as
    owner, the role teams.access gives them)."""
    if user.is_superuser:
        return [(team, Role.OWNER) for team in Team.objects.order_by("name")]
    rows = Membership.objects.filter(user=user).select_related("team").order_by("team__name")
    return [(membership.team, membership.role) for membership in rows]


def team_named(slug: str) -> Team | None:
    return Team.objects.filter(slug=slug).first()


def membership_in(team: Team, membership_id: int) -> Membership | None:
    return Membership.objects.filter(team=team, pk=membership_id).select_related("user").first()
