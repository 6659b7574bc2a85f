"""`manage.py erase_participant --market-id ID [--team SLUG] --reason TEXT`: erase a participant."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from privacy.selectors import find_participant
from privacy.services import erase_participant

from .participant_data import team_ids_named


class Command(BaseCommand):
    help = (
        "Erase a participant's personal data as the register says; their contributions are kept pseudonymous "
        "or deleted as each study's policy says, every figure recomputed in the same transaction."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--market-id", required=True, help="PROLIFIC_PID or MTurk workerId.")
        parser.add_argument("--team", help="The team's slug (default: the first team the participant took part in).")
        parser.add_argument("--reason", default="", help="Why (e.g. the request it answers); kept in the audit log.")

    def handle(self, *args: Any, **options: Any) -> None:
        found = find_participant(options["market_id"], team_ids_named(options["team"]))
        if found is None:
            raise CommandError(f"No participant with the id {options['market_id']!r}: nothing was changed.")
        worker, team_id = found
        record = erase_participant(worker, team_id=team_id, reason=options["reason"])
        self.stdout.write(f"Erased (record {record.pk}, {record.subject_hash}, contributions: {record.policy}).")
        for name, n in sorted(record.counts.items()):
            self.stdout.write(f"  {name}: {n}")
