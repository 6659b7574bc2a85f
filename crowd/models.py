"""Studies on a crowd market and the visits workers make to them.

A study gives a link (`/study/<slug>/`) that a market such as Prolific or Mechanical Turk opens
with the worker's ids; each visit is a StudySession that counts the worker's tasks towards the
completion code. The tables keep the names they had in `collection` (`db_table`).
"""

from decimal import Decimal
from typing import ClassVar

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from corpus.labels import THREE_WAY_SCHEME
from corpus.models import ItemKind
from teams.models import default_team_id

from .codes import completion_code, link_signature, new_study_secret


class TaskKind(models.TextChoices):
    WRITING = "writing", "hypothesis writing"
    VALIDATION = "validation", "validation"
    MPE_JUDGMENT = "mpe", "MPE judgments (multi-premise items)"
    ADVERSARIAL = "adversarial", "adversarial writing (model in the loop)"
    PREMISE_LABELS = "premise", "MPE per-premise labels (one caption at a time)"


# The tasks whose items are multi-premise (MPE) items: their studies need a multi-premise dataset.
MULTI_PREMISE_TASKS = frozenset({TaskKind.MPE_JUDGMENT, TaskKind.PREMISE_LABELS})


class ClaimStatus(models.TextChoices):
    OPEN = "open", "open"
    SUBMITTED = "submitted", "submitted"
    EXPIRED = "expired", "expired"
    RELEASED = "released", "released"


