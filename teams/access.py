"""The one place that says which teams' objects a user reaches and what a role may do there.

Every researcher page, CSV, API route and admin list narrows its rows here:

    scoped(Study.objects.all(), user)                    # the rows of the user's teams
    scoped(Pair.objects.all(), user, via="dataset__team")  # rows that hang from a root
    study = get_or_404(Study.objects.all(), user, "research", slug=slug)

A row of another team answers exactly as an unknown id does (404): a foreign id tells nothing.
A row of the user's own team that the role may not act on answers 403 (the page exists for them).
Superusers reach every team with every action, as in Django.
"""

from collections.abc import Collection, Iterable, Mapping
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.db.models.signals import post_delete, post_save
from django.http import Http404

from .models import Membership, Role, Team, default_team_id

M = TypeVar("M", bound=Model)
T = TypeVar("T")

VIEW = "view"  # the team's pages and figures
LABEL = "label"  # reference labels, adjudication, MPE decisions
RESEARCH = "research"  # studies, data, imports, snapshots, training, exclusions, gold
EXPORT = "export"  # CSV downloads, snapshot files, the data of the API
MONEY = "money"  # market connections, approvals, rejections, payments
MEMBERS = "members"  # who is in the team, in which role
ACTIONS = (VIEW, LABEL, RESEARCH, EXPORT, MONEY, MEMBERS)

ROLE_ACTIONS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(ACTIONS),
    Role.RESEARCHER: frozenset({VIEW, LABEL, RESEARCH, EXPORT}),
    Role.ANNOTATOR: frozenset({VIEW, LABEL}),
}


def may_role(role: str, action: str) -> bool:
    return action in ROLE_ACTIONS.get(role, frozenset())


def _signed_in(user: Any) -> bool:
    """An account that may act at all: signed in and not deactivated. A deactivated account reaches
    no team by any door, whether its object came from a request or was read some other way (a
    command, a task)."""
    return bool(user and user.is_authenticated and user.is_active)


def _everything(user: Any) -> bool:
    return _signed_in(user) and bool(user.is_superuser)


# Where a signed-in request's user carries their role in each team, read with their account
# (`teams.backends.MemberBackend`): every check of the request reads it instead of the memberships,
# until a membership is saved or deleted in this process (a page that changes the user's own role
# and then checks it, such as an owner leaving their team, reads the change).
_REMEMBERED_ROLES = "_team_roles_of_request"
_membership_changes = 0


def _membership_changed(**_: Any) -> None:
    global _membership_changes
    _membership_changes += 1


post_save.connect(_membership_changed, sender=Membership, dispatch_uid="teams.access.membership_saved")
post_delete.connect(_membership_changed, sender=Membership, dispatch_uid="teams.access.membership_deleted")


def remember_roles(user: Any, roles: Mapping[int, str]) -> None:
    """Keep `roles` (team id: role) on `user`, read by every later check made with this object
    while no membership changes."""
    setattr(user, _REMEMBERED_ROLES, (_membership_changes, dict(roles)))


def _remembered_roles(user: Any) -> Mapping[int, str] | None:
    remembered: tuple[int, dict[int, str]] | None = getattr(user, _REMEMBERED_ROLES, None)
    if remembered is None or remembered[0] != _membership_changes:
        return None
    return remembered[1]


def roles_of(user: Any) -> Mapping[int, str]:
    """The user's role in each of their teams: as remembered on the object, else read (one statement)."""
    remembered = _remembered_roles(user)
    if remembered is not None:
        return remembered
    return dict(Membership.objects.filter(user=user).values_list("team_id", "role"))


def team_ids(user: Any, action: str = VIEW) -> set[int] | None:
    """The ids of the teams where `user` may do `action`; None means every team (a superuser)."""
    if _everything(user):
        return None
    if not _signed_in(user):
        return set()
    return {team for team, role in roles_of(user).items() if may_role(role, action)}


def teams_acted_on(user: Any, action: str) -> list[int]:
    """The ids of every team where `user` may do `action`, a superuser's being every team: what an
    action on shared rows (excluding a worker) acts in."""
    teams = team_ids(user, action)
    return sorted(Team.objects.values_list("pk", flat=True)) if teams is None else sorted(teams)


def teams_to_choose(user: Any, action: str) -> QuerySet[Team]:
    """The teams where `user` may do `action`, by name, in one statement: the choice a form offers
    for an action on shared rows (which team's data an excluded worker leaves)."""
    if _everything(user):
        return Team.objects.order_by("name")
    if not _signed_in(user):
        return Team.objects.none()
    roles = [role for role in ROLE_ACTIONS if may_role(role, action)]
    return Team.objects.filter(memberships__user=user, memberships__role__in=roles).order_by("name").distinct()


