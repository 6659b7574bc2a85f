"""python manage.py unlock_login USERNAME"""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from base.login_throttle import unlock_account


class Command(BaseCommand):
    help = (
        "Let an account log in again at once: its failed-login counts and pauses start afresh from every "
        "address (the owner's way back after someone else's failures; docs/quality.md, 'Logins')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, username: Any, **options: Any) -> None:
        User = get_user_model()
        # As the login form looks the account up (NFKC).
        username = User.normalize_username(username)
        if not User.objects.filter(username=username).exists():
            raise CommandError(f"No account '{username}'.")
        unlock_account(username)
        self.stdout.write(f"'{username}' may log in again from every address.")
