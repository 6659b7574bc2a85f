"""Genres, prompt families, premises, workers, writing claims and pairs.

A pair is premise + hypothesis + the author's label. Its validation counters (labels so far,
votes per label, gold label) live on the pair so that pages never count the label table;
the rules that move them are in `validation.services`.
"""
import hashlib
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Label(models.TextChoices):
    ENTAILMENT = "entailment", "entailment"
    NEUTRAL = "neutral", "neutral"
    CONTRADICTION = "contradiction", "contradiction"


NO_GOLD = "-"
THREE_WAY = [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION]


class Split(models.TextChoices):
    TRAIN = "train", "train"
    DEV = "dev", "dev"
    TEST = "test", "test"


class PromptFamily(models.Model):
    """One of MultiNLI's five prompts: its instructions, field wording, examples and FAQ."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    instructions = models.TextField(help_text="Shown above the premise. Blank lines separate paragraphs.")
    entailment_prompt = models.CharField(max_length=300, help_text="Wording of the 'definitely correct' field.")
    neutral_prompt = models.CharField(max_length=300, help_text="Wording of the 'might be correct' field.")
    contradiction_prompt = models.CharField(max_length=300, help_text="Wording of the 'definitely incorrect' field.")
    faq_intro = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "prompt families"

    def __str__(self):
        return self.name

    def prompt_for(self, label):
        return {
            Label.ENTAILMENT: self.entailment_prompt,
            Label.NEUTRAL: self.neutral_prompt,
            Label.CONTRADICTION: self.contradiction_prompt,
        }[label]


class PromptExample(models.Model):
    family = models.ForeignKey(PromptFamily, on_delete=models.CASCADE, related_name="examples")
    label = models.CharField(max_length=20, choices=Label.choices)
    premise = models.TextField()
    hypothesis = models.TextField()
    explanation = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["family", "label"], name="one_example_per_label")]

    def __str__(self):
        return f"{self.family.slug}: {self.label}"


class FaqEntry(models.Model):
    family = models.ForeignKey(PromptFamily, on_delete=models.CASCADE, related_name="faq_entries")
    question = models.CharField(max_length=300)
    answer = models.TextField()
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["family", "position", "id"]
        verbose_name_plural = "FAQ entries"

    def __str__(self):
        return self.question


class Genre(models.Model):
    """A source genre. Training genres are 'matched'; held-out genres appear only in dev/test."""

    slug = models.SlugField(unique=True, help_text="As written in the corpus files, e.g. 'nineeleven'.")
    name = models.CharField(max_length=50)
    is_training = models.BooleanField(help_text="Matched (in train) or held out (mismatched: dev/test only).")
    family = models.ForeignKey(PromptFamily, on_delete=models.PROTECT, related_name="genres")
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.name


class LabelScheme(models.TextChoices):
    THREE_WAY = "three_way", "entailment / neutral / contradiction"
    TWO_WAY = "two_way", "entailed / not-entailed"


class Dataset(models.Model):
    """A body of pairs: the platform's own collection, or an imported corpus such as SNLI."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    label_scheme = models.CharField(max_length=20, choices=LabelScheme.choices, default=LabelScheme.THREE_WAY)
    is_imported = models.BooleanField(default=False)
    train_validation_fraction = models.FloatField(
        default=0.0, help_text="Share of train pairs (0–1) that also get four validation labels."
    )
    writings_per_premise = models.PositiveSmallIntegerField(
        default=1, help_text="How many workers each write three hypotheses for one premise."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.slug


def text_hash(text):
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


class PremiseStatus(models.TextChoices):
    AVAILABLE = "available", "available"
    HELD = "held", "held for a researcher"
    RETIRED = "retired", "retired"


class Premise(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="premises")
    genre = models.ForeignKey(Genre, on_delete=models.PROTECT, related_name="premises")
    prompt_id = models.CharField(max_length=64, help_text="promptID (captionID for SNLI).")
    text = models.TextField()
    text_hash = models.CharField(max_length=64, db_index=True, editable=False)
    parse = models.TextField(blank=True)
    binary_parse = models.TextField(blank=True)
    split = models.CharField(max_length=5, choices=Split.choices, blank=True, db_index=True)
    status = models.CharField(max_length=10, choices=PremiseStatus.choices, default=PremiseStatus.AVAILABLE)
    writings_done = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=255, blank=True, help_text="File the premise was imported from.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "prompt_id"], name="unique_prompt_id")]
        indexes = [
            models.Index(fields=["dataset", "genre", "text_hash"], name="premise_genre_text"),
            models.Index(fields=["dataset", "status", "split", "writings_done"], name="premise_claimable"),
        ]

    def save(self, *args, **kwargs):
        self.text_hash = text_hash(self.text)
        super().save(*args, **kwargs)

    def __str__(self):
        return self.text[:80]


class ImportStatus(models.TextChoices):
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ImportRun(models.Model):
    """What every long import records as it runs: its status, how far through its files it is, and when."""

    status = models.CharField(max_length=10, choices=ImportStatus.choices, default=ImportStatus.RUNNING)
    bytes_total = models.PositiveBigIntegerField(default=0)
    bytes_read = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True, help_text="Why the import stopped, if it failed.")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-started_at", "-id"]

    @property
    def progress(self):
        """Share of the input read, 0–1."""
        if self.status == ImportStatus.DONE:
            return 1.0
        return self.bytes_read / self.bytes_total if self.bytes_total else 0.0


