"""What the browser reported about how one sentence was written, beside the sentence, and the flags
judged from it (authorship.judgements). Evidence, never a verdict: nothing here changes a label."""

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q

from corpus.models import Tally

from .flag_lookup import FLAG_FILTERS, flag_filter_index_name, holds_any_flag

# The pending list of a GIN index on a table the writing submit both reads and writes: every lookup
# reads it whole, and the insert that fills it merges it into the index (PostgreSQL's 4 MB default:
# about 6,000 sentences, read by every copy check in between). 64 kB is PostgreSQL's least.
GIN_PENDING_LIST_KB = 64


class WritingEvidence(models.Model):
    """One written field's typing evidence: a hypothesis (its Pair) or an adversarial try. The counts
    are the browser's (bounded by authorship.evidence); without evidence they are zero."""

    pair = models.OneToOneField(
        "corpus.Pair", null=True, blank=True, on_delete=models.CASCADE, related_name="writing_evidence"
    )
    # Neither key has an index of its own: `evidence_worker_latest` and `evidence_session_flagged` lead
    # with them, and each index more is one more write for every sentence submitted.
    worker = models.ForeignKey(
        "corpus.Worker", on_delete=models.CASCADE, related_name="writing_evidence", db_index=False
    )
    study_session = models.ForeignKey(
        "crowd.StudySession",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="writing_evidence",
        db_index=False,
    )
    field_name = models.CharField(max_length=40, help_text="The form field the sentence was written in.")
    text_chars = models.PositiveIntegerField(default=0, help_text="Characters of the sentence as saved.")
    has_evidence = models.BooleanField(default=False)
    keystrokes = models.PositiveIntegerField(default=0)
    deletions = models.PositiveIntegerField(default=0)
    typed_chars = models.PositiveIntegerField(default=0)
    pasted_chars = models.PositiveIntegerField(default=0, help_text="By paste or drag and drop.")
    untrusted_chars = models.PositiveIntegerField(
        default=0, help_text="Set by a script, by synthetic events, or inserted with no keystroke."
    )
    prefilled_chars = models.PositiveIntegerField(default=0, help_text="In the field when the page opened.")
    pasted_after_away_chars = models.PositiveIntegerField(default=0)
    away_count = models.PositiveIntegerField(default=0, help_text="Times the page lost focus or was hidden.")
    away_ms = models.PositiveIntegerField(default=0)
    first_key_ms = models.PositiveIntegerField(null=True, blank=True)
    typing_ms = models.PositiveIntegerField(default=0)
    intervals = models.PositiveIntegerField(default=0)
    interval_mean_ms = models.FloatField(null=True, blank=True)
    interval_cv = models.FloatField(null=True, blank=True)
    flags = models.JSONField(default=list, blank=True, help_text="authorship.judgements.Flag values.")
    flagged = models.BooleanField(default=False, help_text="A flag that says it was not typed by the writer.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "writing evidence"
        indexes = [
            models.Index(fields=["study_session", "flagged"], name="evidence_session_flagged"),
            models.Index(fields=["worker", "flagged"], name="evidence_worker_flagged"),
            # A writer's latest records (the repeat check outside a study, newest first): the
            # writer's own range of the index, where the primary key walked back through every
            # writer's records to learn that a new writer has none.
            models.Index(fields=["worker", "-id"], name="evidence_worker_latest"),
            # The Pairs page's flag filters: each one's pairs, from an index of the records holding
            # one of its flags alone, read in order without the records (authorship.flag_lookup).
            *(
                models.Index(fields=["pair"], condition=Q(holds_any_flag(flags)), name=flag_filter_index_name(name))
                for name, flags in FLAG_FILTERS.items()
            ),
        ]

    def __str__(self) -> str:
        return f"{self.field_name}: {', '.join(self.flags) or 'no flags'}"


class WrittenSentence(models.Model):
    """A hypothesis written on the platform, by its normalised text: the table a new sentence is looked
    up in for near-copies of any earlier one (authorship.copies)."""

    pair = models.OneToOneField("corpus.Pair", on_delete=models.CASCADE, related_name="written_sentence")
    premise = models.ForeignKey("corpus.Premise", on_delete=models.CASCADE, related_name="+")
    # The pair's dataset, kept with the sentence: a team's figures of copies read their own rows
    # without joining every pair.
    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.CASCADE, related_name="+")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="written_sentences")
    study_session = models.ForeignKey(
        "crowd.StudySession", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    normalised = models.CharField(max_length=300, help_text="Case-folded words, one space apart (at most 300).")
    copy_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The earlier sentence."
    )
    copy_similarity = models.FloatField(null=True, blank=True)
    # Whose sentence the copy is, kept with it: True another writer's, False the writer's own from
    # another session (None: not a copy). It stays when the copied sentence leaves (`copy_of` then
    # empties): the copy was written as one.
    copies_other_writer = models.BooleanField(null=True, blank=True)
    # The first sentence of the copy's group: copies of copies share it, so a cluster is one grouping.
    cluster_root = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # What survives a paraphrase (authorship.paraphrase): the sentence's rough lemmas with its
    # premise's content words slotted out, and the content words it did not take from its premise.
    signature = models.CharField(max_length=300, blank=True, default="", help_text="Lemmas; premise words as _.")
    own_words = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["normalised"], name="written_sentence_normalised"),
            # A near-copy's candidates: the sentences sharing a MinHash band of its trigrams
            # (authorship.copies; `copy_bands` is created by migration 0014).
            GinIndex(
                models.Func(
                    models.F("normalised"), function="copy_bands", output_field=ArrayField(models.IntegerField())
                ),
                name="written_sentence_copy_bands",
                gin_pending_list_limit=GIN_PENDING_LIST_KB,
            ),
            # Looked up at every writing submit as often as it is written: a pending list kept short
            # (GIN_PENDING_LIST_KB), which every lookup reads whole (bench/gin_pending.py).
            GinIndex(
                fields=["own_words"], name="written_sentence_own_words", gin_pending_list_limit=GIN_PENDING_LIST_KB
            ),
            # The copies (a few in a hundred sentences): the Pairs page's copy flag, and a group's
            # copies by its first sentence (a team's first copy of a group first written elsewhere).
            models.Index(
                fields=["worker", "copies_other_writer"],
                condition=Q(copy_of__isnull=False),
                name="written_sentence_copier",
            ),
            models.Index(
                fields=["cluster_root"], condition=Q(cluster_root__isnull=False), name="written_sentence_in_group"
            ),
        ]

    def __str__(self) -> str:
        return self.normalised


