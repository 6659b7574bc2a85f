"""What quality control stores: researchers' own labels on pairs (the reference that catch trials
and qualification tests are scored against).

The pure statistics (flags, aggregation) stay free of Django in `flags.py` and `aggregation.py`.
"""
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
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


# --- qualification tests (feature 11: "a worker who reaches the study's pass mark joins the trusted pool") ---

class QualificationTest(models.Model):
    """What a worker answers before a study with access 'qualified' lets them work: a set of pairs
    with researchers' labels. Reaching the pass mark admits them to the study (and, with
    `grants_trusted`, to the trusted pool that trusted-only datasets are open to)."""

    study = models.OneToOneField("crowd.Study", on_delete=models.CASCADE, related_name="qualification_test")
    items = models.ManyToManyField(
        ReferenceLabel, related_name="qualification_tests", help_text="The pairs asked, with their expected labels."
    )
    pass_mark = models.FloatField(
        default=0.8,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of the items (0–1) a worker must answer as the researchers did.",
    )
    max_attempts = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1)], help_text="How many times a worker may take the test."
    )
    grants_trusted = models.BooleanField(
        default=True, help_text="Passing also marks the worker trusted (the pool of trusted validators)."
    )
    instructions = models.TextField(blank=True, help_text="Shown above the items (optional).")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"qualification test of {self.study}"


class QualificationAttempt(models.Model):
    """One worker's finished try at a test: its score, whether it passed, and (below) its answers."""

    test = models.ForeignKey(QualificationTest, on_delete=models.CASCADE, related_name="attempts")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="qualification_attempts")
    number = models.PositiveSmallIntegerField(help_text="1 for the first try.")
    correct = models.PositiveSmallIntegerField()
    total = models.PositiveSmallIntegerField()
    score = models.FloatField()
    passed = models.BooleanField()
    seconds = models.FloatField(null=True, blank=True, help_text="From showing the items to sending the answers.")
    finished_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-finished_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["test", "worker", "number"], name="one_attempt_per_number"),
        ]

    def __str__(self):
        return f"{self.worker} try {self.number}: {self.correct}/{self.total}"


class QualificationAnswer(models.Model):
    attempt = models.ForeignKey(QualificationAttempt, on_delete=models.CASCADE, related_name="answers")
    reference = models.ForeignKey(ReferenceLabel, on_delete=models.CASCADE, related_name="qualification_answers")
    label = models.CharField(max_length=20, choices=Label.choices)
    is_correct = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["attempt", "reference"], name="one_answer_per_item")]
