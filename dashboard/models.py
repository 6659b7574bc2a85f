"""What the dashboard itself keeps: the pair browser's bulk actions, each a record its history
lists and its undo marks."""

from django.conf import settings
from django.db import models


class BulkActionKind(models.TextChoices):
    RETIRE = "retire", "retired"
    ADJUDICATE = "adjudicate", "sent to adjudication"
    EXCLUDE = "exclude", "kept out of the next snapshots"


class PairBulkAction(models.Model):
    """One bulk action of the pair browser: which batch (the token its undo takes), what it did to
    how many pairs of which teams, and whether it was undone. Undone is a state of the row, never
    inferred from the rows the batch left."""

    token = models.CharField(max_length=12, unique=True)
    kind = models.CharField(max_length=12, choices=BulkActionKind.choices)
    teams = models.ManyToManyField("teams.Team", related_name="pair_bulk_actions")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    described = models.CharField(max_length=300, help_text="The filters, as the page named the pairs.")
    reason = models.CharField(max_length=100)
    changed = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    undone_count = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.changed} pairs {self.get_kind_display()} ({self.token})"


class WorkerTableScope(models.Model):
    """When the workers page's table of one scope and split (`corpus.scope.Scope.key`) was
    last computed. Its `WorkerTableRow`s are written with it, in one transaction."""

    key = models.CharField(max_length=200, unique=True)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"workers table of {self.key} as of {self.computed_at:%Y-%m-%d %H:%M}"


class WorkerTableRow(models.Model):
    """One worker's row of the workers page's table as computed at its scope's `computed_at`: kept
    with a column per figure so the page sorts and pages the table in SQL and reads only the rows
    it shows, whatever the crowd's size."""

    scope = models.ForeignKey(WorkerTableScope, on_delete=models.CASCADE, related_name="rows")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    name = models.TextField()  # as `Worker.named` names them
    # The name as the table sorts it (Python's case folding, compared by code point: SQL's lower()
    # and collations fold and order differently).
    name_key = models.TextField()
    username = models.CharField(max_length=150)
    market = models.CharField(max_length=20)
    is_trusted = models.BooleanField()
    is_excluded = models.BooleanField()
    pairs_written = models.PositiveIntegerField()
    author_gold = models.FloatField(null=True)
    labels_given = models.PositiveIntegerField()
    gold_agreement = models.FloatField(null=True)
    median_writing_seconds = models.FloatField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "worker"], name="one_worker_table_row_per_worker")]

    def __str__(self) -> str:
        return f"{self.name} in {self.scope_id}"
