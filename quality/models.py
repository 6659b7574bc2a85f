"""What quality control stores: researchers' own labels on pairs (the reference that catch trials
and qualification tests are scored against).

The pure statistics (flags, aggregation) stay free of Django in `flags.py` and `aggregation.py`.
"""

from typing import Any, NoReturn

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from base.long_tasks import JobStatus, LongTask
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

    def __str__(self) -> str:
        # Names the pair as a researcher finds it ("444: neutral" would name nothing):
        # its pairID, dataset and hypothesis. Lists of these select_related("pair__dataset").
        pair = self.pair
        hypothesis = pair.hypothesis if len(pair.hypothesis) <= 60 else pair.hypothesis[:59] + "…"
        return f"{pair.pair_id} ({pair.dataset.slug}): “{hypothesis}” → {self.label}"


# --- qualification tests: a worker who reaches the study's pass mark joins the trusted pool ---

# The pool of a qualification test holds at least this many times a try's items: with
# one item set for all, answers learnt on throwaway ids passed on the next id at its first try.
POOL_PER_TRY = 2


class QualificationTest(models.Model):
    """What a worker answers before a study with access 'qualified' lets them work: a set of pairs
    with researchers' labels. Reaching the pass mark admits them to the study (and, with
    `grants_trusted`, to the trusted pool that trusted-only datasets are open to)."""

    study = models.OneToOneField("crowd.Study", on_delete=models.CASCADE, related_name="qualification_test")
    items = models.ManyToManyField(
        ReferenceLabel,
        related_name="qualification_tests",
        help_text="The pool of pairs, with their expected labels: each try draws its own items from it at random. "
        f"It must hold at least {POOL_PER_TRY} times as many items as a try asks.",
    )
    items_per_try = models.PositiveSmallIntegerField(
        default=5,
        validators=[MinValueValidator(1)],
        help_text="How many items of the pool one try asks (drawn at random per try, kept with the try).",
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
    show_wrong_items_after_last_try = models.BooleanField(
        default=False,
        help_text="After the last allowed try only, tell the worker which items of that try were wrong. "
        "Before it, a try says pass or fail and nothing more (a count of matches would leak the answers).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
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
    # The browser that sent the try (crowd's device cookie): tries from one device count together,
    # whatever participant id sent them. Blank for tries from before, or without a cookie.
    device = models.CharField(max_length=64, blank=True)
    finished_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-finished_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["test", "worker", "number"], name="one_attempt_per_number"),
        ]

    def __str__(self) -> str:
        return f"{self.worker} try {self.number}: {self.correct}/{self.total}"


class QualificationDraw(models.Model):
    """One try's items, drawn at random from the test's pool when its page is first shown and kept
    until the try is sent: a reload shows the same items, and the try is judged on them alone.

    The form names the try by `token` and each item by its own token (QualificationDrawItem), never
    by a database id, so a field name says nothing about the pair and is worth nothing in another
    try or under another participant id. A worker has at most one open draw per test; sent, it
    points at its attempt."""

    test = models.ForeignKey(QualificationTest, on_delete=models.CASCADE, related_name="draws")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="qualification_draws")
    token = models.CharField(max_length=64, unique=True)
    device = models.CharField(max_length=64, blank=True, help_text="The browser the items were drawn for.")
    drawn_at = models.DateTimeField(auto_now_add=True)
    attempt = models.OneToOneField(
        QualificationAttempt, on_delete=models.CASCADE, null=True, blank=True, related_name="draw"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["test", "worker"], condition=models.Q(attempt__isnull=True), name="one_open_draw_per_worker"
            ),
        ]

    def __str__(self) -> str:
        return f"draw {self.pk} of {self.worker_id} for test {self.test_id}"


class QualificationDrawItem(models.Model):
    """One item of a draw, in the order shown, with the token its answer field is named by."""

    draw = models.ForeignKey(QualificationDraw, on_delete=models.CASCADE, related_name="items")
    reference = models.ForeignKey(ReferenceLabel, on_delete=models.CASCADE, related_name="qualification_draw_items")
    position = models.PositiveSmallIntegerField()
    token = models.CharField(max_length=64)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["draw", "token"], name="one_token_per_draw_item"),
            models.UniqueConstraint(fields=["draw", "reference"], name="one_reference_per_draw"),
        ]

    def __str__(self) -> str:
        return f"item {self.position} of draw {self.draw_id}"