class SenseScore(models.Model):
    """How much a written hypothesis has to do with its premise (authorship.sense): the cosine of
    their sentence embeddings, scored in the background after the submit. A signal for researchers
    and the writer's figures, never a refusal: honest contradictions can be far from the premise."""

    pair = models.OneToOneField("corpus.Pair", on_delete=models.CASCADE, related_name="sense_score")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="sense_scores")
    similarity = models.FloatField(help_text="Cosine of the premise's and the hypothesis's embeddings.")
    known_word_share = models.FloatField(help_text="Share of the hypothesis's words that English word lists know.")
    low_sense = models.BooleanField(default=False, help_text="Below the calibrated threshold (docs/quality.md).")
    method = models.CharField(max_length=60, help_text="The scorer and its threshold.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["worker", "low_sense"], name="sense_worker_low")]

    def __str__(self) -> str:
        return f"sense {self.similarity:.2f} of pair {self.pair_id}"


class NetworkSighting(models.Model):
    """A participant id seen from one network group: the client's address (as `base.login_throttle`
    reads it, behind a trusted proxy its header) cut to its /24 (IPv4) or /48 (IPv6). Ids in one
    small group are likely one household or one person; verifiers of one adversarial example are
    kept apart by it (adversarial.verification)."""

    network = models.CharField(max_length=64)
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="network_sightings")
    first_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["network", "worker"], name="one_sighting_per_network_worker")]
        indexes = [models.Index(fields=["network"], name="network_sighting_network")]

    def __str__(self) -> str:
        return f"{self.worker_id} from {self.network}"


class TypingTally(Tally):
    """Typing records per dataset × study × writer × UTC day × flagged × with a record, as signed
    deltas (`corpus.tallies`), kept by `authorship.typing_tally` for the workers page. Outside a
    study the dataset and study are empty."""

    dataset = models.ForeignKey(  # type: ignore[assignment]
        "corpus.Dataset", null=True, on_delete=models.CASCADE, related_name="+"
    )
    split = None  # type: ignore[assignment]
    genre = None  # type: ignore[assignment]
    study = models.ForeignKey("crowd.Study", null=True, on_delete=models.CASCADE, related_name="+", db_index=False)
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    flagged = models.BooleanField()
    has_evidence = models.BooleanField()

    class Meta(Tally.Meta):
        verbose_name_plural = "typing tallies"
        indexes = [models.Index(fields=["study", "day"], name="typing_tally_study_day")]


class SentenceTally(Tally):
    """Written sentences per dataset × writer × study session × whose sentence a copy copies (None:
    not a copy) × copy group (its first sentence; None: in no group), as signed deltas
    (`corpus.tallies`), kept by `authorship.sentence_tally` for the workers page's copies figures. A
    group's first sentence deleted takes the group with it here as on the sentences (SET_NULL on both)."""

    split = None  # type: ignore[assignment]
    genre = None  # type: ignore[assignment]
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    study_session = models.ForeignKey("crowd.StudySession", null=True, on_delete=models.SET_NULL, related_name="+")
    copies_other_writer = models.BooleanField(null=True)
    cluster_root = models.ForeignKey(WrittenSentence, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta(Tally.Meta):
        verbose_name_plural = "sentence tallies"
