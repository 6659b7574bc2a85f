"""Adversarial writing rounds (ANLI §2): a target model, the premises it is attacked on, the study
whose workers attack it, and every try they make. One open round per study; closing it trains the
next target and opens the next round on it. An `AdversarialTask` is the adversarial side of one
writing claim (collection.WritingClaim): the target label to reach, and the reason once fooled.
"""

from django.db import models
from django.db.models import Q

from corpus.models import Label


class AdversarialStudy(models.Model):
    study = models.OneToOneField(
        "crowd.Study", on_delete=models.CASCADE, primary_key=True, related_name="adversarial_settings"
    )
    max_tries = models.PositiveSmallIntegerField(
        default=5, help_text="Hypotheses a writer may try on one premise before the task ends unfooled."
    )
    bonus_per_verified_fooled = models.DecimalField(
        max_digits=6, decimal_places=2, default=0, help_text="Bonus recorded in the ledger per verified fooled example."
    )
    tries_per_minute = models.PositiveSmallIntegerField(
        default=12, help_text="Model queries one browser session may make per minute (no free oracle)."
    )

    class Meta:
        verbose_name_plural = "adversarial studies"

    def __str__(self) -> str:
        return f"adversarial settings of {self.study_id}"


class RoundStatus(models.TextChoices):
    OPEN = "open", "open: writers attack its target"
    CLOSING = "closing", "closing: snapshot and next target training"
    CLOSED = "closed", "closed"


class Round(models.Model):
    study = models.ForeignKey("crowd.Study", on_delete=models.CASCADE, related_name="adversarial_rounds")
    number = models.PositiveSmallIntegerField()
    dataset = models.ForeignKey(
        "corpus.Dataset",
        on_delete=models.PROTECT,
        related_name="adversarial_rounds",
        help_text="Holds the round's premises and, once written, its pairs.",
    )
    target_run = models.ForeignKey(
        "modeling.TrainingRun",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="adversarial_target_of",
        help_text="A finished run whose checkpoint is the target (verified by its SHA-256).",
    )
    target_endpoint = models.URLField(
        blank=True, max_length=500, help_text="Or an external model (docs/adversarial.md: the JSON contract)."
    )
    status = models.CharField(max_length=10, choices=RoundStatus.choices, default=RoundStatus.OPEN)
    # What closing asks for: the next target's model and config (the training API's).
    next_model = models.CharField(max_length=20, default="esim")
    next_config = models.JSONField(default=dict, blank=True)
    round_snapshot = models.ForeignKey(
        "modeling.Snapshot",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="This round's data (MultiNLI format).",
    )
    training_snapshot = models.ForeignKey(
        "modeling.Snapshot",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Everything so far: the first target's data and every round's, for the next target.",
    )
    next_run = models.ForeignKey(
        "modeling.TrainingRun", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    next_dataset = models.ForeignKey(
        "corpus.Dataset",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Premises of the next round (default: this round's dataset, its premises with room left).",
    )
    next_test_accuracy = models.FloatField(null=True, blank=True, help_text="Next target on this round's test set.")
    next_test_examples = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    opened_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="one_round_number_per_study"),
            models.UniqueConstraint(fields=["study"], condition=Q(status="open"), name="one_open_round_per_study"),
            models.CheckConstraint(
                condition=(Q(target_run__isnull=False) & Q(target_endpoint=""))
                | (Q(target_run__isnull=True) & ~Q(target_endpoint="")),
                name="round_has_one_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study_id} round {self.number} ({self.status})"

    @property
    def target_description(self) -> str:
        if self.target_run_id:
            return f"training run {self.target_run_id}"
        return self.target_endpoint


class TaskState(models.TextChoices):
    WRITING = "writing", "writing: the model was right so far"
    REASON = "reason", "fooled: waiting for the writer's reason"
    DONE = "done", "done"


class AdversarialTask(models.Model):
    writing_claim = models.OneToOneField(
        "collection.WritingClaim", on_delete=models.CASCADE, related_name="adversarial_task"
    )
    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="tasks")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="adversarial_tasks")
    target_label = models.CharField(max_length=20, choices=Label.choices)
    state = models.CharField(max_length=10, choices=TaskState.choices, default=TaskState.WRITING)
    reason = models.CharField(max_length=300, blank=True, help_text="Why the fooled hypothesis has the target label.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["round", "state"], name="advtask_round_state")]

    def __str__(self) -> str:
        return f"{self.target_label} task of worker {self.worker_id} in round {self.round_id}"


class Verification(models.TextChoices):
    NOT_ASKED = "", "not asked (the model was right)"
    PENDING = "pending", "waiting for verifiers"
    VERIFIED = "verified", "verified: the verifiers' majority agrees with the writer"
    DISCARDED = "discarded", "discarded: the verifiers' majority disagrees with the writer"


class AdversarialTry(models.Model):
    task = models.ForeignKey(AdversarialTask, on_delete=models.CASCADE, related_name="tries")
    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="tries")
    number = models.PositiveSmallIntegerField()
    hypothesis = models.TextField()
    predicted_label = models.CharField(max_length=20)
    probabilities = models.JSONField(help_text="label -> probability, as the target answered.")
    model_fooled = models.BooleanField()
    model_seconds = models.FloatField(help_text="Time the target took to answer.")
    created_at = models.DateTimeField(auto_now_add=True)
    pair = models.OneToOneField(
        "corpus.Pair",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="adversarial_try",
        help_text="The corpus pair made of this try when its task ended (train: every try; dev/test: fooled only).",
    )
    verification = models.CharField(max_length=10, choices=Verification.choices, default="", blank=True)
    writing_evidence = models.OneToOneField(
        "authorship.WritingEvidence",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="adversarial_try",
        help_text="How the try was typed (authorship app); None for a client that sent no record.",
    )

    class Meta:
        ordering = ["task", "number"]
        verbose_name_plural = "adversarial tries"
        constraints = [models.UniqueConstraint(fields=["task", "number"], name="one_try_number_per_task")]
        indexes = [models.Index(fields=["round", "model_fooled"], name="advtry_round_fooled")]

    def __str__(self) -> str:
        return f"try {self.number} of task {self.task_id}: {'fooled' if self.model_fooled else 'not fooled'}"


class TieKind(models.TextChoices):
    WRITER = "writer", "linked to the writer (device, market, network group or correlated group)"
    DEVICE = "device", "the same device or market link as an earlier verifier"
    NETWORK = "network", "the same network group (/24 or /48) as an earlier verifier"
    CORRELATED = "correlated", "in the same correlated-error group as an earlier verifier"


class VerifierTie(models.Model):
    """Why a verifier's label was not counted for a fooled example (adversarial.verification): the
    verifier was tied to the writer or to a verifier counted before them. The example waits for
    verifiers tied to nobody; researchers read the ties on its try."""

    attempt = models.ForeignKey(AdversarialTry, on_delete=models.CASCADE, related_name="verifier_ties")
    verifier = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    tied_to = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=12, choices=TieKind.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["attempt", "verifier"], name="one_tie_per_try_verifier")]

    def __str__(self) -> str:
        return f"verifier {self.verifier_id} of try {self.attempt_id}: {self.kind} with {self.tied_to_id}"
