"""Validation claims and labels.

Every label a pair has lives here, the author's included (position 1), so that gold labels
can always be recomputed from this table alone. Imported labels have no worker but keep
their position (label1 = the author's).
"""
import uuid

from django.db import models
from django.db.models import Q

from collection.models import ClaimStatus, Label, Pair, Worker


class ValidationLabel(models.Model):
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="labels")
    worker = models.ForeignKey(Worker, on_delete=models.SET_NULL, null=True, blank=True, related_name="labels")
    position = models.PositiveSmallIntegerField(help_text="1 is the author's label; 2–5 are validation labels.")
    label = models.CharField(max_length=20, choices=Label.choices)
    seconds = models.FloatField(null=True, blank=True, help_text="Time the validator spent on the batch / 5.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "position"], name="one_label_per_position"),
            models.UniqueConstraint(
                fields=["pair", "worker"], condition=Q(worker__isnull=False), name="one_label_per_pair_worker"
            ),
            models.CheckConstraint(condition=Q(position__gte=1) & Q(position__lte=5), name="position_1_to_5"),
        ]
        indexes = [models.Index(fields=["worker", "created_at"], name="label_worker_time")]

    def __str__(self):
        return f"{self.pair.pair_id} #{self.position}: {self.label}"


class ValidationClaim(models.Model):
    """One pair of a validator's batch of five, held until they submit or it expires."""

    batch = models.UUIDField(default=uuid.uuid4, db_index=True)
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="validation_claims")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="validation_claims")
    study_session = models.ForeignKey(
        "collection.StudySession", on_delete=models.SET_NULL, null=True, blank=True
    )
    status = models.CharField(max_length=10, choices=ClaimStatus.choices, default=ClaimStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            # A worker never validates the same pair twice (nor is offered it twice).
            models.UniqueConstraint(fields=["pair", "worker"], name="one_validation_claim_per_pair_worker"),
        ]
        indexes = [models.Index(fields=["pair", "status", "expires_at"], name="valclaim_pair_open")]


class ValidationPolicy(models.Model):
    """Who may validate a dataset's pairs: anyone, or only the closed pool of trusted workers (SNLI §2.2)."""

    dataset = models.OneToOneField(
        "collection.Dataset", on_delete=models.CASCADE, related_name="validation_policy"
    )
    trusted_only = models.BooleanField(
        default=False, help_text="Only workers marked trusted are offered this dataset's pairs."
    )

    class Meta:
        verbose_name_plural = "validation policies"

    def __str__(self):
        return f"{self.dataset}: {'trusted workers only' if self.trusted_only else 'open to all'}"
