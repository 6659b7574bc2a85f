"""Phenomenon tags stored one boolean column per tag, so that every figure is one aggregate query.

A PairTags row exists once a pair has been tagged; a pair without one is waiting for the tagger.
The column names are `artifacts.phenomena.PHENOMENON_NAMES` (a test keeps them equal).
"""

from django.db import models

from base.long_tasks import JobStatus, LongTask
from corpus.models import Dataset, Pair, Tally


class PairTags(models.Model):
    pair = models.OneToOneField(Pair, on_delete=models.CASCADE, primary_key=True, related_name="phenomenon_tags")
    pronouns = models.BooleanField(default=False)
    quantifiers = models.BooleanField(default=False)
    modals = models.BooleanField(default=False)
    negation = models.BooleanField(default=False)
    wh_words = models.BooleanField(default=False)
    belief_verbs = models.BooleanField(default=False)
    time_terms = models.BooleanField(default=False)
    conversational_pivots = models.BooleanField(default=False)
    presupposition_triggers = models.BooleanField(default=False)
    comparatives_superlatives = models.BooleanField(default=False)
    conditionals = models.BooleanField(default=False)
    tense_match = models.BooleanField(default=False)
    interjections = models.BooleanField(default=False)
    long_sentence = models.BooleanField(default=False)
    existentials = models.BooleanField(default=False)
    tagger = models.CharField(max_length=100, help_text="Model package and version that tagged the pair.")
    tagged_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "pair tags"

    def __str__(self) -> str:
        return f"tags of pair {self.pair_id}"

    def tag_names(self) -> list[str]:
        from .phenomena import PHENOMENON_NAMES

        return [name for name in PHENOMENON_NAMES if getattr(self, name)]


class TagTally(Tally):
    """Tagged pairs per dataset × split × genre × gold label × tag (tag "" counts the tagged
    pairs themselves): the corpus page's tag figures (MultiNLI Table 7) summed instead of joining
    every tag to its pair. Append-only deltas like corpus.tallies' (folded with them): the
    tagging pass adds its pairs' rows, a gold label's change (`corpus.signals.gold_moved`) and a
    premise's move to another split (`corpus.signals.pairs_moving_split`) move them, in the
    writer's transaction; `manage.py rebuild_tallies tag` checks and rebuilds them."""

    gold_label = models.CharField(max_length=20)
    tag = models.CharField(max_length=40, blank=True)

    class Meta:
        db_table = "artifacts_tagtally"
        verbose_name_plural = "tag tallies"

    def __str__(self) -> str:
        return f"tag tally {self.pk} ({self.gold_label}: {self.tag or 'pairs'})"


class TaggingJob(LongTask):
    """One pass of the tagger over the untagged pairs of a dataset (or of all datasets)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    retag = models.BooleanField(default=False, help_text="Tag again pairs that already have tags.")
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    tagger = models.CharField(max_length=100, blank=True)
    # The highest pair the job read: the next job of its scope starts after it (`services.walked_to`).
    walked_to = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        scope = self.dataset.slug if self.dataset is not None else "all datasets"
        return f"tagging {scope}: {self.status} {self.done}/{self.total}"

    @property
    def progress(self) -> float:
        """Share of the job's pairs tagged so far, in [0, 1]."""
        if self.status == JobStatus.DONE:
            return 1.0
        return self.done / self.total if self.total else 0.0


class MonitorRefresh(LongTask):
    """One fit of the artifact monitor (artifacts.monitor) over a dataset's hypotheses.

    The figures are stored as they were, so the list of refreshes is the trend over time; the
    model fitted on every pair lies in `model_file` for scoring drafts (artifact-aware writing).
    """

    class Trigger(models.TextChoices):
        PERIODIC = "periodic"
        NEW_PAIRS = "new pairs"
        COMMAND = "command"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    trigger = models.CharField(max_length=12, choices=Trigger.choices, default=Trigger.COMMAND)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.RUNNING)
    pairs_total = models.PositiveIntegerField(default=0, help_text="Pairs in scope when the refresh started.")
    pairs = models.PositiveIntegerField(default=0, help_text="Pairs scored (those with a label to count).")
    folds = models.PositiveSmallIntegerField(default=0)
    seconds = models.FloatField(null=True, blank=True)
    overall = models.JSONField(default=dict, blank=True)
    per_genre = models.JSONField(default=dict, blank=True)
    writers = models.JSONField(default=list, blank=True, help_text="Per writer, flagged first.")
    flagged = models.PositiveIntegerField(default=0)
    model_file = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "monitor refreshes"
        indexes = [models.Index(fields=["dataset", "status", "created_at"], name="monitor_latest")]

    def __str__(self) -> str:
        scope = self.dataset.slug if self.dataset is not None else "all datasets"
        return f"monitor {scope} {self.created_at:%Y-%m-%d %H:%M}: {self.status}"


class StudyNudge(models.Model):
    """Artifact-aware writing for one study: on or off, and how sure the monitor must be."""

    study = models.OneToOneField("crowd.Study", on_delete=models.CASCADE, primary_key=True, related_name="nudge")
    enabled = models.BooleanField(default=False, help_text="Name give-away words while the worker writes.")
    threshold = models.FloatField(default=0.8, help_text="Note shown when p(label | hypothesis) reaches this.")

    def __str__(self) -> str:
        return f"nudge {'on' if self.enabled else 'off'} for {self.study_id}"


class NudgeRecord(models.Model):
    """One submitted hypothesis of a writing page that ran the nudge script: whether a note was
    shown for it, and whether the worker changed the sentence after seeing it. Joined to its
    pair by (author, label, text) when figures are made."""

    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    study = models.ForeignKey("crowd.Study", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    claim_token = models.CharField(max_length=64, blank=True)
    label = models.CharField(max_length=20)
    hypothesis = models.TextField()
    enabled = models.BooleanField(help_text="The nudge was on for this page (else: the comparison arm).")
    shown = models.BooleanField(default=False)
    revised = models.BooleanField(default=False, help_text="Edited after a note was shown.")
    shown_words = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["worker", "label"], name="nudge_worker_label")]

    def __str__(self) -> str:
        return f"nudge for worker {self.worker_id} ({'shown' if self.shown else 'not shown'})"


class GiveawayListing(models.Model):
    """A dataset's give-away listing with the paper's defaults (artifacts.selectors.giveaway_words_for:
    top 10 per label of the words in at least 5 hypotheses), the one its artifacts page opens on,
    kept as computed from the word tally: that sum reads every (split, genre, label, word) row
    of the dataset, more than a page can wait for at MultiNLI scale.

    Current while no word tally row of the dataset is newer than `tally_mark`; recomputed after
    each fold that rewrote the dataset's rows (artifacts.listings) and by the first reader that
    finds it out of date."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, primary_key=True, related_name="+")
    listing = models.JSONField()
    tally_mark = models.BigIntegerField(help_text="The highest word tally row id when the listing was computed.")
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"give-away listing of dataset {self.dataset_id}"
