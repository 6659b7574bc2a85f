"""What quality control stores: researchers' own labels on pairs (the reference that catch trials
and qualification tests are scored against).

The pure statistics (flags, aggregation) stay free of Django in `flags.py` and `aggregation.py`.
"""
from django.conf import settings
from django.db import models

from corpus.models import Label


class ReferenceLabel(models.Model):
    """A researcher's own label for a pair: the answer catch trials and qualification items expect.

    A pair has at most one reference label; a researcher relabelling it replaces the answer.
    """

    pair = models.OneToOneField("corpus.Pair", on_delete=models.CASCADE, related_name="reference_label")
    label = models.CharField(max_length=20, choices=Label.choices)
    labelled_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    is_catch_trial = models.BooleanField(
        default=False, help_text="Mixed into validation batches, unmarked, to check the validator."
    )
    note = models.CharField(max_length=300, blank=True, help_text="Why this is the answer (shown to researchers only).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["pair"], condition=models.Q(is_catch_trial=True), name="catch_trial_pairs"),
        ]

    def __str__(self):
        return f"{self.pair_id}: {self.label}"