def role_in(user: Any, team_id: int | None) -> str | None:
    """The user's role in the team (owner for a superuser), or None."""
    if _everything(user):
        return Role.OWNER
    if team_id is None or not _signed_in(user):
        return None
    remembered = _remembered_roles(user)
    if remembered is not None:
        return remembered.get(team_id)
    return Membership.objects.filter(user=user, team_id=team_id).values_list("role", flat=True).first()


def may(user: Any, team_id: int | None, action: str) -> bool:
    role = role_in(user, team_id)
    return role is not None and may_role(role, action)


def scoped(queryset: QuerySet[M], user: Any, action: str = VIEW, via: str = "team") -> QuerySet[M]:
    """The rows of `queryset` whose team (reached by `via`, a lookup path ending at the team) is one
    where `user` may do `action`."""
    teams = team_ids(user, action)
    if teams is None:
        return queryset
    return queryset.filter(**{f"{via}__in": teams})


def kept(rows: Iterable[T], user: Any, action: str = VIEW, attr: str = "team_id") -> list[T]:
    """The rows of a list already read (each naming its team by `attr`) in the user's teams."""
    return in_teams(rows, team_ids(user, action), attr)


def in_teams(rows: Iterable[T], teams: Collection[int] | None, attr: str = "team_id") -> list[T]:
    """The rows (each naming its team by `attr`) of `teams` (None: every team), for a page that
    has read the user's teams once (`figure_teams`) and narrows several lists by them."""
    return [row for row in rows if teams is None or _attr(row, attr) in teams]


def figure_teams(user: Any) -> frozenset[int] | None:
    """The teams whose data every figure a user sees adds up: the dashboard's figure pages, their
    CSVs and images, and the API's figure routes (`corpus.scope.Scope.of_teams` narrows the
    figures to these teams' datasets). None: every team (a superuser)."""
    teams = team_ids(user, VIEW)
    return None if teams is None else frozenset(teams)


def _attr(row: Any, attr: str) -> Any:
    for part in attr.split("."):
        row = getattr(row, part)
    return row


def home_team_id(user: Any, action: str = RESEARCH) -> int | None:
    """The team a user's new object goes to: their first team where they may do `action` (the
    default team for a superuser in none); None when they have none."""
    teams = team_ids(user, action)
    if teams is None:
        mine = sorted(team_ids_of_member(user))
        return mine[0] if mine else default_team_id()
    return min(teams) if teams else None


def team_ids_of_member(user: Any) -> set[int]:
    return set(roles_of(user))


def require(user: Any, team_id: int | None, action: str, missing: str = "Not found.") -> None:
    """404 unless `user` is in the team (a foreign row is as unknown as a missing one: the same
    `missing` message); 403 unless the user's role there may do `action`."""
    role = role_in(user, team_id)
    if role is None:
        raise Http404(missing)
    if not may_role(role, action):
        raise PermissionDenied(f"Your role in this team ({role}) may not do this ({action}).")


def get_or_404(queryset: QuerySet[M], user: Any, action: str = VIEW, via: str = "team", **lookup: Any) -> M:
    """The one row `lookup` names among the user's teams' rows (404 otherwise, foreign or unknown
    alike), after `require` of `action` on its team."""
    return checked(scoped(queryset, user, VIEW, via).filter(**lookup).first(), user, action, via)


def checked(row: M | None, user: Any, action: str = VIEW, via: str = "team", missing: str = "Not found.") -> M:
    """`row` (found by whatever lookup a page makes) when it is of one of the user's teams and their
    role may do `action`: 404 with `missing` when it is None or foreign, 403 for a weaker role."""
    if row is None:
        raise Http404(missing)
    require(user, _team_id(row, via), action, missing)
    return row


def team_of(row: Model, via: str = "team") -> int | None:
    """The id of the team `row` belongs to, reached by `via` (a lookup path ending at the team, or
    "pk" for a team itself); None when the path stops at an empty foreign key."""
    if via == "pk":
        return int(row.pk) if row.pk is not None else None
    value: Any = row
    parts = via.split("__")
    for part in parts[:-1]:
        value = getattr(value, part, None)
        if value is None:
            return None
    team_id = getattr(value, f"{parts[-1]}_id", None)
    return None if team_id is None else int(team_id)


def _team_id(row: Model, via: str) -> int:
    value: Any = row
    parts = via.split("__")
    for part in parts[:-1]:
        value = getattr(value, part)
    return int(getattr(value, f"{parts[-1]}_id"))
