"""Issue (or revoke) the token a GPU node uses to reach the platform: `Authorization: Worker <key>`."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modeling.models import NodeToken


class Command(BaseCommand):
    help = "Make a node token for a GPU node (prints the key once) or revoke one with --revoke."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="which node or cluster holds it, e.g. gpu-node-1")
        parser.add_argument("--revoke", action="store_true", help="revoke the token of this name")

    def handle(self, *args: Any, name: Any, revoke: Any, **options: Any) -> None:
        if revoke:
            token = NodeToken.objects.filter(name=name, revoked_at__isnull=True).first()
            if token is None:
                raise CommandError(f"no active node token named {name!r}")
            token.revoke()
            self.stdout.write(f"revoked node token {name}")
            return
        if NodeToken.objects.filter(name=name).exists():
            raise CommandError(f"a node token named {name!r} exists; revoke it or choose another name")
        _, key = NodeToken.issue(name)
        self.stdout.write(key)
        self.stderr.write(f"node token {name}: set NODE_TOKEN to the key above on the GPU node; it is not shown again")
