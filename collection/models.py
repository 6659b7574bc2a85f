"""Collecting premises and hypotheses: premise imports, writing claims and problem reports.

The premises and pairs themselves are the core's (`corpus.models`); this app holds what the
writing task adds around them.
"""

import uuid
from typing import Any

from django.db import models
from django.db.models import Q

from corpus.models import Dataset, Genre, ImportRun, Premise, Tally, Worker
from crowd.models import TaskClaim


class PremiseImport(ImportRun):
    """A run of `import_premises`: its progress (updated after every batch) and, at the end, its report."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="premise_imports")
    genre = models.ForeignKey(Genre, on_delete=models.CASCADE, related_name="premise_imports")
    source = models.CharField(max_length=255, help_text="The imported files' names.")
    sentences_read = models.PositiveIntegerField(default=0)
    kept = models.PositiveIntegerField(default=0)
    dropped = models.PositiveIntegerField(default=0)
    drop_counts = models.JSONField(default=dict, blank=True, help_text="Sentences dropped, per reason.")
    # A dashboard upload's import (base/uploads.py): what the worker needs to run (or restart) it.
    upload = models.CharField(max_length=255, blank=True, help_text="The upload's name in storage, while it waits.")
    file_format = models.CharField(max_length=5, default="auto", help_text="auto, text or jsonl.")
    # A writing claim serves only premises with a split, so an import without one would serve
    # nothing until `assign_splits`.
    split = models.CharField(
        max_length=5, blank=True, default="", help_text="train, dev or test for the new premises; blank: none yet."
    )
    # What the command prints, kept so the dashboard's row can show it too.
    malformed = models.JSONField(default=list, blank=True, help_text='Malformed lines: ["a.jsonl line 4: not JSON"].')
    drop_examples = models.JSONField(default=dict, blank=True, help_text="A few dropped sentences per reason.")

    def __str__(self) -> str:
        return f"{self.source} -> {self.dataset.slug}/{self.genre.slug} ({self.status})"


class PremiseReport(models.Model):
    """A worker's note that a premise is broken; the premise is held until a researcher decides."""

    premise = models.ForeignKey(Premise, on_delete=models.CASCADE, related_name="reports")
    worker = models.ForeignKey(Worker, on_delete=models.SET_NULL, null=True, related_name="reports")
    message = models.TextField()
    # The study visit it was sent in: a worker's reports are capped per visit (Study.max_reports_per_batch).
    study_session = models.ForeignKey(
        "crowd.StudySession", on_delete=models.SET_NULL, null=True, blank=True, related_name="premise_reports"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["premise", "resolved"], name="premisereport_open")]

    def __str__(self) -> str:
        return f"report on premise {self.premise_id}"


class ShapeRefusal(models.Model):
    """A hypothesis of a study session refused because it did not read as a sentence, each distinct
    text once a session (collection/shape_holds.py). Written after the refused submit's own
    transaction rolled back."""

    study_session = models.ForeignKey("crowd.StudySession", on_delete=models.CASCADE, related_name="shape_refusals")
    text = models.TextField(help_text="The refused hypothesis, as the writer sent it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"shape refusal in study session {self.study_session_id}"


class WritingClaim(TaskClaim):
    """A premise held for one worker until they submit or the claim expires. Its pairs are the
    premise's pairs by the same worker (a worker never gets a premise twice)."""

    DATASET_PATH = "premise__dataset"

    token = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Neither key has an index of its own: the unique (worker, premise) and the (premise, status)
    # indexes lead with them, and each index more is one more write in every claim.
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="writing_claims", db_index=False)
    premise = models.ForeignKey(Premise, on_delete=models.CASCADE, related_name="writing_claims", db_index=False)

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
    def pairs(self) -> "models.QuerySet[Any]":
        return self.premise.pairs.filter(author=self.worker)


class HypothesisTally(Tally):
    """Hypotheses written in a study, per study × dataset × split × genre: signed deltas, as the
    core's tallies (`collection.hypothesis_tally`). The cost page sums them instead of joining every
    pair to its writing claim, a read that grows with the corpus."""

    study = models.ForeignKey("crowd.Study", on_delete=models.CASCADE, related_name="+")

    class Meta(Tally.Meta):
        verbose_name_plural = "hypothesis tallies"


class PremiseGroup(models.Model):
    """A dataset's premises with a split, counted per genre × import file: where a balanced study's
    claim finds the genres and files of its pool (a table of a few rows, where the premises are
    hundreds of thousands). Kept by triggers on the premises (migration 0018), in the statement that
    adds, changes or removes them."""

    # The unique constraint's index leads with the dataset: no index of its own.
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    genre = models.ForeignKey(Genre, on_delete=models.CASCADE, related_name="+", db_index=False)
    source = models.CharField(max_length=255, blank=True)
    premises = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "genre", "source"], name="one_premise_group_per_genre_and_file")
        ]

    def __str__(self) -> str:
        return (
            f"dataset {self.dataset_id}: {self.premises} premises (genre {self.genre_id}, {self.source or 'no file'})"
        )


class StudyServed(models.Model):
    """Writing claims made in a study per genre × import file: the balanced serving order's count,
    asked on every claim (counted from the claims, that read would grow with the crowd).

    Kept in the claim's own transaction, by an upsert on one of `SHARDS` rows of the key (the
    claimer's worker id picks it), so that claimers of one study seldom wait on a shared row. A
    claim counts once it is made, whatever becomes of it: a take-back makes none."""

    SHARDS = 8

    # The unique constraint's index leads with the study: no index of its own.
    study = models.ForeignKey("crowd.Study", on_delete=models.CASCADE, related_name="+", db_index=False)
    genre = models.ForeignKey(Genre, on_delete=models.CASCADE, related_name="+", db_index=False)
    source = models.CharField(max_length=255, blank=True)
    shard = models.SmallIntegerField()
    claims = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "genre", "source", "shard"], name="one_served_count_per_study_genre_source_shard"
            )
        ]
        verbose_name_plural = "study served counts"

    def __str__(self) -> str:
        return f"study {self.study_id}: {self.claims} claims (genre {self.genre_id}, {self.source or 'no file'})"