class QualificationAnswer(models.Model):
    attempt = models.ForeignKey(QualificationAttempt, on_delete=models.CASCADE, related_name="answers")
    reference = models.ForeignKey(ReferenceLabel, on_delete=models.CASCADE, related_name="qualification_answers")
    label = models.CharField(max_length=20, choices=Label.choices)
    is_correct = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["attempt", "reference"], name="one_answer_per_item")]

    def __str__(self) -> str:
        return f"answer {self.label} in attempt {self.attempt_id}"


# --- probabilistic aggregation (beyond the papers): runs, per-pair results, per-worker estimates ---


class AggregationRun(LongTask):
    """One fit of label models (Dawid–Skene, MACE, optionally GLAD) on a dataset's counted labels.

    The corpus label stays the majority-vote gold; a run only records what the models say beside
    it. `figures` holds, per method: seconds, pairs scored, agreement with gold, pairs where the
    model overrules gold or resolves a "-", and what its worker skill means.
    """

    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.CASCADE, related_name="aggregation_runs")
    methods = models.JSONField(default=list, help_text='e.g. ["dawid_skene", "mace"].')
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.PENDING)
    progress = models.FloatField(default=0.0, help_text="0–1 while running.")
    stage = models.CharField(max_length=100, blank=True, help_text="What the run is doing now.")
    started_at = models.DateTimeField(null=True, blank=True)
    pair_count = models.PositiveIntegerField(default=0)
    label_count = models.PositiveIntegerField(default=0)
    worker_count = models.PositiveIntegerField(default=0)
    figures = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"aggregation {self.pk} of {self.dataset_id} ({self.status})"


class AggregatedLabel(models.Model):
    """What one method of one run says about one pair: its label, that label's posterior, and
    the pair's majority-vote gold when the run read it (`differs` = the two disagree)."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="pair_results")
    method = models.CharField(max_length=20)
    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="aggregated_labels")
    label = models.CharField(max_length=20)
    posterior = models.FloatField()
    gold_label = models.CharField(max_length=20)
    differs = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "method", "pair"], name="one_result_per_run_method_pair")]
        indexes = [
            # The disagreement page: a run's pairs where a method differs from gold, most confident first.
            models.Index(
                fields=["run", "method", "-posterior", "pair"],
                condition=models.Q(differs=True),
                name="aggregated_label_differs",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.method} label of pair {self.pair_id}: {self.label}"


class WorkerEstimate(models.Model):
    """What one method of one run estimates about one worker: a skill (higher is better; its
    meaning is the method's, see AggregationRun.figures) and, for Dawid–Skene, the confusion
    matrix {true label: {given label: probability}}."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="worker_estimates")
    method = models.CharField(max_length=20)
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="aggregation_estimates")
    skill = models.FloatField()
    labels = models.PositiveIntegerField(help_text="Labels of this worker the run read.")
    confusion = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "method", "worker"], name="one_estimate_per_run_method_worker")
        ]
        indexes = [models.Index(fields=["run", "method", "-skill"], name="worker_estimate_rank")]

    def __str__(self) -> str:
        return f"{self.method} estimate of worker {self.worker_id}"


# --- correlated errors: groups of workers an aggregation run found, and the pairs whose gold rests on them ---


