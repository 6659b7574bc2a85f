"""One row per corpus import, so a researcher can follow a long import and read its report."""
from django.db import models

from collection.models import Dataset, ImportStatus, Split


class CorpusImport(models.Model):
    """A run of `import_pairs`: its progress (updated with every chunk) and, at the end, its report."""

    PROBLEMS_KEPT = 100

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="corpus_imports")
    source = models.CharField(max_length=255, help_text="The imported file's name.")
    split = models.CharField(max_length=5, choices=Split.choices)
    status = models.CharField(max_length=10, choices=ImportStatus.choices, default=ImportStatus.RUNNING)
    bytes_total = models.PositiveBigIntegerField(default=0)
    bytes_read = models.PositiveBigIntegerField(default=0)
    lines_read = models.PositiveIntegerField(default=0)
    pairs_created = models.PositiveIntegerField(default=0)
    premises_created = models.PositiveIntegerField(default=0)
    labels_created = models.PositiveIntegerField(default=0)
    already_present = models.PositiveIntegerField(default=0)
    labels_skipped = models.PositiveIntegerField(default=0)
    malformed_count = models.PositiveIntegerField(default=0)
    problems = models.JSONField(default=list, blank=True, help_text="The first malformed lines: [line, reason].")
    error = models.TextField(blank=True, help_text="Why the import stopped, if it failed.")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self):
        return f"{self.source} -> {self.dataset.slug} ({self.status})"

    @property
    def progress(self):
        """Share of the file read, 0–1."""
        if self.status == ImportStatus.DONE:
            return 1.0
        return self.bytes_read / self.bytes_total if self.bytes_total else 0.0
