"""The tallies' tables: append-only deltas of maintained aggregates (`corpus.tallies.engine`),
models of the corpus app (`corpus.models` names them too)."""

from django.db import models


class Tally(models.Model):
    """An append-only delta of a maintained aggregate: `n` (signed) rows of the table it counts
    have the key of this row. Writers only ever INSERT, so no row is hot."""

    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.CASCADE, related_name="+")
    split = models.CharField(max_length=5, blank=True)
    genre = models.ForeignKey("corpus.Genre", on_delete=models.CASCADE, related_name="+", db_index=False)
    n = models.BigIntegerField()

    class Meta:
        abstract = True


class PairTally(Tally):
    """Pairs per dataset × split × genre × author label × counters × imported gold (the fallback
    where the votes have no majority) × the validation queue's two flags: the gold label follows
    by the one rule (`corpus.gold.gold_from_votes`), and every agreement figure and pair count is
    a sum over these rows."""

    author_label = models.CharField(max_length=20)
    label_count = models.SmallIntegerField()
    entailment_votes = models.SmallIntegerField()
    neutral_votes = models.SmallIntegerField()
    contradiction_votes = models.SmallIntegerField()
    imported_gold = models.CharField(max_length=20, blank=True, default="")
    needs_validation = models.BooleanField(default=False)
    stopped_early = models.BooleanField(default=False)

    class Meta:
        db_table = "corpus_pairtally"
        verbose_name_plural = "pair tallies"

    def __str__(self) -> str:
        return f"pair tally {self.pk} ({self.label_count} labels)"


class WordTally(Tally):
    """Hypotheses per dataset × split × genre × counted label (`corpus.giveaways.counted_label`) ×
    word (word "" counts the hypotheses themselves): the give-away words (Poliak et al. §6) summed
    instead of tokenising every hypothesis."""

    # Indexed first in `word_tally_listing`, which serves the foreign key too.
    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.CASCADE, related_name="+", db_index=False)
    label = models.CharField(max_length=20)
    word = models.TextField(blank=True)

    class Meta:
        db_table = "corpus_wordtally"
        verbose_name_plural = "word tallies"
        # A dataset's give-away listing sums its rows by (label, word), read in that order from the
        # first index with the sums beside the keys. "Has the dataset a row newer than the listing's
        # mark" (artifacts.listings) reads one entry of the second, not every newer row of the table.
        indexes = [
            models.Index(fields=["dataset", "label", "word"], include=["n"], name="word_tally_listing"),
            models.Index(fields=["dataset", "id"], name="word_tally_newer"),
        ]

    def __str__(self) -> str:
        return f"word tally {self.pk} ({self.label}: {self.word!r})"


class LengthKind(models.TextChoices):
    PREMISE = "premise", "premise"
    HYPOTHESIS = "hypothesis", "hypothesis"
    RELATION = "relation", "edit relations of a pair (words holds the bit mask of corpus.overlap)"


class LengthTally(Tally):
    """Premises (kind premise) or pairs (kind hypothesis) per dataset × split × genre × length in
    words: the dashboard's premise counts and length histograms (MultiNLI Figure 2); and pairs
    (kind relation) per bit mask of their edit relations to the premise (`corpus.overlap`)."""

    kind = models.CharField(max_length=10, choices=LengthKind.choices)
    words = models.IntegerField()

    class Meta:
        db_table = "corpus_lengthtally"
        verbose_name_plural = "length tallies"

    def __str__(self) -> str:
        return f"length tally {self.pk} ({self.kind}: {self.words} words)"


class WorkerLabelTally(Tally):
    """Validation labels (positions 2 on, each by a worker) per dataset × split × worker × label ×
    leave-one-out gold × the pair's gold label × the label its author wrote the pair for. Moved by
    `corpus.tallies.worker_tally`, the one place that says how."""

    genre = None  # type: ignore[assignment]  # no genre: never read per genre, and it would multiply the rows
    # No foreign-key constraint in the database (Django still deletes the rows with their worker): a
    # submit's deltas name the other workers of its pairs, and checking each of them at commit took a
    # share lock on their rows, which hundreds of concurrent submits would share.
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+", db_constraint=False)
    label = models.CharField(max_length=20)
    # The gold label of the pair's OTHER counted labels (3 votes among them), '-' when they have none.
    loo_gold = models.CharField(max_length=20)
    gold_label = models.CharField(max_length=20)
    author_label = models.CharField(max_length=20, blank=True)

    class Meta:
        db_table = "corpus_workerlabeltally"
        verbose_name_plural = "worker label tallies"

    def __str__(self) -> str:
        return f"worker label tally {self.pk} (worker {self.worker_id}: {self.label})"


class WorkerSecondsTally(Tally):
    """Timed validation labels per dataset × split × worker × seconds bucket
    (`corpus.tallies.worker_tally.bucket_sql`): a histogram, since a median cannot be summed."""

    genre = None  # type: ignore[assignment]
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+", db_constraint=False)
    bucket = models.SmallIntegerField()

    class Meta:
        db_table = "corpus_workersecondstally"
        verbose_name_plural = "worker seconds tallies"

    def __str__(self) -> str:
        return f"worker seconds tally {self.pk} (worker {self.worker_id}: bucket {self.bucket})"


class WriterTally(Tally):
    """Pairs with an author per dataset × split × author × the label they wrote for × gold label ×
    whether all five labels are in: the writers' figures of the workers page."""

    genre = None  # type: ignore[assignment]
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+", db_constraint=False)
    author_label = models.CharField(max_length=20)
    gold_label = models.CharField(max_length=20)
    five_labels = models.BooleanField()

    class Meta:
        db_table = "corpus_writertally"
        verbose_name_plural = "writer tallies"

    def __str__(self) -> str:
        return f"writer tally {self.pk} (worker {self.worker_id}: {self.author_label} -> {self.gold_label})"