class CorrelatedWorkerGroup(models.Model):
    """Workers whose labels agree far beyond what their accuracy predicts (bots sharing a rule,
    colluders, one person under several ids), found by `quality.correlated` in an aggregation run.
    `evidence` holds the flagged pairs of members: shared tasks, disagreements against the
    expectation for independent workers, co-errors (same wrong label) and the one-sided p-value."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="correlated_groups")
    number = models.PositiveSmallIntegerField(help_text="1 for the largest group of the run.")
    members = models.ManyToManyField("corpus.Worker", related_name="correlated_groups")
    shared = models.PositiveIntegerField(help_text="Scored tasks shared by its flagged pairs of members, summed.")
    disagreements = models.PositiveIntegerField()
    expected_disagreements = models.FloatField(help_text="What independent workers of their accuracy would give.")
    co_errors = models.PositiveIntegerField(help_text="Tasks where two members gave the same label, not the reference.")
    evidence = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="one_correlated_group_number_per_run")]

    def __str__(self) -> str:
        return f"correlated group {self.number} of aggregation run {self.run_id}"


class GroupDecidedPair(models.Model):
    """A pair whose gold label rests on a correlated group's votes (`quality.correlated.gold_at_risk`):
    it waits in the adjudication queue `correlated` with the reason, until a researcher decides."""

    run = models.ForeignKey(AggregationRun, on_delete=models.CASCADE, related_name="group_decided_pairs")
    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="group_decided")
    group = models.ForeignKey(CorrelatedWorkerGroup, on_delete=models.CASCADE, related_name="decided_pairs")
    gold_label = models.CharField(max_length=20, help_text="The 3-of-5 gold the run read.")
    reason = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "pair"], name="one_group_decision_per_run_pair")]

    def __str__(self) -> str:
        return f"pair {self.pair_id}: {self.reason}"


# --- catch trials and the bonus ledger ---


class CatchTrialAnswer(models.Model):
    """A worker's label on a catch trial served in their validation batch, scored against the
    researcher's reference label at submit time.

    A catch-trial label is kept here and NOT in the pair's labels: it never moves the pair's
    counters or gold label (the pair is the researchers' yardstick, not a pair being validated).
    """

    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="catch_trial_answers")
    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="catch_trial_answers")
    study_session = models.ForeignKey(
        "crowd.StudySession", on_delete=models.SET_NULL, null=True, blank=True, related_name="catch_trial_answers"
    )
    batch = models.UUIDField(help_text="The validation batch it was served in.")
    label = models.CharField(max_length=20, choices=Label.choices)
    expected = models.CharField(max_length=20, choices=Label.choices, help_text="The reference label at submit time.")
    matched = models.BooleanField()
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A catch trial is served to a worker once (their claims are unique per pair too).
            models.UniqueConstraint(fields=["worker", "pair"], name="one_catch_answer_per_worker_pair"),
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} on {self.pair_id}: {self.label} ({'match' if self.matched else 'no match'})"


class BonusKind(models.TextChoices):
    EARNED = "earned", "earned"
    PAID = "paid", "paid"


class BonusCause(models.TextChoices):
    """What a bonus is for, written by the code that earns it; a paid row repeats its earned row's."""

    CATCH_TRIAL = "catch_trial", "catch trial answered as the researchers did"
    FOOLED_MODEL = "fooled_model", "verified example that fooled the model"
    OTHER = "other", "other bonus"


class LedgerIsAppendOnly(Exception):
    pass


class BonusEntry(models.Model):
    """The bonus ledger: one row per bonus earned; paying one adds a `paid` row that points at it.

    Rows are never edited nor deleted (the model refuses, and on PostgreSQL a trigger refuses
    UPDATE and DELETE too). Two constraints keep the money right: an earned bonus is counted once
    per worker, catch item and study session; a `paid` row names its earned row uniquely, so
    nothing is paid twice.
    """

    kind = models.CharField(max_length=6, choices=BonusKind.choices)
    worker = models.ForeignKey("corpus.Worker", on_delete=models.PROTECT, related_name="bonus_entries")
    study = models.ForeignKey("crowd.Study", on_delete=models.PROTECT, related_name="bonus_entries")
    study_session = models.ForeignKey(
        "crowd.StudySession",
        on_delete=models.PROTECT,
        related_name="bonus_entries",
        help_text="The Prolific session / MTurk assignment the bonus belongs to.",
    )
    pair = models.ForeignKey(
        "corpus.Pair",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="bonus_entries",
        help_text="The catch item (none for a discretionary bonus).",
    )
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    currency = models.CharField(max_length=3)
    cause = models.CharField(max_length=12, choices=BonusCause.choices)
    reason = models.CharField(max_length=200)
    pays = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="payment",
        help_text="For a paid row: the earned row it pays.",
    )
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "bonus entries"
        constraints = [
            models.UniqueConstraint(
                fields=["worker", "pair", "study_session"],
                condition=models.Q(kind="earned"),
                name="one_bonus_per_worker_catch_session",
            ),
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="bonus_amount_positive"),
            # No default: a writer that forgets the cause is refused, never filed under "other".
            models.CheckConstraint(condition=models.Q(cause__in=BonusCause.values), name="bonus_cause_known"),
            models.CheckConstraint(
                condition=(models.Q(kind="earned", pays__isnull=True) | models.Q(kind="paid", pays__isnull=False)),
                name="paid_rows_name_what_they_pay",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "kind"], name="bonus_study_kind"),
            # The bonus page lists a study's unpaid bonuses a page at a time in the ledger's order:
            # walked in that order and stopped at the page's rows, not every earned bonus sorted.
            models.Index(
                fields=["study", "created_at", "id"], condition=models.Q(kind="earned"), name="bonus_earned_in_order"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.currency} to {self.worker_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise LedgerIsAppendOnly("Bonus ledger rows are never edited; add a row instead.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise LedgerIsAppendOnly("Bonus ledger rows are never deleted.")


class BonusTally(models.Model):
    """The ledger summed per study, session, worker, cause and currency: earned and paid bonuses, and
    a sum of hashes of the unpaid ones' ids (`quality.bonus_lines.ids_hash`). Kept by triggers on the
    ledger (PostgreSQL), so the bonus page's figures and groups read a row per session and cause,
    not one per bonus. Never written by the application."""

    # The ledger's own keys guard these; the unique constraint, led by the study, is the one index.
    study = models.ForeignKey(
        "crowd.Study", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="bonus_tallies"
    )
    study_session = models.ForeignKey(
        "crowd.StudySession", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    worker = models.ForeignKey(
        "corpus.Worker", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    cause = models.CharField(max_length=12, choices=BonusCause.choices)
    currency = models.CharField(max_length=3)
    earned_count = models.IntegerField()
    earned_amount = models.DecimalField(max_digits=14, decimal_places=2)
    paid_count = models.IntegerField()
    paid_amount = models.DecimalField(max_digits=14, decimal_places=2)
    unpaid_ids_hash = models.DecimalField(max_digits=40, decimal_places=0)

    class Meta:
        verbose_name_plural = "bonus tallies"
        constraints = [
            models.UniqueConstraint(
                fields=["study", "study_session", "worker", "cause", "currency"], name="one_bonus_tally_per_group"
            )
        ]

    def __str__(self) -> str:
        return f"{self.study_id}/{self.study_session_id} {self.cause}: {self.earned_count - self.paid_count} unpaid"


class WorkerFlagScope(models.Model):
    """When the workers' figures and flags of one scope (`corpus.scope.Scope.datasets_key`: every
    dataset, one dataset, a group of teams' datasets) were last computed: the pages say "flags as
    of" this time. Its `WorkerFlagRow`s are written with it, in one transaction."""

    key = models.CharField(max_length=200, unique=True)
    computed_at = models.DateTimeField()
    # The workers the checks flag, in `worker_quality`'s order: a page that needs only who is
    # flagged (the adjudication queue, the bonus marks) reads this one row.
    flagged = models.JSONField(default=list)
    # The pairs those workers labelled (the flagged adjudication queue's count, less the pairs decided
    # since): counted by the first adjudication page after the rows were computed, None until then.
    flagged_pairs = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"worker flags of {self.key} as of {self.computed_at:%Y-%m-%d %H:%M}"


class WorkerFlagRow(models.Model):
    """One worker's row of `quality.selectors.worker_quality` for a scope, as computed at its
    scope's `computed_at`: the figures the workers page shows and the flags with their reasons,
    kept so a page reads the rows it shows instead of computing every worker's (the flags'
    Benjamini–Hochberg correction runs over every validator, so no page of rows flags itself)."""

    scope = models.ForeignKey(WorkerFlagScope, on_delete=models.CASCADE, related_name="rows")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    # The row's place in `worker_quality`'s order (flagged first, then by labels given).
    position = models.PositiveIntegerField()
    # WorkerQuality's figures by field name (`quality.flag_rows.FIGURE_FIELDS`).
    figures = models.JSONField(default=dict)
    # [{"kind", "reason", "figures"}] as `quality.flags.WorkerFlag` has them; [] when not flagged.
    flags = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "position"], name="one_worker_flag_row_per_place"),
            models.UniqueConstraint(fields=["scope", "worker"], name="one_worker_flag_row_per_worker"),
        ]

    def __str__(self) -> str:
        return f"worker {self.worker_id} in {self.scope_id}: {len(self.flags)} flag(s)"