class PremiseImport(ImportRun):
    """A run of `import_premises`: its progress (updated after every batch) and, at the end, its report."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="premise_imports")
    genre = models.ForeignKey(Genre, on_delete=models.CASCADE, related_name="premise_imports")
    source = models.CharField(max_length=255, help_text="The imported files' names.")
    sentences_read = models.PositiveIntegerField(default=0)
    kept = models.PositiveIntegerField(default=0)
    dropped = models.PositiveIntegerField(default=0)
    drop_counts = models.JSONField(default=dict, blank=True, help_text="Sentences dropped, per reason.")

    class Meta(ImportRun.Meta):
        pass

    def __str__(self):
        return f"{self.source} -> {self.dataset.slug}/{self.genre.slug} ({self.status})"


class PremiseReport(models.Model):
    """A worker's note that a premise is broken; the premise is held until a researcher decides."""

    premise = models.ForeignKey(Premise, on_delete=models.CASCADE, related_name="reports")
    worker = models.ForeignKey("collection.Worker", on_delete=models.SET_NULL, null=True, related_name="reports")
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    resolved = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]


class Market(models.TextChoices):
    LOCAL = "local", "account on this site"
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Mechanical Turk"


class Worker(models.Model):
    """A crowdworker. Every worker has a Django user; market arrivals have no usable password."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker")
    market = models.CharField(max_length=10, choices=Market.choices, default=Market.LOCAL)
    external_id = models.CharField(max_length=128, blank=True, help_text="PROLIFIC_PID or MTurk workerId.")
    is_trusted = models.BooleanField(default=False, help_text="In the closed pool of trusted validators.")
    is_excluded = models.BooleanField(default=False, help_text="Labels left out of gold labels and statistics.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["market", "external_id"], condition=~Q(external_id=""), name="unique_market_worker"
            )
        ]

    def __str__(self):
        return self.external_id or self.user.get_username()


class TaskKind(models.TextChoices):
    WRITING = "writing", "hypothesis writing"
    VALIDATION = "validation", "validation"


class Study(models.Model):
    """A crowd-market study: where its link sends workers and the completion code they get."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="studies")
    task_kind = models.CharField(max_length=12, choices=TaskKind.choices, default=TaskKind.WRITING)
    tasks_per_batch = models.PositiveSmallIntegerField(default=1, help_text="Tasks a worker does before the code.")
    completion_code = models.CharField(max_length=64)
    completion_url = models.URLField(blank=True, help_text="Optional: where the code is sent back (e.g. Prolific).")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "studies"

    def __str__(self):
        return self.name


