"""The authentication backend of researchers: Django's ModelBackend, whose signed-in user arrives with
their permissions and their roles in every team in the statement that reads the account.

Every researcher page asks whether the user holds the research permission (`base.permissions`) and
which teams they reach in which role (`teams.access`). A superuser answers both without the
database; any other researcher would pay a statement for their own permissions, one for their
groups' and one for their memberships on every request. Here the three ride on the user's row (two
array subqueries of a few rows each), kept on the user object for the request: Django keeps the
permissions there the same way once read (`ModelBackend.get_all_permissions`), and `teams.access`
reads the roles from there (`access.remember_roles`). A permission changed during a request is seen
from the next request on, as with Django's own permission cache; a membership saved or deleted
during it is read again at once (`teams.access`).

The statement is written out: built by the ORM (two array subqueries, a union of joins) its
compiling cost more than running it, on every request. Participants are signed in by `crowd.views`
with ModelBackend itself, so their requests read their account as before.
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
