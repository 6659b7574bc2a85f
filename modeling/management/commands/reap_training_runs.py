"""Fail (or requeue) training runs whose node stopped sending heartbeats; cron-friendly."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from modeling.training.services import reap_stale_runs


class Command(BaseCommand):
    help = "Mark running training runs without a recent heartbeat as failed ('node lost'), or requeue them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--minutes",
            type=float,
            default=None,
            help=f"heartbeat age that counts as lost (default settings.TRAINING_STALE_MINUTES, {float(settings.TRAINING_STALE_MINUTES):g})",
        )
        parser.add_argument("--requeue", action="store_true", help="send them to the gpu queue again instead")

    def handle(self, *args: Any, minutes: Any, requeue: Any, **options: Any) -> None:
        reaped = reap_stale_runs(minutes=minutes, requeue=requeue)
        verb = "requeued" if requeue else "failed"
        for pk in reaped:
            self.stdout.write(f"run {pk}: {verb} (node lost)")
        self.stdout.write(f"{len(reaped)} stale run(s) {verb}")
