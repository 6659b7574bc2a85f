"""The data every other app shares: datasets, genres and their prompt families, premises,
workers, pairs and every label a pair has.

A pair's counters (labels so far, votes per label, gold label) live on the pair so that pages
never count the label table; they move only through `corpus.services`. The tables keep the names
they had when these models lived in `collection` and `validation` (`db_table`).
"""

import hashlib
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q, Value

from base.long_tasks import LongTask
from teams.models import default_team_id

from . import labels

# The gold rule's names, for Pair and the apps above (the rule itself is corpus.gold).
from .gold import GoldSource as GoldSource
from .gold import gold_source as gold_source

# The core's vocabulary, re-exported for the apps above (explicitly, for mypy's no_implicit_reexport).
from .labels import AUTHOR_POSITION as AUTHOR_POSITION
from .labels import GOLD_MAJORITY as GOLD_MAJORITY
from .labels import LABELS_PER_PAIR as LABELS_PER_PAIR
from .labels import NO_GOLD as NO_GOLD

# The workers' models live in their own module, as models of this app.
from .worker_models import Market as Market
from .worker_models import Worker as Worker
from .worker_models import WorkerExclusion as WorkerExclusion


class Label(models.TextChoices):
    ENTAILMENT = labels.ENTAILMENT, "entailment"
    NEUTRAL = labels.NEUTRAL, "neutral"
    CONTRADICTION = labels.CONTRADICTION, "contradiction"


THREE_WAY = [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION]

# A researcher may also retire a pair (it leaves snapshots and releases; its gold reads "-"): the
# pair's adjudicated_label is then RETIRED_LABEL.
RETIRED_LABEL = NO_GOLD
ADJUDICATED_CHOICES = [*Label.choices, (RETIRED_LABEL, "retired")]


class Split(models.TextChoices):
    TRAIN = "train", "train"
    DEV = "dev", "dev"
    TEST = "test", "test"


# --- genres and their prompt families ------------------------------------------------------------


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
        db_table = "collection_promptfamily"
        ordering = ["name"]
        verbose_name_plural = "prompt families"

    def __str__(self) -> str:
        return self.name

    def prompt_for(self, label: str) -> str:
        prompts: dict[str, str] = {
            Label.ENTAILMENT: self.entailment_prompt,
            Label.NEUTRAL: self.neutral_prompt,
            Label.CONTRADICTION: self.contradiction_prompt,
        }
        return prompts[label]


class PromptExample(models.Model):
    family = models.ForeignKey(PromptFamily, on_delete=models.CASCADE, related_name="examples")
    label = models.CharField(max_length=20, choices=Label.choices)
    premise = models.TextField()
    hypothesis = models.TextField()
    explanation = models.TextField(blank=True)

    class Meta:
        db_table = "collection_promptexample"
        constraints = [models.UniqueConstraint(fields=["family", "label"], name="one_example_per_label")]

    def __str__(self) -> str:
        return f"{self.family.slug}: {self.label}"


class FaqEntry(models.Model):
    family = models.ForeignKey(PromptFamily, on_delete=models.CASCADE, related_name="faq_entries")
    question = models.CharField(max_length=300)
    answer = models.TextField()
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        db_table = "collection_faqentry"
        ordering = ["family", "position", "id"]
        verbose_name_plural = "FAQ entries"

    def __str__(self) -> str:
        return self.question


class Genre(models.Model):
    """A source genre. Training genres are 'matched'; held-out genres appear only in dev/test."""

    slug = models.SlugField(unique=True, help_text="As written in the corpus files, e.g. 'nineeleven'.")
    name = models.CharField(max_length=50)
    is_training = models.BooleanField(help_text="Matched (in train) or held out (mismatched: dev/test only).")
    family = models.ForeignKey(PromptFamily, on_delete=models.PROTECT, related_name="genres")
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        db_table = "collection_genre"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


