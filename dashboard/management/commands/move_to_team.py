"""python manage.py move_to_team TEAM --study SLUG ... --dataset SLUG ... --snapshot ID ... [--create]

Moves studies, datasets and snapshots (and with them everything that hangs from them: sessions,
market connections, imports, pairs, training runs) to another team, each move recorded in the
audit log. A study moves with its dataset unless told otherwise, so a team never runs a study
on data it cannot see. The admin moves one object by changing its team field.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from audit import services as audit
from corpus.exclusions import follow_team_exclusions
from corpus.models import Dataset
from crowd.models import Study
from modeling.models import Snapshot
from teams.models import Team


class Command(BaseCommand):
    help = "Move studies, datasets and snapshots to another team (recorded in the audit log)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", help="the slug of the team they move to")
        parser.add_argument("--study", action="append", default=[], help="a study's slug (repeatable)")
        parser.add_argument("--dataset", action="append", default=[], help="a dataset's slug (repeatable)")
        parser.add_argument("--snapshot", action="append", default=[], type=int, help="a snapshot's id (repeatable)")
        parser.add_argument("--create", action="store_true", help="create the team when it does not exist")
        parser.add_argument("--study-only", action="store_true", help="leave a moved study's dataset where it is")
        parser.add_argument("--reason", default="", help="why (kept in the audit log)")

    @transaction.atomic
    def handle(
        self,
        *args: Any,
        team: Any,
        study: Any,
        dataset: Any,
        snapshot: Any,
        create: Any,
        study_only: Any,
        reason: Any,
        **options: Any,
    ) -> None:
        target = Team.objects.filter(slug=team).first()
        if target is None and create:
            target = Team.objects.create(slug=team, name=team)
        if target is None:
            raise CommandError(f"No team '{team}' (add --create to make one).")
        studies = list(Study.objects.select_for_update().filter(slug__in=study))
        datasets = list(Dataset.objects.select_for_update().filter(slug__in=dataset))
        snapshots = list(Snapshot.objects.select_for_update().filter(pk__in=snapshot))
        missing = (
            sorted(set(study) - {s.slug for s in studies})
            + sorted(set(dataset) - {d.slug for d in datasets})
            + sorted(str(pk) for pk in set(snapshot) - {s.pk for s in snapshots})
        )
        if missing:
            raise CommandError(f"Unknown: {', '.join(missing)}; nothing moved.")
        if not study_only:
            datasets += [s.dataset for s in studies if s.dataset not in datasets]
        moved = 0
        rows: list[Dataset | Study | Snapshot] = [*datasets, *studies, *snapshots]
        for row in rows:
            if row.team_id == target.pk:
                continue
            was = row.team_id
            row.team = target
            row.save(update_fields=["team"])
            for team_id in (was, target.pk):  # both teams see the move in their log
                audit.record(
                    "team.moved",
                    subject=row,
                    team_id=team_id,
                    before={"team": was},
                    after={"team": target.pk},
                    reason=reason,
                    datasets=[row.slug] if isinstance(row, Dataset) else [],
                )
            moved += 1
        for dataset_row in datasets:  # the new team's decisions on workers, not the old one's
            follow_team_exclusions(dataset_row)
        self.stdout.write(f"Moved {moved} object(s) to team '{target.slug}'.")
