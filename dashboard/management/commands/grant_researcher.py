"""python manage.py grant_researcher USERNAME [--create] [--revoke] [--team SLUG] [--role ROLE]"""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from audit import services as audit
from base.permissions import RESEARCHER_GROUP, ensure_researcher_group
from teams.models import Membership, Role, Team, default_team
from teams.services import LastOwnerError, join, keep_an_owner


class Command(BaseCommand):
    help = (
        f"Make an account a researcher: staff (to reach the admin) and in the '{RESEARCHER_GROUP}' group, "
        "whose permissions are what a researcher may do. --revoke takes both away."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the account (asks for no password: set one with changepassword)",
        )
        parser.add_argument("--revoke", action="store_true", help="remove the account from the group and from staff")
        parser.add_argument("--team", default="", help="the team to join (default: the default team)")
        parser.add_argument(
            "--role", default=Role.OWNER, choices=Role.values, help="their role in the team (default: owner)"
        )

    @transaction.atomic
    def handle(
        self,
        *args: Any,
        username: Any,
        create: Any,
        revoke: Any,
        team: Any = "",
        role: Any = Role.OWNER,
        **options: Any,
    ) -> None:
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None and create and not revoke:
            user = User.objects.create_user(username=username)
        if user is None:
            raise CommandError(f"No account '{username}' (add --create to make one).")
        if hasattr(user, "worker"):
            raise CommandError(f"'{username}' is a crowdworker's account; researchers use accounts of their own.")
        group = ensure_researcher_group()
        if revoke:
            user.groups.remove(group)
            user.is_staff = False
            user.save(update_fields=["is_staff"])
            self.stdout.write(f"'{username}' is no longer a researcher.")
            return
        user.groups.add(group)
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        chosen = Team.objects.filter(slug=team).first() if team else default_team()
        if chosen is None:
            raise CommandError(f"No team '{team}'.")
        current = Membership.objects.filter(team=chosen, user=user).first()
        if current is not None:
            try:
                keep_an_owner(current, role)
            except LastOwnerError as error:
                raise CommandError(str(error)) from error
        membership = join(user, chosen, role)
        audit.record("team.member_added", subject=membership, team_id=chosen.pk, after={"user": username, "role": role})
        self.stdout.write(
            f"'{username}' is a researcher (group '{RESEARCHER_GROUP}', staff), {role} of '{chosen.slug}'."
        )
