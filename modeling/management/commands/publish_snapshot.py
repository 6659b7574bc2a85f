"""Copy a done snapshot's files into the snapshot storage, for a snapshot exported before exports stored them there."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from base.long_tasks import JobStatus
from modeling.models import Snapshot
from modeling.snapshots.files import SnapshotFilesMissing, snapshot_file_names, snapshot_storage, stored_name
from modeling.snapshots.format import MANIFEST_NAME
from modeling.training.storage import publish_snapshot


class Command(BaseCommand):
    help = (
        "Copy a done snapshot's files from its export folder on this host into the snapshot storage "
        "(object storage). Exports store their files themselves; this is for snapshots made before they did."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("snapshot", type=int)

    def handle(self, *args: Any, snapshot: Any, **options: Any) -> None:
        found = Snapshot.objects.filter(pk=snapshot).first()
        if found is None or found.status != JobStatus.DONE:
            raise CommandError(f"snapshot {snapshot} does not exist or is not done")
        copied = publish_snapshot(found)
        storage = snapshot_storage()
        try:
            names = snapshot_file_names(found)
        except SnapshotFilesMissing:
            names = [MANIFEST_NAME]  # not even its manifest is reachable from here
        missing = [name for name in names if not storage.exists(stored_name(found.pk, name))]
        if missing:
            raise CommandError(
                f"snapshot {snapshot}: {', '.join(missing)} not in the snapshot storage and not in a folder "
                f"on this host ({found.directory or 'no folder recorded'}); run this on the host that exported it"
            )
        self.stdout.write(
            f"snapshot {snapshot}: {len(copied)} file(s) copied" + (f": {', '.join(copied)}" if copied else "")
        )