class TaskClaim(models.Model):
    """What every claimed task records: the study visit it counts for, where it stands, and when."""

    study_session = models.ForeignKey("crowd.StudySession", on_delete=models.SET_NULL, null=True, blank=True)
    status = models.CharField(max_length=10, choices=ClaimStatus.choices, default=ClaimStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # How often its worker took it back after it ran out (crowd.holds: at most HOLD_TAKE_BACKS).
    # The database default serves INSERTs that do not name it (the release before during a deploy,
    # bench/costs_page.py).
    take_backs = models.PositiveSmallIntegerField(default=0, db_default=0)
    # The path from a claim to its dataset, which each task app's claim names: a team's exclusion
    # releases the excluded workers' open claims on that team's datasets, and no other team's.
    DATASET_PATH: ClassVar[str] = ""

    class Meta:
        abstract = True

    @property
    def seconds_taken(self) -> float | None:
        if self.submitted_at is None:
            return None
        return (self.submitted_at - self.created_at).total_seconds()


class TypingEvidenceAction(models.TextChoices):
    """What a writing study does when the typing evidence (authorship app) says a sentence was not typed."""

    RECORD = "record", "only record the evidence"
    WARN = "warn", "warn the participant at once (please type your own sentences)"
    REFUSE_PASTE = "refuse", "refuse pasted or script-set text in the field"
    HOLD_CODE = "hold", "hold the completion code of a session with flagged sentences"


class ServingOrder(models.TextChoices):
    """In what order a writing study's pool is served: in import order alone, a study pooled on
    fiction and travel could write all its pairs on fiction before a travel premise went out."""

    BALANCED = "balanced", "balanced across the pool's genres (or its files, with one genre)"
    RANDOM = "random", "in random order"
    IMPORTED = "imported", "in import order"


class StudyAccess(models.TextChoices):
    OPEN = "open", "open to all"
    QUALIFIED = "qualified", "workers who passed the study's qualification test"
    CLOSED = "closed", "a closed list of workers"


class ContributionsOnWithdrawal(models.TextChoices):
    """A study's policy for the contributions of a participant who withdraws or is erased."""

    KEEP = "keep", "keep pseudonymous contributions"
    DELETE = "delete", "delete contributions"


class Study(models.Model):
    """A crowd-market study: where its link sends workers and the completion code they get."""

    # The team it belongs to (teams.access scopes every reader by it; docs/teams.md).
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="studies", default=default_team_id)
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.PROTECT, related_name="studies")
    task_kind = models.CharField(max_length=12, choices=TaskKind.choices, default=TaskKind.WRITING)
    tasks_per_batch = models.PositiveSmallIntegerField(default=1, help_text="Tasks a worker does before the code.")
    completion_code = models.CharField(
        max_length=64,
        help_text="The study's code; each session's code is this code followed by a suffix only that session gets.",
    )
    completion_url = models.URLField(
        blank=True,
        max_length=500,
        help_text="Optional: where a finished participant is sent back (e.g. "
        "https://app.prolific.com/submissions/complete?cc={code}); {code} becomes the session's code.",
    )
    # Prolific's completion code for "no consent": a participant who declines the information sheet
    # (consent app) is told to return the study with it, so the market records why they left.
    no_consent_code = models.CharField(
        max_length=64,
        blank=True,
        help_text="Optional: the code a participant who does not consent enters on the market "
        '(Prolific\'s "no consent" code); blank: they are asked to return the study (MTurk: the HIT).',
    )
    # A participant who did some tasks and finds none left (the pool ran out mid-visit) cannot
    # earn the completion code: the study's choice of what they are told to do (crowd.stranding).
    partial_completion_code = models.CharField(
        max_length=64,
        blank=True,
        help_text="Optional: the code a participant enters when the pool runs out before their last task "
        "(on Prolific, a completion code whose action pays part or asks you to review); blank: they are "
        "asked to return the study (MTurk: the HIT) and are paid nothing by the market.",
    )
    require_signed_link = models.BooleanField(
        default=False,
        help_text="Only accept links that carry the study's signature (sig=…; see the signed link below).",
    )
    # A paid study launches only with verified ids (crowd.arrival.launch_refusal): its market confirms
    # each participant, or its links are signed; else the researcher ticks this, and pays no bonus.
    open_link_unverified = models.BooleanField(
        default=False,
        help_text="Open link: ids are unverified, no bonuses. A paid study without a market connection or "
        "signed links opens only with this ticked; its bonuses are recorded but never paid, and each "
        "participant id is kept to the browser it first came from.",
    )
    # Signs each session's completion code (and the study link); never shown to participants.
    code_secret = models.CharField(max_length=64, default=new_study_secret, editable=False)
    # Quality control (MultiNLI §2.1, SNLI §2.2): catch trials, bonuses, who may take part.
    catch_trial_share = models.FloatField(
        default=0.01, help_text="Share (0–1) of validation items that are catch trials (MultiNLI: about 1%)."
    )
    planned_sessions = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Participants you plan for (e.g. the market's places); with the catch-trial share it says "
        "whether the catch pool is large enough. Blank: not checked.",
    )
    bonus_per_catch_match = models.DecimalField(
        # 0 by default as the payment per task (defect 26): a study pays what its researcher sets.
        max_digits=6,
        decimal_places=2,
        default=0,
        help_text="Bonus paid for each catch trial a worker gets right (0: none).",
    )
    bonus_currency = models.CharField(
        max_length=3,
        default="USD",
        help_text="ISO code, e.g. USD or GBP: the currency of the study's payments and bonuses.",
    )
    payment_per_task = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Paid per task (a validation batch, a writing task), in the study's currency; the cost page uses it.",
    )
    access = models.CharField(max_length=10, choices=StudyAccess.choices, default=StudyAccess.OPEN)
    allowed_workers = models.ManyToManyField(
        "corpus.Worker", blank=True, related_name="allowed_studies", help_text="The closed list (access: closed)."
    )
    # Checked at arrival, before anything is created, so a running session is left to finish.
    blocked_workers = models.ManyToManyField(
        "corpus.Worker",
        blank=True,
        related_name="blocked_studies",
        help_text="Workers refused at the study link, whatever the access.",
    )
    auto_exclude_flagged = models.BooleanField(
        default=False, help_text="Exclude workers the quality flags mark, without a researcher's review."
    )
    hold_code_at_chance = models.BooleanField(
        default=False,
        help_text="Hold the completion code of a session whose labels are at chance so far (the sequential "
        "guesser test over all of the worker's labels), or probably at the study's poor accuracy rather than its "
        "acceptable one (the quality test, levels below): the participant sees a neutral message, researchers see why.",
    )
    # The quality test's two levels (docs/quality.md): accuracy against the truth.
    acceptable_accuracy = models.FloatField(
        default=0.75,
        help_text="Quality test: the accuracy an honest worker of this study reaches (0.75: below the 85-89% "
        "of SNLI and MultiNLI validators). A worker at this level is rarely held.",
    )
    poor_accuracy = models.FloatField(
        default=0.55,
        help_text="Quality test: an accuracy not worth paying for (0.55: about that of a rule-based labeller who "
        "never reads). Between chance and the acceptable level; the closer the two, the more labels a decision takes.",
    )
    typing_evidence_action = models.CharField(
        max_length=8,
        choices=TypingEvidenceAction.choices,
        default=TypingEvidenceAction.RECORD,
        help_text="Writing tasks: what the study does with how each sentence was typed (docs/quality.md, "
        "'How hypotheses were written'). Participants are told that typing is measured, never its content.",
    )
    # Tasks that count (writing studies): what a problem report does and what a hypothesis must be.
    reports_to_hold_premise = models.PositiveSmallIntegerField(
        default=2,
        validators=[MinValueValidator(1)],
        help_text="Independent reports (distinct workers) after which a premise is held for a researcher.",
    )
    max_reports_per_batch = models.PositiveSmallIntegerField(
        default=2, help_text="Problem reports one worker may send in one visit (batch) of this study."
    )
    max_hypothesis_sentences = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1)],
        help_text="Sentences a hypothesis may have (MultiNLI: one). A paragraph is refused with a clear message.",
    )
    min_hypothesis_words = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(1)],
        help_text="Words a hypothesis needs (invisible and control characters removed).",
    )
    # The sentence-shape check of every hypothesis (collection.sentence_shape.ShapeRules).
    shape_check = models.CharField(
        max_length=8,
        choices=[
            ("refuse", "Refuse clear non-sentences, warn about doubtful ones"),
            ("warn", "Only warn (the writer may send it again unchanged)"),
            ("off", "Off"),
        ],
        default="refuse",
        help_text="Whether a hypothesis must read as an English sentence (a parse: verb, determiners, word "
        "order). A warning is overridden by sending the same sentence again; refusals and warnings both count "
        "towards holding a session that keeps sending word salad. Default: 0.07% of SNLI dev refused, 0.21% warned.",
    )
    shape_refuse_at = models.PositiveSmallIntegerField(
        default=4,
        validators=[MinValueValidator(3)],
        help_text="Shape faults' weight from which a hypothesis is refused outright (3 is warned; 4: SNLI dev "
        "0.07% refused, salad 57%; 3: SNLI dev 0.28%, salad 76%).",
    )
    # The study's pool within its dataset (crowd.selectors.pool_limits): a 'fiction' study served
    # telephone transcripts when the dataset held both.
    pool_genres = models.ManyToManyField(
        "corpus.Genre",
        blank=True,
        related_name="+",
        help_text="Serve only premises of these genres (writing), or pairs on them (validation); none: every genre.",
    )
    pool_sources = models.JSONField(
        default=list,
        blank=True,
        help_text="Serve only premises imported from these files (a premise import's files: the file column "
        "of the imports page); empty: every premise of the dataset.",
    )
    serving_order = models.CharField(
        max_length=8,
        choices=ServingOrder.choices,
        default=ServingOrder.BALANCED,
        help_text="Writing: the order the pool's premises are served in (least-written first, always).",
    )
    # Per study: blank keeps the server-wide WRITING_CLAIM_MINUTES / VALIDATION_CLAIM_MINUTES.
    claim_minutes = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="How long a participant holds a task (a line, a batch) before it goes back to the pool; "
        "blank: the server's default.",
    )
    # The hold's rules per study: blank keeps the server-wide HOLD_* settings (crowd.holds).
    hold_warning_minutes = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text='How long before a hold ends its page warns and offers "More time", in minutes; '
        "blank: the server's default.",
    )
    hold_extensions = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text='How many claim periods a hold may get "More time" for (it ends at most 1 + this many '
        "periods after its claim; 0: never); blank: the server's default.",
    )
    hold_take_backs = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="How often a participant may take back a hold that ran out (0: never); blank: the server's default.",
    )
    # What the market page of the study asks for: the places and times it states.
    estimated_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Minutes a participant takes for the whole study, as the market states it."
    )
    maximum_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The market's time limit for the whole study, in minutes."
    )
    contributions_on_withdrawal = models.CharField(
        max_length=6,
        choices=ContributionsOnWithdrawal.choices,
        default=ContributionsOnWithdrawal.KEEP,
        help_text="When a participant withdraws or asks for erasure: keep their labels and writings without "
        "their identity, or delete them from the corpus and every figure (docs/privacy.md).",
    )
    # Applied by privacy.services.apply_retention, on the beat.
    personal_data_retention_days = models.PositiveIntegerField(
        default=90,
        validators=[MinValueValidator(1)],
        help_text="Days a participant's market ids, device ids and typing records are kept after their visit "
        "ended, once the study is inactive; then they are pseudonymised (docs/privacy.md).",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "collection_study"
        ordering = ["slug"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name

    def link_signature(self) -> str:
        return link_signature(self.code_secret, self.slug)

    def clean(self) -> None:
        super().clean()
        self.check_dataset_fits_task()
        self.check_quality_levels()
        if not isinstance(self.pool_sources, list) or not all(isinstance(name, str) for name in self.pool_sources):
            raise ValidationError(
                {"pool_sources": 'A list of file names, e.g. ["fiction.txt"], or [] for every premise.'}
            )

    def check_quality_levels(self) -> None:
        """The quality test weighs "poor" against "acceptable": both must lie between chance (a third,
        a half on a two-way dataset) and 1, poor below acceptable, or the test cannot tell them apart."""
        two_way = self.dataset_id is not None and self.dataset.label_scheme != THREE_WAY_SCHEME
        chance = 1 / 2 if two_way else 1 / 3
        poor, acceptable = self.poor_accuracy, self.acceptable_accuracy
        if poor is None or acceptable is None:
            return  # the fields' own validation names the missing value
        if not chance < acceptable < 1:
            raise ValidationError(
                {"acceptable_accuracy": f"Between chance ({chance:.2f}) and 1, e.g. 0.75; not {acceptable}."}
            )
        if not chance < poor < acceptable:
            raise ValidationError(
                {
                    "poor_accuracy": f"Between chance ({chance:.2f}) and the acceptable level ({acceptable}), "
                    f"e.g. 0.55; not {poor}."
                }
            )

    def check_dataset_fits_task(self) -> None:
        """An MPE judgment or per-premise study needs a multi-premise dataset, and writing and
        validation studies a single-premise one: otherwise its participants would find no task."""
        if self.dataset_id is None:
            return
        if self.task_kind not in MULTI_PREMISE_TASKS:
            if self.dataset.item_kind == ItemKind.MULTI_PREMISE:
                raise ValidationError(
                    {
                        "dataset": f"“{self.dataset}” holds multi-premise (MPE) items: only an MPE judgment or "
                        "per-premise study can serve them. Make this one of those, or choose a single-premise dataset."
                    }
                )
            return
        if self.dataset.item_kind != ItemKind.MULTI_PREMISE:
            raise ValidationError(
                {
                    "dataset": f"An {self.get_task_kind_display()} study needs a multi-premise dataset; "
                    f"“{self.dataset}” has single-premise pairs. Choose a multi-premise dataset, or make this "
                    "a validation study."
                }
            )


class CodeHoldDecision(models.TextChoices):
    RELEASED = "released", "released: the code is given and its money is payable"
    REFUSED = "refused", "refused: no code, and nothing of it is paid"


class MarketCheck(models.TextChoices):
    """What the study's market said about a session's ids (markets.identity)."""

    UNCHECKED = "unchecked", "unchecked: the study has no market connection"
    PENDING = "pending", "waiting for the market's answer"
    VOUCHED = "vouched", "the market's record is this participant's, in this study"
    REFUSED = "refused", "the market's record is someone else's, or there is none"


class SessionEnding(models.TextChoices):
    """How a closed visit ended, written by the code that closes it."""

    RETURNED = "returned", "returned"
    TIMED_OUT = "timed_out", "timed out"
    REJECTED = "rejected", "rejected"
    WITHDRAWN = "withdrawn", "withdrawn by the participant"
    ERASED = "erased", "erased at the participant's request"
    # Closed before endings were recorded, for a reason none of these names.
    OTHER = "other", "closed"


class StudySession(models.Model):
    """One worker's visit to a study (a Prolific session or an MTurk assignment)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="sessions")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="study_sessions")
    external_study_id = models.CharField(max_length=128, blank=True, help_text="STUDY_ID or hitId.")
    external_session_id = models.CharField(max_length=128, blank=True, help_text="SESSION_ID or assignmentId.")
    tasks_done = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # The last time this visit asked for a task and was told there was none: for a claim period
    # it is waiting for work, and nobody keeps the study's last items from it (crowd.holds).
    no_task_at = models.DateTimeField(null=True, blank=True)
    # The first time this visit, having done some tasks, was told none are left and given the
    # study's partial-completion path (crowd.stranding): stranded until it completes after all.
    stranded_at = models.DateTimeField(null=True, blank=True)
    # Set in the transaction that completes the session, never before: the code proves the work.
    completion_code = models.CharField(max_length=80, blank=True)
    # The texts of the session's holds (`CodeHold`), joined: written by crowd.holds.hold alone, for the
    # admin's list and the files that show one line a session. Blank: never held (or lifted).
    code_held_reason = models.CharField(max_length=300, blank=True, editable=False)
    # MTurk's turkSubmitTo (an allowed MTurk host), where the finished assignment is posted back.
    turk_submit_to = models.CharField(max_length=100, blank=True)
    # The browser (device cookie, crowd.services.device_of) that opened the session, then the one
    # whose submit completed it: the completion code is shown in that browser only, so a shared
    # link or a copied participant id does not reveal it. Blank (never recorded): shown in any browser.
    device = models.CharField(max_length=64, blank=True)
    # Closed by the market (a Prolific submission returned, timed out or rejected; an MTurk assignment
    # rejected), the participant's withdrawal or their erasure: the visit takes no more tasks and its
    # open claims were released. `ended_as` is how (the readers' record), `closed_reason` the words.
    closed_at = models.DateTimeField(null=True, blank=True)
    ended_as = models.CharField(max_length=10, choices=SessionEnding.choices, blank=True)
    closed_reason = models.CharField(max_length=200, blank=True)
    # A researcher's walk through the study as a participant (crowd.preview): its work is never
    # saved (every submit is rolled back), so it never completes; readers that count sessions skip it.
    is_preview = models.BooleanField(default=False, editable=False)
    # The market's own record of the visit (a Prolific submission, an MTurk assignment), asked once
    # after arrival by markets.identity: the link's ids are believed only when the market vouches.
    market_check = models.CharField(max_length=10, choices=MarketCheck.choices, default=MarketCheck.UNCHECKED)
    market_check_note = models.CharField(max_length=300, blank=True)
    market_checked_at = models.DateTimeField(null=True, blank=True)
    market_check_tries = models.PositiveSmallIntegerField(default=0)
    # Whose the market says the visit is (its participant / worker id), when it answered.
    market_participant_id = models.CharField(max_length=128, blank=True)

    class Meta:
        db_table = "collection_studysession"
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(fields=["study", "worker", "external_session_id"], name="unique_study_session"),
            models.CheckConstraint(
                condition=(
                    models.Q(closed_at__isnull=True, ended_as="")
                    | (models.Q(closed_at__isnull=False) & models.Q(ended_as__in=SessionEnding.values))
                ),
                name="a_closed_session_says_how_it_ended",
            ),
        ]
        indexes = [
            # The sweep that asks the market again reads only the sessions still waiting.
            models.Index(
                fields=["market_check"], condition=models.Q(market_check="pending"), name="session_market_pending"
            ),
            # Another id that presents the same market session is linked at arrival (crowd.arrival).
            models.Index(fields=["external_session_id"], name="session_external_id"),
        ]

    def __str__(self) -> str:
        return f"session {self.pk} of worker {self.worker_id} in study {self.study_id}"

    @property
    def is_complete(self) -> bool:
        return self.completed_at is not None

    @property
    def labels_await_market(self) -> bool:
        """Whether labels written in this session wait for its market's word before they count:
        unchecked (no connection) and vouched sessions' labels count at once."""
        return self.market_check in (MarketCheck.PENDING, MarketCheck.REFUSED)

    @property
    def code_is_held(self) -> bool:
        """Whether the session's code is withheld: a hold of it waits for a researcher, or was refused."""
        return self.code_holds.exclude(decision=CodeHoldDecision.RELEASED).exists()

    def code_shown_in(self, device: str) -> bool:
        """Whether the browser `device` may see this session's code: the one that did the work."""
        return not self.device or self.device == device

    def expected_completion_code(self) -> str:
        study = self.study
        return completion_code(study.completion_code, study.code_secret, study.pk, self.pk)


class CodeHold(models.Model):
    """One reason to hold a complete session's code (crowd.holds.hold writes it), of a kind registered
    by the app that owns it. Its money goes only when none waits and none was refused."""

    session = models.ForeignKey(StudySession, on_delete=models.CASCADE, related_name="code_holds")
    kind = models.CharField(max_length=40)
    text = models.CharField(max_length=300)
    found_at = models.DateTimeField(auto_now_add=True)
    # Blank while the hold waits for a researcher.
    decision = models.CharField(max_length=10, choices=CodeHoldDecision.choices, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey("auth.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["found_at", "pk"]
        constraints = [
            # A check asked again (a correlated run redone) finds the same reason: one record of it.
            models.UniqueConstraint(fields=["session", "kind", "text"], name="code_hold_once")
        ]
        indexes = [
            # Every payer asks whether a session has a hold that waits or was refused.
            models.Index(fields=["session"], condition=~models.Q(decision="released"), name="code_hold_withheld")
        ]

    def __str__(self) -> str:
        return f"{self.kind} hold of session {self.session_id}"


class DeviceSighting(models.Model):
    """A participant id seen in one browser: a long-lived random device cookie (and the Django
    session carries it through a switch of ids). Several ids on one device are likely one person;
    only researchers see the link."""

    device = models.CharField(max_length=64)
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="device_sightings")
    first_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["device", "worker"], name="one_sighting_per_device_worker")]
        indexes = [models.Index(fields=["device"], name="device_sighting_device")]

    def __str__(self) -> str:
        return f"{self.worker_id} on {self.device[:8]}"


class LinkReason(models.TextChoices):
    SAME_MARKET_SESSION = "session", "the same market session (SESSION_ID / assignmentId)"
    MARKET_RECORD = "market", "the market's record names the other id"


class WorkerLink(models.Model):
    """Two participant ids known to be one person by something the server can check: the same
    market session presented under both, or the market's record of one id's visit naming the other.
    Stored both ways, so a claim reads one id's links by its index (validation.selectors). Shared
    browsers are read from DeviceSighting directly."""

    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    linked = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=10, choices=LinkReason.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "linked"], name="one_link_per_worker_pair")]

    def __str__(self) -> str:
        return f"{self.worker_id} is {self.linked_id} ({self.reason})"
