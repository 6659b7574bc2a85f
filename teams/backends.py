"""The authentication backend of researchers: Django's ModelBackend, whose signed-in user arrives with
their permissions and their roles in every team in the statement that reads the account (docs/teams.md).

Every researcher page asks for the research permission (`base.permissions`) and the user's teams
(`teams.access`): without this, three statements a request (permissions, groups' permissions,
memberships). Here they ride on the user's row and are kept on the user object for the request, as
Django keeps permissions once read; a permission changed during a request is seen from the next
one on, a membership saved or deleted during it at once (`teams.access`). The statement is written
out: built by the ORM, compiling it cost more than running it. Participants are signed in with
ModelBackend itself (`crowd.views`).
"""

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from . import access
from .models import Membership


def _account_sql() -> str:
    user_model = get_user_model()

    def table(model: Any) -> str:
        return str(connection.ops.quote_name(model._meta.db_table))

    user_permissions = table(user_model.user_permissions.through)
    user_groups = table(user_model.groups.through)
    group_permissions = table(Group.permissions.through)
    return f"""
        SELECT account.*,
            ARRAY(
                SELECT type.app_label || '.' || permission.codename
                FROM {table(Permission)} permission
                JOIN {table(ContentType)} type ON type.id = permission.content_type_id
                WHERE permission.id IN (
                    SELECT permission_id FROM {user_permissions} WHERE user_id = account.id
                    UNION
                    SELECT granted.permission_id FROM {group_permissions} granted
                    JOIN {user_groups} belongs ON belongs.group_id = granted.group_id
                    WHERE belongs.user_id = account.id
                )
            ) AS permission_names,
            ARRAY(
                SELECT membership.team_id || ':' || membership.role
                FROM {table(Membership)} membership WHERE membership.user_id = account.id
            ) AS team_roles
        FROM {table(user_model)} account
        WHERE account.id = %s
    """


class MemberBackend(ModelBackend):
    def get_user(self, user_id: Any) -> Any:
        accounts = get_user_model()._default_manager.raw(_account_sql(), [user_id])
        user: Any = next(iter(accounts), None)
        if user is None or not self.user_can_authenticate(user):
            return None
        if not user.is_superuser:
            # ModelBackend's own cache of the user's permissions (a superuser holds every one
            # without it): what it would read in two statements, read with the account.
            user._perm_cache = set(user.permission_names)
        roles = (entry.split(":", 1) for entry in user.team_roles)
        access.remember_roles(user, {int(team): role for team, role in roles})
        return user
