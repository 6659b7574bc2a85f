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


class CatchTrialAnswer(models.Model):
    """A worker's label on a catch trial served in their validation batch, scored against the
    researcher's reference label at submit time.

    A catch-trial label is kept here and NOT in the pair's labels: it never moves the pair's
    counters or gold label (the pair is the researchers' yardstick, not a pair being validated).
    """

    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="catch_trial_answers")
    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="catch_trial_answers")
    study_session = models.ForeignKey(
        "crowd.StudySession", on_delete=models.SET_NULL, null=True, blank=True, related_name="catch_trial_answers"
    )
    batch = models.UUIDField(help_text="The validation batch it was served in.")
    label = models.CharField(max_length=20, choices=Label.choices)
    expected = models.CharField(max_length=20, choices=Label.choices, help_text="The reference label at submit time.")
    matched = models.BooleanField()
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A catch trial is served to a worker once (their claims are unique per pair too).
            models.UniqueConstraint(fields=["worker", "pair"], name="one_catch_answer_per_worker_pair"),
        ]

    def __str__(self):
        return f"{self.worker_id} on {self.pair_id}: {self.label} ({'match' if self.matched else 'no match'})"


class BonusKind(models.TextChoices):
    EARNED = "earned", "earned"
    PAID = "paid", "paid"


class LedgerIsAppendOnly(Exception):
    pass


class BonusEntry(models.Model):
    """The bonus ledger: one row per bonus earned; paying one adds a `paid` row that points at it.

    Rows are never edited nor deleted (the model refuses, and on PostgreSQL a trigger refuses
    UPDATE and DELETE too). Two constraints keep the money right: an earned bonus is counted once
    per worker, catch item and study session; a `paid` row names its earned row uniquely, so
    nothing is paid twice.
    """

    kind = models.CharField(max_length=6, choices=BonusKind.choices)
    worker = models.ForeignKey("corpus.Worker", on_delete=models.PROTECT, related_name="bonus_entries")
    study = models.ForeignKey("crowd.Study", on_delete=models.PROTECT, related_name="bonus_entries")
    study_session = models.ForeignKey(
        "crowd.StudySession", on_delete=models.PROTECT, related_name="bonus_entries",
        help_text="The Prolific session / MTurk assignment the bonus belongs to.",
    )
    pair = models.ForeignKey(
        "corpus.Pair", on_delete=models.PROTECT, related_name="bonus_entries", help_text="The catch item."
    )
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=200)
    pays = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="payment",
        help_text="For a paid row: the earned row it pays.",
    )
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "bonus entries"
        constraints = [
            models.UniqueConstraint(
                fields=["worker", "pair", "study_session"], condition=models.Q(kind="earned"),
                name="one_bonus_per_worker_catch_session",
            ),
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="bonus_amount_positive"),
            models.CheckConstraint(
                condition=(models.Q(kind="earned", pays__isnull=True) | models.Q(kind="paid", pays__isnull=False)),
                name="paid_rows_name_what_they_pay",
            ),
        ]
        indexes = [models.Index(fields=["study", "kind"], name="bonus_study_kind")]

    def __str__(self):
        return f"{self.kind} {self.amount} {self.currency} to {self.worker_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise LedgerIsAppendOnly("Bonus ledger rows are never edited; add a row instead.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise LedgerIsAppendOnly("Bonus ledger rows are never deleted.")
