"""Copy a done snapshot's files into the object store (OBJECT_STORAGE_BUCKET), for a web tier without the export's disk."""

from django.core.management.base import BaseCommand, CommandError

from annotation_site.long_tasks import JobStatus
from modeling.models import Snapshot
from modeling.training.storage import publish_snapshot


class Command(BaseCommand):
    help = "Copy a done snapshot's files from SNAPSHOT_DIR into the snapshot storage (object storage)."

    def add_arguments(self, parser):
        parser.add_argument("snapshot", type=int)

    def handle(self, *args, snapshot, **options):
        found = Snapshot.objects.filter(pk=snapshot).first()
        if found is None or found.status != JobStatus.DONE:
            raise CommandError(f"snapshot {snapshot} does not exist or is not done")
        copied = publish_snapshot(found)
        self.stdout.write(
            f"snapshot {snapshot}: {len(copied)} file(s) copied" + (f": {', '.join(copied)}" if copied else "")
        )