class StudySession(models.Model):
    """One worker's visit to a study (a Prolific session or an MTurk assignment)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="sessions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="study_sessions")
    external_study_id = models.CharField(max_length=128, blank=True, help_text="STUDY_ID or hitId.")
    external_session_id = models.CharField(max_length=128, blank=True, help_text="SESSION_ID or assignmentId.")
    tasks_done = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "worker", "external_session_id"], name="unique_study_session"
            )
        ]

    @property
    def is_complete(self):
        return self.completed_at is not None


class ClaimStatus(models.TextChoices):
    OPEN = "open", "open"
    SUBMITTED = "submitted", "submitted"
    EXPIRED = "expired", "expired"
    RELEASED = "released", "released"


class WritingClaim(models.Model):
    """A premise held for one worker until they submit or the claim expires."""

    token = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="writing_claims")
    premise = models.ForeignKey(Premise, on_delete=models.CASCADE, related_name="writing_claims")
    study_session = models.ForeignKey(StudySession, on_delete=models.SET_NULL, null=True, blank=True)
    status = models.CharField(max_length=10, choices=ClaimStatus.choices, default=ClaimStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # A worker never gets the same premise twice.
            models.UniqueConstraint(fields=["worker", "premise"], name="one_claim_per_worker_premise"),
            models.UniqueConstraint(
                fields=["worker"], condition=Q(status="open"), name="one_open_writing_claim_per_worker"
            ),
        ]
        indexes = [models.Index(fields=["premise", "status"], name="writingclaim_premise_status")]

    @property
    def seconds_taken(self):
        if self.submitted_at is None:
            return None
        return (self.submitted_at - self.created_at).total_seconds()


class Pair(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pairs")
    premise = models.ForeignKey(Premise, on_delete=models.CASCADE, related_name="pairs")
    pair_id = models.CharField(max_length=64, help_text="pairID: unique within the dataset.")
    hypothesis = models.TextField()
    parse = models.TextField(blank=True)
    binary_parse = models.TextField(blank=True)
    author_label = models.CharField(max_length=20, choices=Label.choices)
    author = models.ForeignKey(Worker, on_delete=models.SET_NULL, null=True, blank=True, related_name="pairs")
    writing_claim = models.ForeignKey(WritingClaim, on_delete=models.SET_NULL, null=True, blank=True, related_name="pairs")
    created_at = models.DateTimeField(auto_now_add=True)

    # Validation counters, moved in the same transaction as the label that changes them.
    needs_validation = models.BooleanField(default=False, db_index=True)
    label_count = models.PositiveSmallIntegerField(default=0, help_text="Labels so far, the author's included.")
    entailment_votes = models.PositiveSmallIntegerField(default=0)
    neutral_votes = models.PositiveSmallIntegerField(default=0)
    contradiction_votes = models.PositiveSmallIntegerField(default=0)
    gold_label = models.CharField(max_length=20, default=NO_GOLD, db_index=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "pair_id"], name="unique_pair_id"),
            # The backstop against a double submit: one pair per premise, author and label.
            models.UniqueConstraint(
                fields=["premise", "author", "author_label"],
                condition=Q(author__isnull=False),
                name="one_pair_per_author_label",
            ),
        ]
        indexes = [
            models.Index(fields=["needs_validation", "label_count"], name="pair_validation_queue"),
            # Pairs written per hour on the dashboard.
            models.Index(fields=["created_at"], name="pair_created_at"),
        ]

    def __str__(self):
        return f"{self.pair_id}: {self.hypothesis[:60]}"

    @property
    def genre(self):
        return self.premise.genre

    @property
    def split(self):
        return self.premise.split
