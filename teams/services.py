"""Joining a team. (Membership changes made in the admin are recorded in the audit log by the
admin that makes them, dashboard/admin.py; moving objects between teams is the command
`move_to_team`, dashboard/management/commands.)"""

from typing import Any

from .models import Membership, Role, Team, default_team


def join(user: Any, team: Team | None = None, role: str = Role.RESEARCHER) -> Membership:
    """Put `user` in `team` (the default team when none is named) in `role`, or change their role."""
    team = team or default_team()
    membership, created = Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return membership
