"""Snapshots (immutable exports), the training runs that name them, and the GPU nodes' tokens.

Words (tests/test_names.py): a *node* is a machine that trains runs (never a "worker": that is a
crowdworker, corpus.Worker); a node holds a run under a *lease* (never a "claim": that is a
crowdworker's task claim). Renamed fields keep their columns (db_column), renamed models their
tables (db_table), so the database did not change (migration 0003 is state-only).
"""

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from base.long_tasks import JobStatus, LongTask
from modeling.training.config import MODELS
from teams.models import default_team_id


class Snapshot(LongTask):
    """What was exported, by whom and when; once done, its files and hashes never change."""

    # The team it belongs to (teams.access scopes every reader by it; docs/teams.md).
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="snapshots", default=default_team_id)
    datasets = models.JSONField(default=list, help_text="Dataset slugs included (empty: all).")
    filters = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.PENDING)
    progress = models.FloatField(default=0.0, help_text="0–1 while running.")
    started_at = models.DateTimeField(null=True, blank=True)
    directory = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, help_text="SHA-256 over the files' hashes.")
    row_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"snapshot {self.pk} ({self.status})"


class SnapshotExclusion(models.Model):
    """A pair a researcher kept out of snapshots from the pair browser: no snapshot
    exported while the row stands takes it (`selectors.pairs_for_export`). Unlike retiring, the
    pair keeps its gold label and stays in every statistic. Made in batches (`token`), so one
    click lifts a batch again."""

    pair = models.OneToOneField("corpus.Pair", on_delete=models.CASCADE, related_name="snapshot_exclusion")
    token = models.CharField(max_length=12, db_index=True)
    reason = models.CharField(max_length=100)
    researcher = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.pair_id} kept out of snapshots ({self.reason})"


class SnapshotFile(models.Model):
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=100, help_text="e.g. dev_matched.jsonl")
    split = models.CharField(max_length=30)
    rows = models.PositiveIntegerField()
    bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["snapshot", "name"]
        constraints = [models.UniqueConstraint(fields=["snapshot", "name"], name="unique_snapshot_file")]

    def __str__(self) -> str:
        return self.name


# The baselines' names live with their config (Django-free, read by GPU nodes too).
# The stubs know the functional API with plain values only, not (value, label) pairs.
ModelKind = models.TextChoices("ModelKind", [(name.upper(), (name, label)) for name, label in MODELS.items()])  # type: ignore[call-overload]


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


# How far a node's dev accuracy may lie from the platform's own measurement before the run is
# flagged: both score the same checkpoint on the same file, so only float rounding and a GPU's
# nondeterministic kernels separate honest figures.
REMEASURE_TOLERANCE = 0.01


class TrainingRun(models.Model):
    snapshot = models.ForeignKey(Snapshot, on_delete=models.PROTECT, related_name="training_runs")
    snapshot_hash = models.CharField(max_length=64)
    model = models.CharField(max_length=20, choices=ModelKind.choices)
    config = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    # Each lease of the run (a first start, or a takeover after a lost node) gets a new id; only
    # the holder of the latest one may write the run, so a node that was taken over stops.
    lease_id = models.CharField(max_length=64, blank=True, db_column="claim_id")
    node_token = models.ForeignKey(
        "NodeToken",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
        help_text="The GPU node's token that holds the run (nodes that report over HTTP).",
        db_column="worker_token_id",
    )
    # The Celery worker (its hostname, e.g. gpu0@node-1) that holds the run.
    node_hostname = models.CharField(max_length=200, blank=True, db_column="worker_hostname")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    device = models.CharField(max_length=100, blank=True)

    # Live progress.
    epoch = models.PositiveIntegerField(default=0)
    total_epochs = models.PositiveIntegerField(default=0)
    step = models.PositiveIntegerField(default=0)
    total_steps = models.PositiveIntegerField(default=0)
    loss = models.FloatField(null=True, blank=True)
    dev_accuracy = models.FloatField(null=True, blank=True)
    history = models.JSONField(default=list, blank=True, help_text="Per epoch: loss and dev accuracy.")

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    checkpoint_path = models.CharField(
        max_length=500,
        blank=True,
        help_text="Where the checkpoint lies: a path on this server, or its name in object storage.",
    )
    checkpoint_name = models.CharField(
        max_length=300, blank=True, help_text="The checkpoint's name in the checkpoint storage."
    )
    checkpoint_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    checkpoint_sha256 = models.CharField(max_length=64, blank=True)
    results = models.JSONField(
        default=dict,
        blank=True,
        help_text="accuracy per evaluated split, matched/mismatched, per genre, per label, confusion matrix",
    )
    # The platform's own score of the checkpoint on the snapshot's dev split. A GPU node is
    # untrusted, so its figures are claims until this is set (modeling.training.remeasure); only
    # the platform writes these fields, never a node's report.
    remeasured_accuracy = models.FloatField(null=True, blank=True)
    remeasured_split = models.CharField(max_length=20, blank=True)
    remeasured_at = models.DateTimeField(null=True, blank=True)
    remeasure_error = models.TextField(blank=True, help_text="Why the platform could not score the checkpoint.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.model} on snapshot {self.snapshot_id} ({self.status})"

    @property
    def progress(self) -> float:
        if not self.total_steps:
            return 1.0 if self.status == RunStatus.DONE else 0.0
        return min(1.0, self.step / self.total_steps)

    @property
    def accuracy_check(self) -> dict[str, Any]:
        """The run's dev accuracy as the pages and the API show it: the node's figure, the platform's
        (modeling.training.remeasure), and what to say of them.

        `state`: "not_remeasured" (a GPU node's figure: the platform has not scored the checkpoint
        yet), "platform" (a run this platform's own processes train, still going), "confirmed" (the
        platform's measurement agrees within REMEASURE_TOLERANCE, or the platform trained the run
        itself), "mismatch" (it does not agree), "failed" (the platform could not score the
        checkpoint; `error` says why).
        """
        reported, measured = self.dev_accuracy, self.remeasured_accuracy
        if self.remeasure_error:
            state = "failed"
        elif measured is None:
            state = "not_remeasured" if self.node_token_id else "platform"
        elif reported is None or abs(reported - measured) <= REMEASURE_TOLERANCE:
            state = "confirmed"
        else:
            state = "mismatch"
        return {
            "state": state,
            "reported": reported,
            "remeasured": measured,
            "split": self.remeasured_split or None,
            "at": self.remeasured_at,
            "error": self.remeasure_error or None,
            "tolerance": REMEASURE_TOLERANCE,
            "by_node": self.node_token_id is not None,
        }

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


def hash_node_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class NodeToken(models.Model):
    """The one credential a GPU node holds: read snapshots, report on the runs it trains, nothing else.

    Only the SHA-256 of the key is stored; the key itself is shown once, when the token is made.
    A node presents it as `Authorization: Worker <key>`, a scheme no researcher endpoint accepts.
    """

    KEY_PREFIX = "nliw_"

    name = models.CharField(max_length=100, unique=True, help_text="Which node or cluster holds it, e.g. gpu-node-1.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        db_table = "modeling_workertoken"  # its name before the rename (migration 0003)

    def __str__(self) -> str:
        return f"node token {self.name}{' (revoked)' if self.revoked_at else ''}"

    @classmethod
    def issue(cls, name: str, created_by: Any = None) -> tuple["NodeToken", str]:
        """A new token and its key (the only time the key is known)."""
        key = cls.KEY_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(name=name, key_hash=hash_node_key(key), created_by=created_by)
        return token, key

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])
