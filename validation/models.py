"""Validation claims (a validator's batch of pairs) and who may validate a dataset.

The labels themselves are the core's (`corpus.models.ValidationLabel`).
"""

import uuid

from django.conf import settings
from django.db import models

from corpus.models import Dataset, Label, Pair, Tally, Worker
from crowd.models import TaskClaim


class ValidationClaim(TaskClaim):
    """One pair of a validator's batch of five, held until they submit or it expires."""

    DATASET_PATH = "pair__dataset"

    batch = models.UUIDField(default=uuid.uuid4, db_index=True)
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="validation_claims")
    # No index of its own: the unique (pair, worker) and `valclaim_pair_open` lead with it, and each
    # index more is one more write in every claim.
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="validation_claims", db_index=False)
    # A catch trial looks like any other pair to the worker; its label is scored, never added to the
    # pair's labels, and it takes no place on the pair.
    is_catch_trial = models.BooleanField(default=False)
    # The claim the cost page credits its pair's outcome to (`validation.credits`). The database
    # default serves raw INSERTs that do not name it (the claim statement, bench/costs_page.py).
    credited = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            # A worker never validates the same pair twice (nor is offered it twice).
            models.UniqueConstraint(fields=["pair", "worker"], name="one_validation_claim_per_pair_worker")
        ]
        indexes = [
            models.Index(fields=["pair", "status", "expires_at"], name="valclaim_pair_open"),
            # The open claims, by pair: a pair's live claims and the beat's release of expired ones.
            # Led by the pair, so that no plan counts one pair's live claims by walking every open
            # claim (an index on the expiry alone was that plan whenever the statistics were stale).
            models.Index(
                fields=["pair", "expires_at"],
                include=["is_catch_trial"],
                condition=models.Q(status="open"),
                name="valclaim_open",
            ),
            # The open claims, by session: a study page's live claims, its sessions' own few. Through
            # the pair's index (or the session's key alone) every session of a study read every open
            # claim of the crowd.
            models.Index(
                fields=["study_session", "expires_at"], condition=models.Q(status="open"), name="valclaim_session_open"
            ),
            # A pair's catch servings (counted for every candidate of a claim that may carry a catch
            # trial): with no index of their own each count walked every claim of the pair.
            models.Index(fields=["pair"], condition=models.Q(is_catch_trial=True), name="valclaim_catch"),
            # The cost page's credit read and the submit's clearing of a pair's earlier credit.
            models.Index(fields=["pair"], condition=models.Q(credited=True), name="valclaim_credited"),
        ]


class SessionServed(models.Model):
    """The validation batches and catch trials one study session was served, summed over the study's
    sessions to keep its catch share (counting its claims instead read every claim it ever made on
    every claim). One row a session, so the claims of different workers never wait on each other's
    row. A claim deleted with its pair stays counted."""

    study_session = models.OneToOneField(
        "crowd.StudySession", on_delete=models.CASCADE, primary_key=True, related_name="validation_served"
    )
    batches = models.PositiveIntegerField(default=0)
    catch_trials = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"session {self.study_session_id}: {self.batches} batches, {self.catch_trials} catch trials"


class BoughtLabelTally(Tally):
    """Validation labels bought per study × dataset × split × genre, as signed deltas in the core's
    pattern (`validation.cost_tally`): the cost page sums them instead of joining every claim."""

    study = models.ForeignKey("crowd.Study", on_delete=models.CASCADE, related_name="+")

    class Meta(Tally.Meta):
        verbose_name_plural = "bought label tallies"


class CreditedPairTally(Tally):
    """Pairs credited to a study (`ValidationClaim.credited`) per study × dataset × split × genre ×
    the pair's counters, imported gold and early stop: the cost page's per-study gold labels, labels
    saved and finished pairs are sums of these rows (adjudicated pairs set right when read)."""

    study = models.ForeignKey("crowd.Study", on_delete=models.CASCADE, related_name="+")
    label_count = models.SmallIntegerField()
    entailment_votes = models.SmallIntegerField()
    neutral_votes = models.SmallIntegerField()
    contradiction_votes = models.SmallIntegerField()
    imported_gold = models.CharField(max_length=20, blank=True, default="")
    stopped_early = models.BooleanField(default=False)

    class Meta(Tally.Meta):
        verbose_name_plural = "credited pair tallies"


