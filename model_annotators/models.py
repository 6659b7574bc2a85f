"""Model annotators: who the model is, what it was asked, what it answered. A model annotator is
never a `corpus.Worker` (no crowd id, never paid) and its labels live in `ModelLabel`, never in
`corpus.ValidationLabel`, so gold labels, κ, α and releases stay human-only. Endpoint credentials
are sealed like market credentials (`markets.sealing`)."""

from django.conf import settings
from django.db import models

from base.long_tasks import JobStatus, LongTask


class AnnotatorKind(models.TextChoices):
    RUN = "run", "a finished training run of this platform"
    ENDPOINT = "endpoint", "an OpenAI-compatible chat endpoint"


class TaskKind(models.TextChoices):
    """What the model is asked: which prompt of the annotator is used, by the pair's dataset."""

    VALIDATION = "validation", "validation (entailment / neutral / contradiction)"
    MPE = "mpe", "MPE judgment (several premises, one hypothesis)"
    TWO_WAY = "two_way", "two-way recast (entailed / not-entailed)"
    WRITING = "writing", "writing check (is the hypothesis sensible, does it fit its intended label?)"


class JobTask(models.TextChoices):
    LABELS = "labels", "label the pairs"
    WRITING_CHECKS = "writing", "check the writing (nonsense, or not its intended label)"


class Verdict(models.TextChoices):
    FITS = "fits", "fits its intended label"
    DOES_NOT_FIT = "does_not_fit", "does not fit its intended label"
    NONSENSE = "nonsense", "nonsense"


class ModelAnnotator(models.Model):
    name = models.CharField(max_length=100)
    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.CASCADE, related_name="model_annotators")
    study = models.ForeignKey(
        "crowd.Study", on_delete=models.SET_NULL, null=True, blank=True, related_name="model_annotators"
    )
    kind = models.CharField(max_length=10, choices=AnnotatorKind.choices)
    training_run = models.ForeignKey(
        "modeling.TrainingRun", on_delete=models.PROTECT, null=True, blank=True, related_name="model_annotators"
    )
    # Text, not a URLField: Django's URL check refuses a lab's host without a top-level domain (gpu-node).
    base_url = models.CharField(
        max_length=500, blank=True, help_text="e.g. http://gpu-node:8000/v1 (a vLLM or Ollama server)."
    )
    model_name = models.CharField(max_length=200, blank=True)
    temperature = models.FloatField(default=0.0)
    # A Fernet token of the API key (markets.sealing); never the key itself. Empty: no key sent.
    sealed_api_key = models.TextField(blank=True)
    requests_per_minute = models.PositiveIntegerField(default=60)
    max_retries = models.PositiveSmallIntegerField(default=3)
    timeout_seconds = models.FloatField(default=30.0)
    # Prices of the endpoint, for the cost per thousand labels (0 for a run of the platform).
    price_per_million_input_tokens = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    price_per_million_output_tokens = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    currency = models.CharField(max_length=3, default="USD")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset_id", "name", "pk"]
        constraints = [
            models.CheckConstraint(
                name="model_annotator_kind_fields",
                condition=(models.Q(kind="run", training_run__isnull=False))
                | (
                    models.Q(kind="endpoint", training_run__isnull=True)
                    & ~models.Q(base_url="")
                    & ~models.Q(model_name="")
                ),
            )
        ]

    def __str__(self) -> str:
        return f"model {self.name} ({self.kind}) on {self.dataset_id}"


class PromptVersion(models.Model):
    """One version of an endpoint annotator's prompt for one task kind. Versions are never edited:
    a new text is a new version, and each label names the version it was asked with."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="prompts")
    task_kind = models.CharField(max_length=10, choices=TaskKind.choices)
    version = models.PositiveIntegerField()
    system = models.TextField()
    template = models.TextField(help_text="{premise} and {hypothesis} are filled in.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotator_id", "task_kind", "-version"]
        constraints = [models.UniqueConstraint(fields=["annotator", "task_kind", "version"], name="one_prompt_version")]

    def __str__(self) -> str:
        return f"{self.task_kind} v{self.version}"


class Outcome(models.TextChoices):
    LABELLED = "labelled", "labelled"
    UNPARSEABLE = "unparseable", "answer not parseable (recorded, never guessed)"
    FAILED = "failed", "no answer after retries"


class ModelLabel(models.Model):
    """What one model annotator answered for one pair under one prompt version (`asked_with`:
    "run-12" for a training run, "validation-v2" for an endpoint's prompt)."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="labels")
    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="model_labels")
    asked_with = models.CharField(max_length=40)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    # A core label (corpus.labels.LABELS, two-way answers stored as corpus.labels.to_stored does); "" unless labelled.
    label = models.CharField(max_length=20, blank=True)
    reason = models.CharField(max_length=300, blank=True, help_text="An LLM's one-sentence reason.")
    raw_answer = models.TextField(blank=True, help_text="The answer as it came (first 2,000 characters).")
    error = models.CharField(max_length=300, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "pair", "asked_with"], name="one_model_label_per_prompt"),
        ]
        indexes = [models.Index(fields=["pair", "annotator"], name="model_label_pair")]

    def __str__(self) -> str:
        return f"{self.annotator_id} on {self.pair_id}: {self.label or self.outcome}"


