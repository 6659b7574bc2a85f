"""Issue (or revoke) the token a GPU node uses to reach the platform: `Authorization: Worker <key>`."""

from django.core.management.base import BaseCommand, CommandError

from modeling.models import WorkerToken


class Command(BaseCommand):
    help = "Make a worker token for a GPU node (prints the key once) or revoke one with --revoke."

    def add_arguments(self, parser):
        parser.add_argument("name", help="which node or cluster holds it, e.g. gpu-node-1")
        parser.add_argument("--revoke", action="store_true", help="revoke the token of this name")

    def handle(self, *args, name, revoke, **options):
        if revoke:
            token = WorkerToken.objects.filter(name=name, revoked_at__isnull=True).first()
            if token is None:
                raise CommandError(f"no active worker token named {name!r}")
            token.revoke()
            self.stdout.write(f"revoked worker token {name}")
            return
        if WorkerToken.objects.filter(name=name).exists():
            raise CommandError(f"a worker token named {name!r} exists; revoke it or choose another name")
        _, key = WorkerToken.issue(name)
        self.stdout.write(key)
        self.stderr.write(
            f"worker token {name}: set WORKER_TOKEN to the key above on the GPU node; it is not shown again"
        )