class ValidationPolicy(models.Model):
    """Who may validate a dataset's pairs: anyone, or only the closed pool of trusted workers (SNLI §2.2)."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, related_name="validation_policy")
    trusted_only = models.BooleanField(
        default=False, help_text="Only workers marked trusted are offered this dataset's pairs."
    )

    class Meta:
        verbose_name_plural = "validation policies"

    def __str__(self) -> str:
        return f"{self.dataset}: {'trusted workers only' if self.trusted_only else 'open to all'}"


# --- per-premise labels of MPE items (Lai et al. 2017 §5.2, Table 4) -----------------------------

PREMISE_LABELS_PER_PAIR = 3  # "Each consensus label is based on three judgments."


class PremisePair(models.Model):
    """One premise sentence of a multi-premise item with the item's hypothesis: a single-premise
    (SPE) pair that wants three judgments (MPE §5.2). It is what claims and submits lock, and it keeps
    the counts and the consensus that `premise_labels` moves with each label."""

    item = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="premise_pairs")
    index = models.PositiveSmallIntegerField(help_text="0-based position of the premise in the item's sentences.")
    label_count = models.PositiveSmallIntegerField(default=0)
    entailment_votes = models.PositiveSmallIntegerField(default=0)
    neutral_votes = models.PositiveSmallIntegerField(default=0)
    contradiction_votes = models.PositiveSmallIntegerField(default=0)
    consensus = models.CharField(
        max_length=20, default="-", help_text="The label of at least 2 of the 3 judgments, else '-' (also until 3)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "index"]
        constraints = [
            models.UniqueConstraint(fields=["item", "index"], name="one_premise_pair_per_item_index"),
            models.CheckConstraint(
                condition=models.Q(label_count__lte=PREMISE_LABELS_PER_PAIR), name="premise_pair_at_most_three_labels"
            ),
        ]
        indexes = [models.Index(fields=["label_count", "id"], name="premise_pair_queue")]

    def __str__(self) -> str:
        return f"{self.item.pair_id} premise {self.index}"


class PremiseLabelClaim(TaskClaim):
    """One premise-hypothesis pair of a worker's batch, held until they submit or it expires."""

    DATASET_PATH = "premise_pair__item__dataset"

    batch = models.UUIDField(default=uuid.uuid4, db_index=True)
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="premise_label_claims")
    premise_pair = models.ForeignKey(PremisePair, on_delete=models.CASCADE, related_name="claims")

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            models.UniqueConstraint(fields=["premise_pair", "worker"], name="one_premise_claim_per_pair_worker")
        ]
        indexes = [models.Index(fields=["premise_pair", "status", "expires_at"], name="premclaim_pair_open")]


class PremiseLabel(models.Model):
    """One worker's label of one premise-hypothesis pair of an MPE item (unique per item, premise
    index and worker: the premise pair is unique per item and index)."""

    premise_pair = models.ForeignKey(PremisePair, on_delete=models.CASCADE, related_name="labels")
    worker = models.ForeignKey(Worker, on_delete=models.SET_NULL, null=True, blank=True, related_name="premise_labels")
    label = models.CharField(max_length=20, choices=Label.choices)
    seconds = models.FloatField(null=True, blank=True, help_text="Time the worker spent on the batch / its size.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["premise_pair", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["premise_pair", "worker"], name="one_premise_label_per_pair_worker")
        ]

    def __str__(self) -> str:
        return f"{self.premise_pair}: {self.label}"


class GrammaticalityClaim(TaskClaim):
    """One hypothesis of a judge's page of the grammaticality task (DNC App. B.4), held until they
    submit or it expires, so that two judges at once are never offered its last place."""

    DATASET_PATH = "pair__dataset"

    batch = models.UUIDField(default=uuid.uuid4, db_index=True)
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="grammaticality_claims")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="grammaticality_claims")

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "worker"], name="one_grammaticality_claim_per_pair_worker")
        ]
        indexes = [models.Index(fields=["pair", "status", "expires_at"], name="gramclaim_pair_open")]


class AdjudicationRequest(models.Model):
    """A pair a researcher sent to the adjudication page's "sent" queue, until a researcher decides
    it. Sent in batches (`token`), so one click takes a batch back."""

    pair = models.OneToOneField(Pair, on_delete=models.CASCADE, related_name="adjudication_request")
    token = models.CharField(max_length=12, db_index=True)
    reason = models.CharField(max_length=100)
    researcher = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.pair_id} sent ({self.reason})"
