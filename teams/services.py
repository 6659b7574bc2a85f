"""Joining a team, and the rule every change of members keeps: a team always has an owner.

The audited membership changes are `dashboard.team_members`' (the audit log sits above this app,
so the entries are written there, in the transaction of the change)."""

from typing import Any

from .models import Membership, Role, Team, default_team


class LastOwnerError(ValueError):
    """A change that would leave a team with no owner: nobody could manage its members again."""


def join(user: Any, team: Team | None = None, role: str = Role.RESEARCHER) -> Membership:
    """Put `user` in `team` (the default team when none is named) in `role`, or change their role."""
    team = team or default_team()
    membership, created = Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def lock_team(team_id: int) -> Team:
    """The team's row, locked until the transaction ends: two owners demoting each other at once
    are decided one after the other, so the second sees the first's change and the last owner stays."""
    return Team.objects.select_for_update().get(pk=team_id)


def keep_an_owner(membership: Membership, new_role: str | None) -> None:
    """Refuse taking `membership` out of the owners (`new_role` another role, or None: removed)
    when it is the team's last owner. Call it inside a transaction that has locked the team."""
    if membership.role != Role.OWNER or new_role == Role.OWNER:
        return
    others = Membership.objects.filter(team_id=membership.team_id, role=Role.OWNER).exclude(pk=membership.pk)
    if not others.exists():
        change = "removed" if new_role is None else f"made {new_role}"
        raise LastOwnerError(
            f"{membership.user} is the team's last owner and cannot be {change}: make another member owner first."
        )
