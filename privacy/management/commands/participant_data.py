"""`manage.py participant_data --market-id ID [--team SLUG]`: everything held about a participant, as JSON."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder

from privacy.selectors import find_participant
from privacy.services import download_participant_data
from teams.models import Team


def team_ids_named(slug: str | None) -> set[int] | None:
    if not slug:
        return None
    team = Team.objects.filter(slug=slug).first()
    if team is None:
        raise CommandError(f"No team {slug!r}.")
    return {team.pk}


class Command(BaseCommand):
    help = "Print, as JSON, everything the platform holds about a participant (recorded in the audit log)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--market-id", required=True, help="PROLIFIC_PID or MTurk workerId.")
        parser.add_argument("--team", help="The team's slug (default: any team the participant took part in).")

    def handle(self, *args: Any, **options: Any) -> None:
        found = find_participant(options["market_id"], team_ids_named(options["team"]))
        if found is None:
            raise CommandError(f"No participant with the id {options['market_id']!r}: nothing was read.")
        worker, team_id = found
        data = download_participant_data(worker, team_id=team_id)
        self.stdout.write(json.dumps(data, cls=DjangoJSONEncoder, indent=2))
