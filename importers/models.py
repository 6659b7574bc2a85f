"""One row per corpus import, so a researcher can follow a long import and read its report."""

from django.db import models

from corpus.models import Dataset, ImportRun, Split


class CorpusImport(ImportRun):
    """A run of `import_pairs`: its progress (updated with every chunk) and, at the end, its report."""

    PROBLEMS_KEPT = 100

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="corpus_imports")
    source = models.CharField(max_length=255, help_text="The imported file's name.")
    split = models.CharField(max_length=5, choices=Split.choices)
    lines_read = models.PositiveIntegerField(default=0)
    pairs_created = models.PositiveIntegerField(default=0)
    premises_created = models.PositiveIntegerField(default=0)
    labels_created = models.PositiveIntegerField(default=0)
    already_present = models.PositiveIntegerField(default=0)
    labels_skipped = models.PositiveIntegerField(default=0)
    malformed_count = models.PositiveIntegerField(default=0)
    problems = models.JSONField(default=list, blank=True, help_text="The first malformed lines: [line, reason].")
    # A dashboard upload's import (base/uploads.py): the file's name in the "uploads"
    # storage until the import ends, and what the worker needs to run (or restart) it from the row.
    upload = models.CharField(max_length=255, blank=True, help_text="The upload's name in storage, while it waits.")
    default_genre = models.CharField(max_length=64, blank=True, help_text="The genre of rows that name none.")

    class Meta(ImportRun.Meta):
        # The table kept the name of the app's first label, `corpora` (importers/migrations/0001).
        db_table = "corpora_corpusimport"

    def __str__(self) -> str:
        return f"{self.source} -> {self.dataset.slug} ({self.status})"
