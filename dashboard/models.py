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