# --- datasets and premises -------------------------------------------------------------------------


class LabelScheme(models.TextChoices):
    THREE_WAY = "three_way", "entailment / neutral / contradiction"
    TWO_WAY = "two_way", "entailed / not-entailed"
    ORDINAL = "ordinal", "ordinal 1–5 (5 entailed, 1–4 not-entailed)"


class ItemKind(models.TextChoices):
    SINGLE_PREMISE = "single_premise", "one premise, one hypothesis (SNLI, MultiNLI)"
    MULTI_PREMISE = "multi_premise", "several premises, one hypothesis (MPE)"


class Dataset(models.Model):
    """A body of pairs: the platform's own collection, or an imported corpus such as SNLI."""

    # The team it belongs to (teams.access scopes every reader by it; docs/teams.md).
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="datasets", default=default_team_id)
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    item_kind = models.CharField(
        max_length=20,
        choices=ItemKind.choices,
        default=ItemKind.SINGLE_PREMISE,
        db_default=ItemKind.SINGLE_PREMISE,
        help_text="Multi-premise items (MPE) are judged in their own task, never in the MultiNLI validation batches.",
    )
    label_scheme = models.CharField(max_length=20, choices=LabelScheme.choices, default=LabelScheme.THREE_WAY)
    is_imported = models.BooleanField(default=False)
    train_validation_fraction = models.FloatField(
        default=0.0, help_text="Share of train pairs (0–1) that also get four validation labels."
    )
    writings_per_premise = models.PositiveSmallIntegerField(
        default=1, help_text="How many workers each write three hypotheses for one premise."
    )
    grammaticality_judgments = models.PositiveSmallIntegerField(
        default=0, help_text="Grammaticality judgments wanted per hypothesis (DNC App. B.4); 0: no grammaticality task."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "collection_dataset"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


def text_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


class PremiseStatus(models.TextChoices):
    AVAILABLE = "available", "available"
    HELD = "held", "held for a researcher"
    RETIRED = "retired", "retired"


class Premise(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="premises")
    genre = models.ForeignKey(Genre, on_delete=models.PROTECT, related_name="premises")
    prompt_id = models.CharField(max_length=64, help_text="promptID (captionID for SNLI).")
    text = models.TextField(
        help_text="The premise; for a multi-premise item, its sentences joined in order by a space."
    )
    # db_default too: rows written by COPY or raw SQL need no value.
    sentences = models.JSONField(
        default=list,
        db_default=Value([], output_field=models.JSONField()),
        blank=True,
        help_text='A multi-premise item\'s premise sentences in order: [{"text": ..., "source": "4818829454.jpg#0"}]. '
        "Empty for a single premise (then `text` is the premise).",
    )
    text_hash = models.CharField(max_length=64, db_index=True, editable=False)
    parse = models.TextField(blank=True)
    binary_parse = models.TextField(blank=True)
    split = models.CharField(max_length=5, choices=Split.choices, blank=True, db_index=True)
    status = models.CharField(max_length=10, choices=PremiseStatus.choices, default=PremiseStatus.AVAILABLE)
    # Copied into the writing claim's narrow order table (`collection_premise_claim_order`, kept by
    # triggers), so a claim never writes this wide, much-indexed row.
    writings_done = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=255, blank=True, help_text="File the premise was imported from.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "collection_premise"
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "prompt_id"], name="unique_prompt_id")]
        indexes = [
            models.Index(fields=["dataset", "genre", "text_hash"], name="premise_genre_text"),
            models.Index(fields=["dataset", "status", "split", "writings_done"], name="premise_claimable"),
            # Held premises are few: pages read them here, not by a walk of every premise.
            models.Index(fields=["id"], condition=Q(status=PremiseStatus.HELD), name="premise_held"),
        ]

    def __str__(self) -> str:
        return self.text[:80]

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.text_hash = text_hash(self.text)
        super().save(*args, **kwargs)

    @property
    def premise_sentences(self) -> list[str]:
        """The premise sentences in their fixed order: [text] for a single premise."""
        return [sentence["text"] for sentence in self.sentences] if self.sentences else [self.text]


