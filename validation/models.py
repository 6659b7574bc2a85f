"""Validation claims (a validator's batch of pairs) and who may validate a dataset.

The labels themselves are the core's (`corpus.models.ValidationLabel`).
"""

import uuid

from django.db import models

from corpus.models import Dataset, Pair, Worker
from crowd.models import TaskClaim


class ValidationClaim(TaskClaim):
    """One pair of a validator's batch of five, held until they submit or it expires."""

    batch = models.UUIDField(default=uuid.uuid4, db_index=True)
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="validation_claims")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="validation_claims")
    # A catch trial looks like any other pair to the worker; its label is scored
    # (`quality.catch_trials.score_catch_trials`), never added to the pair's labels, and it takes no place on the pair.
    is_catch_trial = models.BooleanField(default=False)

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            # A worker never validates the same pair twice (nor is offered it twice).
            models.UniqueConstraint(fields=["pair", "worker"], name="one_validation_claim_per_pair_worker"),
        ]
        indexes = [models.Index(fields=["pair", "status", "expires_at"], name="valclaim_pair_open")]


class ValidationPolicy(models.Model):
    """Who may validate a dataset's pairs: anyone, or only the closed pool of trusted workers (SNLI §2.2)."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, related_name="validation_policy")
    trusted_only = models.BooleanField(
        default=False, help_text="Only workers marked trusted are offered this dataset's pairs."
    )

    class Meta:
        verbose_name_plural = "validation policies"

    def __str__(self):
        return f"{self.dataset}: {'trusted workers only' if self.trusted_only else 'open to all'}"