class LabellingJob(LongTask):
    """A long task (base/long_tasks.py): the annotator labels the pairs of its dataset
    it has not labelled under its current prompt, the calibration split's or all of them."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="jobs")
    scope = models.CharField(
        max_length=12, choices=[("calibration", "the calibration split"), ("all", "every pair")], default="calibration"
    )
    task = models.CharField(max_length=10, choices=JobTask.choices, default=JobTask.LABELS)
    limit = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.PENDING)
    progress = models.FloatField(default=0.0, help_text="0–1 while running.")
    stage = models.CharField(max_length=100, blank=True)
    pairs_total = models.PositiveIntegerField(default=0)
    pairs_done = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"labelling job {self.pk} of {self.annotator_id} ({self.status})"


class Calibration(models.Model):
    """The annotator measured like a person, on pairs of its calibration split (`figures`:
    model_annotators.calibration.calibrate's dict). The latest row is the one that counts."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="calibrations")
    asked_with = models.CharField(max_length=40)
    pairs = models.PositiveIntegerField(default=0)
    accuracy = models.FloatField(null=True, blank=True)
    figures = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"calibration of {self.annotator_id} on {self.pairs} pairs"


class ModelUse(models.Model):
    """What a study lets its model annotators do. Every use is off by default."""

    study = models.OneToOneField("crowd.Study", on_delete=models.CASCADE, related_name="model_use")
    triage_annotator = models.ForeignKey(
        ModelAnnotator,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Pairs where this model disagrees with the writer's label are validated first.",
    )
    vote_annotator = models.ForeignKey(
        ModelAnnotator,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Two humans and this model agreeing stop a pair, if its calibration accuracy passes the threshold.",
    )
    vote_min_accuracy = models.FloatField(default=0.95)
    vote_min_calibration_pairs = models.PositiveIntegerField(default=200)
    adjudication_help = models.BooleanField(
        default=False, help_text="Show the model's label (and an LLM's reason) on the adjudication queue."
    )
    writing_checks_annotator = models.ForeignKey(
        ModelAnnotator,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="This model judges whether each written hypothesis is nonsense or does not fit its intended "
        "label; researchers see it beside the typing evidence, participants never.",
    )

    def __str__(self) -> str:
        return f"model uses of study {self.study_id}"


class WritingCheck(models.Model):
    """A model's judgement of one written pair: is the hypothesis nonsense, does it fit the writer's
    intended label? Never a label of the pair: it moves no gold, no count, and only researchers see it.
    An endpoint answers a versioned prompt of task kind "writing"; a training run's "does not fit" is
    its label differing from the intended one, with its probability (it never says "nonsense")."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="writing_checks")
    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="writing_checks")
    asked_with = models.CharField(max_length=40)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, blank=True)  # "" unless answered
    intended_label = models.CharField(max_length=20, help_text="The writer's label when it was checked.")
    model_label = models.CharField(max_length=20, blank=True, help_text="A training run's label of the pair.")
    probability = models.FloatField(null=True, blank=True, help_text="A training run's probability of its label.")
    reason = models.CharField(max_length=300, blank=True)
    raw_answer = models.TextField(blank=True)
    error = models.CharField(max_length=300, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "pair", "asked_with"], name="one_writing_check_per_prompt"),
        ]
        indexes = [models.Index(fields=["pair", "annotator"], name="writing_check_pair")]

    def __str__(self) -> str:
        return f"writing check of {self.pair_id} by {self.annotator_id}: {self.verdict or self.outcome}"