def joined_premise(sentences: Iterable[str]) -> str:
    """The `text` of a multi-premise item: its sentences in order, joined by one space."""
    return " ".join(sentence.strip() for sentence in sentences)


class ImportStatus(models.TextChoices):
    # A dashboard upload's import waits queued for a Celery worker (base/uploads.py).
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ImportRun(LongTask):
    """What every long import records as it runs: its status, how far through its files it is, and when."""

    status = models.CharField(max_length=10, choices=ImportStatus.choices, default=ImportStatus.RUNNING)
    bytes_total = models.PositiveBigIntegerField(default=0)
    bytes_read = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True, help_text="Why the import stopped, if it failed.")
    started_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-started_at", "-id"]

    @property
    def progress(self) -> float:
        """Share of the input read, 0–1."""
        if self.status == ImportStatus.DONE:
            return 1.0
        return self.bytes_read / self.bytes_total if self.bytes_total else 0.0


class StoppingRule(models.TextChoices):
    """When a pair stops taking validation labels (docs/quality.md)."""

    FIXED = "fixed", "Fixed: four validation labels, five in all"
    DECIDED = "decided", "Decided: stop once the 3-of-5 gold cannot change"
    CONFIDENT = "confident", "Confident: stop once the worker-quality posterior is sure"


class StoppingPolicy(models.Model):
    """The stopping rule a researcher chose for one split of a dataset (docs/quality.md).

    A split without a row is on the fixed rule (five labels a pair), which the papers' agreement
    figures need. The rule is copied onto each pair (`Pair.stopping_rule`) when it is marked for
    validation or imported, and onto the split's pairs still taking labels when it changes.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="stopping_policies")
    split = models.CharField(max_length=10, choices=Split.choices)
    rule = models.CharField(max_length=10, choices=StoppingRule.choices, default=StoppingRule.FIXED)
    threshold = models.FloatField(
        default=0.95,
        validators=[MinValueValidator(0.5), MaxValueValidator(1.0)],
        help_text="Confident rule: the Dawid–Skene posterior of the leading label at which a pair stops.",
    )
    max_labels = models.PositiveSmallIntegerField(
        default=LABELS_PER_PAIR,
        validators=[MinValueValidator(AUTHOR_POSITION + 1), MaxValueValidator(LABELS_PER_PAIR)],
        help_text="Confident rule: a pair stops at this many labels (the author's included) whatever its posterior.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "stopping policies"
        ordering = ["dataset", "split"]
        constraints = [models.UniqueConstraint(fields=["dataset", "split"], name="one_stopping_policy_per_split")]

    def __str__(self) -> str:
        return f"{self.dataset.slug} {self.split}: {self.rule}"


VOTE_FIELDS = ("entailment_votes", "neutral_votes", "contradiction_votes")


def split_221() -> Q:
    """Five labels split 2-2-1 (no gold: MPE and SNLI call these the hard cases): the pair browser's
    pattern, and the condition of the index that holds those pairs (`pair_split_221`)."""
    patterns = Q()
    for one in VOTE_FIELDS:
        twos = [field for field in VOTE_FIELDS if field != one]
        patterns |= Q(**{one: 1, twos[0]: 2, twos[1]: 2})
    return Q(label_count=LABELS_PER_PAIR) & patterns


class Pair(models.Model):
    # No index of its own: `unique_pair_id` (dataset, pair_id) leads with it. Every index on this
    # table takes a new entry whenever a counter moves (no such update is HOT), so the table keeps
    # only the indexes some query needs, each over the rows it reads. The search text and its
    # trigram indexes live in `collection_pair_search`, kept by triggers: counter moves never touch them.
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pairs", db_index=False)
    premise = models.ForeignKey(Premise, on_delete=models.CASCADE, related_name="pairs")
    pair_id = models.CharField(max_length=64, help_text="pairID: unique within the dataset.")
    hypothesis = models.TextField()
    parse = models.TextField(blank=True)
    binary_parse = models.TextField(blank=True)
    author_label = models.CharField(max_length=20, choices=Label.choices)
    # Indexed for written pairs only (`pair_author`): an imported pair has no author.
    author = models.ForeignKey(
        Worker, on_delete=models.SET_NULL, null=True, blank=True, related_name="pairs", db_index=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    # Counters, moved by `corpus.services` in the same transaction as the label that changes them.
    needs_validation = models.BooleanField(default=False)  # the condition of `pair_validation_queue`
    label_count = models.PositiveSmallIntegerField(default=0, help_text="Labels so far, the author's included.")
    entailment_votes = models.PositiveSmallIntegerField(default=0)
    neutral_votes = models.PositiveSmallIntegerField(default=0)
    contradiction_votes = models.PositiveSmallIntegerField(default=0)
    # Not indexed: counts by gold label come from the tallies, and an index on a column every
    # submit moves costs more than the rare filter on it saves.
    gold_label = models.CharField(max_length=20, default=NO_GOLD)
    # Places held by live validation claims, as last counted by whoever locked the pair. Only a
    # hint that keeps fully held pairs out of the claim indexes; a claim always counts a pair's
    # live claims afresh before taking it.
    held_places = models.PositiveSmallIntegerField(default=0, editable=False)
    # A researcher's (or the source file's) decision that overrides the 3-of-5 rule (MPE §4.2).
    # Blank: the gold label follows the votes. Moved only by `corpus.adjudication.adjudicate`.
    adjudicated_label = models.CharField(
        max_length=20, blank=True, default="", db_default="", choices=ADJUDICATED_CHOICES
    )
    # The gold an imported file gave (DNC's label, MPE's gold, a single-label SNLI/MultiNLI train
    # pair's label): the pair's gold until its votes reach a 3-of-5 majority (corpus.gold).
    imported_gold = models.CharField(
        max_length=20, blank=True, default="", db_default="", choices=Label.choices, help_text="The source file's gold."
    )
    # The stopping rule this pair is validated under, and whether it stopped before five labels.
    stopping_rule = models.CharField(
        max_length=10, choices=StoppingRule.choices, default=StoppingRule.FIXED, db_default=StoppingRule.FIXED
    )
    stopped_early = models.BooleanField(default=False, db_default=False)
    word_overlap = models.FloatField(
        null=True,
        blank=True,
        help_text="Share of the hypothesis's content words found in a premise (MPE §4.1); set for multi-premise items.",
    )

    class Meta:
        db_table = "collection_pair"
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
            models.Index(fields=["label_count"], condition=Q(needs_validation=True), name="pair_validation_queue"),
            models.Index(fields=["author"], condition=Q(author__isnull=False), name="pair_author"),
            # The validation claim's ORDER BY label_count DESC, id LIMIT n walks one of these (with
            # or without a dataset): only queued pairs with a free place are in them.
            models.Index(
                fields=["dataset", "-label_count", "id"],
                condition=Q(needs_validation=True, label_count__lt=LABELS_PER_PAIR - F("held_places")),
                name="pair_claim_queue_free",
            ),
            models.Index(
                fields=["-label_count", "id"],
                condition=Q(needs_validation=True, label_count__lt=LABELS_PER_PAIR - F("held_places")),
                name="pair_claim_queue_free_all",
            ),
            # The pairs held by claims, recounted when no claim finds a free one (a released claim).
            models.Index(fields=["id"], condition=Q(held_places__gt=0), name="pair_held"),
            # Pairs written per hour on the dashboard, never the rows an import just added.
            models.Index(fields=["created_at"], condition=Q(author__isnull=False), name="pair_written_at"),
            # Pairs with all five labels, oldest first (quality.selectors.next_pair_to_label).
            models.Index(
                fields=["dataset", "id"], condition=Q(label_count__gte=LABELS_PER_PAIR), name="pair_five_labels"
            ),
            # Pairs that stopped before five labels: counted apart by the statistics.
            models.Index(fields=["dataset"], condition=Q(stopped_early=True), name="pair_stopped_early"),
            # Adjudicated pairs (few): the statistics' correction for decisions, the retired pairs.
            models.Index(fields=["dataset"], condition=~Q(adjudicated_label=""), name="pair_adjudicated"),
            # Pairs written for no label (MPE items): the guesser evidence reads them from here.
            models.Index(fields=["id"], condition=~Q(author_label__in=labels.LABELS), name="pair_unwritten"),
            # Pairs split 2-2-1 (a few in a hundred): the pair browser reads them here, where the five-label
            # index held every five-label pair to test each one's votes.
            models.Index(fields=["id"], condition=split_221(), name="pair_split_221"),
            # Pairs whose gold label differs from their author's (few): the pair browser reads them here.
            models.Index(
                fields=["id"],
                condition=~Q(gold_label=NO_GOLD) & ~Q(gold_label=F("author_label")),
                name="pair_gold_ne_author",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pair_id}: {self.hypothesis[:60]}"

    @property
    def gold_source(self) -> str:
        """crowd, imported, adjudicated or none: where `gold_label` comes from (corpus.gold)."""
        return gold_source(
            self.gold_label, self.adjudicated_label, self.entailment_votes, self.neutral_votes, self.contradiction_votes
        )

    @property
    def genre(self) -> "Genre | None":
        return self.premise.genre

    @property
    def split(self) -> str:
        return self.premise.split


class ValidationLabel(models.Model):
    """One of a pair's labels: the author's (position 1), a validator's (positions 2–5) or a
    replacement for an excluded worker's label (6 on). Every label a pair has lives here, so that
    gold labels can always be recomputed from this table alone.
    """

    # Indexed by `one_label_per_position` (pair, position), which serves a pair's lookups too.
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="labels", db_index=False)
    # Indexed by `label_worker_pairs`, which holds the pair too.
    worker = models.ForeignKey(
        Worker, on_delete=models.SET_NULL, null=True, blank=True, related_name="labels", db_index=False
    )
    position = models.PositiveSmallIntegerField(
        help_text="1 is the author's label; 2–5 are validation labels; 6 on replace excluded ones."
    )
    label = models.CharField(max_length=20, choices=Label.choices)
    ordinal = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Ordinal datasets: the 1–5 rating as given; `label` holds its mapping (5 entailed, 1–4 not).",
    )
    seconds = models.FloatField(null=True, blank=True, help_text="Time the validator spent on the batch / 5.")
    # The study session whose ids its market had not vouched for when the label was written: the
    # label counts nowhere until the market vouches, and never if it refuses. A plain number, not
    # a foreign key: sessions are the crowd layer's, above this one (markets.identity).
    awaiting_market_session = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Study session whose market check this label waits for; empty: it may count."
    )
    # Its worker is excluded in the team of its pair's dataset (`WorkerExclusion`): kept on the label,
    # so that the rule every reader of labels applies is a column of the label itself.
    excluded = models.BooleanField(
        default=False, db_default=False, help_text="Its worker is excluded in this dataset's team: it counts nowhere."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "validation_validationlabel"
        ordering = ["pair_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "position"], name="one_label_per_position"),
            models.UniqueConstraint(
                fields=["pair", "worker"], condition=Q(worker__isnull=False), name="one_label_per_pair_worker"
            ),
            models.CheckConstraint(condition=Q(position__gte=AUTHOR_POSITION), name="position_from_1"),
            models.CheckConstraint(
                condition=Q(ordinal__isnull=True) | (Q(ordinal__gte=1) & Q(ordinal__lte=5)), name="ordinal_1_to_5"
            ),
        ]
        indexes = [
            models.Index(fields=["worker", "created_at"], name="label_worker_time"),
            # A worker's labelled pairs (Pairs' worker and guesser filters) read from the index alone.
            models.Index(fields=["worker"], include=["pair"], name="label_worker_pairs"),
            # A pair's labels that count (`selectors.labels_that_count`) with their words, read from the
            # index alone (the export's lines, a pair at a time).
            models.Index(
                fields=["pair", "position"],
                include=["label", "ordinal"],
                condition=Q(excluded=False, awaiting_market_session__isnull=True),
                name="counted_label_words",
            ),
            # The few replacement labels, found without scanning every label (`selectors.in_gold`).
            models.Index(
                fields=["pair", "position"], condition=Q(position__gt=LABELS_PER_PAIR), name="replacement_labels"
            ),
            # The few labels waiting for a market's word, found by their session when it answers.
            models.Index(
                fields=["awaiting_market_session"],
                condition=Q(awaiting_market_session__isnull=False),
                name="label_awaiting_market",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pair.pair_id} #{self.position}: {self.label}"


class AdjudicationAction(models.TextChoices):
    """What a decision does: give a gold label, retire the pair, or withdraw the decisions before
    it (the gold label goes back to the rule: 3 of 5, or the imported file's)."""

    LABEL = "label", "gold label"
    RETIRE = "retire", "retire the pair"
    WITHDRAW = "withdraw", "back to the rule"


class AdjudicationSource(models.TextChoices):
    FILE = "file", "the imported file's gold label"
    RESEARCHER = "researcher", "a researcher"
    # Two human labels and a calibrated model's agreeing, where a study turned the model's vote on (model_annotators.live_vote).
    MODEL_VOTE = "model_vote", "a model's vote beside two human labels"


class Adjudication(models.Model):
    """A decision on a pair's gold label that overrides the majority of its judgments (MPE §4.2).
    Every decision is kept; the latest is the pair's `adjudicated_label`."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="adjudications")
    action = models.CharField(max_length=10, choices=AdjudicationAction.choices, default=AdjudicationAction.LABEL)
    label = models.CharField(
        max_length=20, blank=True, choices=ADJUDICATED_CHOICES, help_text="The gold label it sets ('' when withdrawn)."
    )
    previous_gold = models.CharField(max_length=20, help_text="The pair's gold label before this decision.")
    source = models.CharField(max_length=12, choices=AdjudicationSource.choices)
    researcher = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    reason = models.CharField(max_length=100, blank=True, help_text="e.g. 2-2-1 split")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair_id", "id"]
        indexes = [models.Index(fields=["pair", "source"], name="adjudication_pair_source")]

    def __str__(self) -> str:
        return f"{self.pair.pair_id}: {self.label} ({self.source})"


# What is kept beside a pair lives in its own module, as models of this app.
from .pair_record_models import Grammaticality as Grammaticality  # noqa: E402
from .pair_record_models import GrammaticalityJudgment as GrammaticalityJudgment  # noqa: E402
from .pair_record_models import PairProvenance as PairProvenance  # noqa: E402

# The tallies' tables live with their engine (corpus/tallies/models.py), as models of this app.
from .tallies.models import LengthKind as LengthKind  # noqa: E402
from .tallies.models import LengthTally as LengthTally  # noqa: E402
from .tallies.models import PairTally as PairTally  # noqa: E402
from .tallies.models import Tally as Tally  # noqa: E402
from .tallies.models import WordTally as WordTally  # noqa: E402
from .tallies.models import WorkerLabelTally as WorkerLabelTally  # noqa: E402
from .tallies.models import WorkerSecondsTally as WorkerSecondsTally  # noqa: E402
from .tallies.models import WriterTally as WriterTally  # noqa: E402
