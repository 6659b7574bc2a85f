"""python manage.py create_team SLUG --name NAME --owner USERNAME [--create-owner]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.team_members import MembershipRefusedError, create_team


class Command(BaseCommand):
    help = (
        "Create a team (a second lab's workspace) and its first owner, who then invites the lab's "
        "members from the dashboard's Team page (docs/teams.md, 'A second lab')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the team's short name in URLs and dataset names (letters, digits, hyphens)")
        parser.add_argument("--name", required=True, help="the team's name as pages show it")
        parser.add_argument("--owner", required=True, help="the username of the team's first owner")
        parser.add_argument(
            "--create-owner",
            action="store_true",
            help="create the owner's account (prints a one-time link where its password is set)",
        )

    def handle(self, *args: Any, slug: Any, name: Any, owner: Any, create_owner: Any, **options: Any) -> None:
        try:
            team, invitation = create_team(slug, name=name, owner=owner, create_owner=create_owner)
        except MembershipRefusedError as error:
            raise CommandError(f"{error} No team was created.") from error
        self.stdout.write(f"Team '{team.slug}' ({team.name}) created; '{owner}' is its owner.")
        if invitation.set_password_path:
            self.stdout.write(
                f"'{owner}' sets a password once at the site's address followed by {invitation.set_password_path} "
                f"(valid for a limited time; `manage.py changepassword {owner}` sets one instead)."
            )
