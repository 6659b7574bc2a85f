"""A study's connection to its crowd market and the record of everything said to the market.

Credentials are never stored in plain text: `MarketConnection.sealed_credentials` holds a Fernet
token made with a key from the environment (`markets.sealing`).

Money is one state machine, owed -> claimed -> sent -> confirmed (markets.payments):
- owed and confirmed are the quality app's append-only ledger (`quality.BonusEntry`): an earned
  row without a `paid` row, and its `paid` row. The ledger is the ONE record of "paid";
- claimed, sent, set aside and released are `BonusPayment`: one earned row on its way to the
  market, held by one payer (unique per earned row, so no two payers hold one bonus). It lives
  only while the bonus is in flight: the transaction that writes the ledger's paid row deletes it.
`BonusBatch` is one Prolific bulk bonus (the two-step create-then-pay). docs/markets.md, "The
payment machine".
"""

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from corpus.models import Market

from .ids import connection_id_problems


class ConnectedMarket(models.TextChoices):
    PROLIFIC = Market.PROLIFIC.value, "Prolific"
    MTURK = Market.MTURK.value, "Mechanical Turk"


ID_FIELDS = {"market", "market_study_id", "hit_type_id", "qualified_list_id", "excluded_list_id"}


class MarketConnection(models.Model):
    """One study's account on one market: where its submissions, bonuses and lists live."""

    study = models.OneToOneField("crowd.Study", on_delete=models.CASCADE, related_name="market_connection")
    market = models.CharField(max_length=10, choices=ConnectedMarket.choices)
    # Prolific: the study's id on Prolific (STUDY_ID). MTurk: the HIT type the study's HITs share.
    market_study_id = models.CharField(max_length=128, blank=True, help_text="Prolific: the study's id.")
    hit_type_id = models.CharField(max_length=128, blank=True, help_text="MTurk: the HIT type id.")
    mturk_live = models.BooleanField(default=False, help_text="MTurk: the live marketplace (off: the sandbox).")
    # A Fernet token of the credentials' JSON (markets.sealing); never the credentials themselves.
    sealed_credentials = models.TextField()
    sealed_webhook_secret = models.TextField(blank=True)
    # The path part of the webhook's URL: random, so one connection's hooks cannot be sent to another.
    webhook_key = models.CharField(max_length=64, unique=True)
    approve_automatically = models.BooleanField(
        default=False,
        help_text="Approve completed sessions on the market without a click, after the study's own checks "
        "(a session whose completion code is held is never approved automatically).",
    )
    qualified_list_id = models.CharField(
        max_length=128,
        blank=True,
        help_text="Prolific participant group / MTurk qualification type for qualified workers.",
    )
    excluded_list_id = models.CharField(
        max_length=128,
        blank=True,
        help_text="Prolific participant group / MTurk qualification type for excluded workers.",
    )
    # The last test of the connection (markets.connections.test_connection): whether the market
    # answered, and its one line.
    last_check_ok = models.BooleanField(default=False)
    last_check = models.CharField(max_length=300, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.get_market_display()} for {self.study_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Every way in (the dashboard's form, the admin, a shell) stores only ids in the market's format.
        fields = kwargs.get("update_fields")
        if (fields is None or set(fields) & ID_FIELDS) and (problems := self.id_problems()):
            raise ValidationError(problems)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if problems := self.id_problems():
            raise ValidationError(problems)

    def id_problems(self) -> dict[str, str]:
        """The ids that are not in the market's format (markets.ids): data, never paths."""
        return connection_id_problems(
            self.market,
            market_study_id=self.market_study_id,
            hit_type_id=self.hit_type_id,
            qualified_list_id=self.qualified_list_id,
            excluded_list_id=self.excluded_list_id,
        )


class MarketCall(models.Model):
    """One request to a market and its answer, kept as the market gave it (data, never code)."""

    connection = models.ForeignKey(MarketConnection, on_delete=models.CASCADE, related_name="calls")
    action = models.CharField(max_length=40)
    request_summary = models.TextField(blank=True, help_text="What was sent, without credentials.")
    status_code = models.IntegerField(null=True, blank=True)
    answer = models.TextField(blank=True)
    ok = models.BooleanField(default=False)
    error = models.CharField(max_length=300, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    made_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["connection", "-created_at"], name="market_call_recent")]

    def __str__(self) -> str:
        return f"{self.action} {'ok' if self.ok else 'failed'}"


class ReviewDecision(models.TextChoices):
    APPROVE = "approve", "approve"
    REJECT = "reject", "reject"


class ReviewState(models.TextChoices):
    SENT = "sent", "queued: sent without an answer, or not sent for a network failure (sent again)"
    CONFIRMED = "confirmed", "confirmed by the market"
    FAILED = "failed", "refused by the market"


class SessionReview(models.Model):
    """A session's approval or rejection on the market: one per session, so none is decided twice."""

    study_session = models.OneToOneField("crowd.StudySession", on_delete=models.CASCADE, related_name="market_review")
    decision = models.CharField(max_length=7, choices=ReviewDecision.choices)
    reason = models.TextField(blank=True)
    # Prolific's rejection category, kept so a queued rejection is sent again as it was pressed.
    category = models.CharField(max_length=20, blank=True)
    state = models.CharField(max_length=9, choices=ReviewState.choices, default=ReviewState.SENT)
    # Why a queued review is still queued (the failed call's error), or why the market refused it.
    last_error = models.CharField(max_length=300, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    automatic = models.BooleanField(default=False)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    call = models.ForeignKey(MarketCall, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.decision} session {self.study_session_id}: {self.state}"


class BatchState(models.TextChoices):
    NEW = "new", "being created on the market"
    PAYING = "paying", "pay sent; waiting for the market's confirmation"
    PAID = "paid", "paid (confirmed)"
    ABANDONED = "abandoned", "abandoned before paying (nothing paid)"


class BonusBatch(models.Model):
    """One Prolific bulk bonus: created on the market (its id), then paid once. Prolific's pay is
    not idempotent, so a batch whose pay was sent is never paid again: only the market's record
    of the participants' bonuses confirms it, or a researcher resolves it."""

    connection = models.ForeignKey(MarketConnection, on_delete=models.PROTECT, related_name="bonus_batches")
    state = models.CharField(max_length=9, choices=BatchState.choices, default=BatchState.NEW)
    market_bulk_id = models.CharField(max_length=128, blank=True)
    csv_bonuses = models.TextField(help_text="The `participant_id,amount` lines sent.")
    # {participant id: cents} this batch pays, and what the ledger had paid each before it.
    amounts_cents = models.JSONField(default=dict)
    paid_before_cents = models.JSONField(default=dict)
    lease_until = models.DateTimeField()
    pay_sent_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    # When the last read of Prolific's record (the participants' bonuses) that could settle this
    # batch was made, by the server's clock. "Not paid" is believed only from a read made after the
    # pay was sent and the market's record had time to follow (markets.answers).
    record_read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "bonus batches"
        constraints = [
            models.UniqueConstraint(
                fields=["market_bulk_id"], condition=~models.Q(market_bulk_id=""), name="one_batch_per_bulk_bonus"
            )
        ]

    def __str__(self) -> str:
        return f"bulk bonus {self.market_bulk_id or '(not created)'}: {self.state}"


class PaymentState(models.TextChoices):
    """A bonus in flight. Owed (no row, or RELEASED) and confirmed (the ledger's paid row; this row
    is then deleted) are not stored here."""

    CLAIMED = "claimed", "claimed by a payer, nothing sent"
    SENT = (
        "sent",
        "sent (an API call, or a downloaded payment file): only the market's record or a researcher settles it",
    )
    UNKNOWN = (
        "unknown",
        "sent, and the market's answer did not prove whether it paid: settled only by its own record, "
        "read after the last attempt",
    )
    ASIDE = "aside", "set aside: the market refused its participant; paid by hand or released"
    RELEASED = "released", "released: nothing was paid, owed again"


# A payer holds these bonuses: nobody else may list, send or mark them paid.
IN_FLIGHT = (PaymentState.CLAIMED, PaymentState.SENT, PaymentState.UNKNOWN)


class Payer(models.TextChoices):
    """Who holds a bonus on its way to the market: every payer goes through the one 'owed' rule
    (markets.selectors.owed_entries), so a bonus is never held by two."""

    API = "api", "the market's API (the pay button: Prolific or MTurk)"
    FILE = "file", "a payment file, paid on the market's website by a researcher"


class BonusPayment(models.Model):
    """One earned ledger row on its way to the market, while it is in flight. Unique per earned row:
    two payers never hold the same bonus. Its request token is `nli-bonus-<earned id>`, the same for
    ever (MTurk's UniqueRequestToken), so deleting the row at confirmation forgets nothing."""

    earned = models.OneToOneField("quality.BonusEntry", on_delete=models.PROTECT, related_name="market_payment")
    connection = models.ForeignKey(MarketConnection, on_delete=models.PROTECT, related_name="bonus_payments")
    batch = models.ForeignKey(BonusBatch, on_delete=models.PROTECT, null=True, blank=True, related_name="payments")
    state = models.CharField(max_length=8, choices=PaymentState.choices, default=PaymentState.CLAIMED)
    # A downloaded file's bonuses (sent) have no lease: they are held until the researcher confirms
    # or releases them.
    payer = models.CharField(max_length=4, choices=Payer.choices, default=Payer.API)
    request_token = models.CharField(max_length=64, unique=True)
    lease_until = models.DateTimeField()
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    # The last attempt to pay it (every send and resend), and the last read of the market's record
    # for it (MTurk's ListBonusPayments), both by the server's clock.
    sent_at = models.DateTimeField(null=True, blank=True)
    record_read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # A state's payments in the order payers took them (the bonus page names the first few
        # set aside): the index gives the order, so a first page reads only its rows.
        indexes = [models.Index(fields=["connection", "state", "id"], name="bonus_payment_state")]

    def __str__(self) -> str:
        return f"payment of bonus {self.earned_id}: {self.state}"


class HeldBonusTally(models.Model):
    """The bonuses payers hold, summed per connection, session, cause, currency, payer and state: how
    many, their amount and the sum of their ids' hashes (`quality.bonus_lines.ids_hash`). Kept by
    triggers on the payments (PostgreSQL), so a study's held bonuses are read as a row per session
    and state, not one per bonus. A group whose payments all left keeps a row of zeros. Never
    written by the application."""

    # The payments' own keys guard these; the unique constraint, led by the connection, is the one index.
    connection = models.ForeignKey(
        MarketConnection, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    study_session = models.ForeignKey(
        "crowd.StudySession", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    cause = models.CharField(max_length=12)
    currency = models.CharField(max_length=3)
    payer = models.CharField(max_length=4, choices=Payer.choices)
    state = models.CharField(max_length=8, choices=PaymentState.choices)
    bonuses = models.IntegerField()
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    ids_hash = models.DecimalField(max_digits=40, decimal_places=0)

    class Meta:
        verbose_name_plural = "held bonus tallies"
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "study_session", "cause", "currency", "payer", "state"],
                name="one_held_bonus_tally_per_group",
            )
        ]

    def __str__(self) -> str:
        return f"{self.connection_id}/{self.study_session_id} {self.cause} {self.payer} {self.state}: {self.bonuses}"


class WebhookDelivery(models.Model):
    """A market event received and acted on; its signature is unique, so a replay is refused."""

    connection = models.ForeignKey(MarketConnection, on_delete=models.CASCADE, related_name="webhook_deliveries")
    signature = models.CharField(max_length=128, unique=True)
    sent_at = models.DateTimeField(help_text="The market's timestamp of the request.")
    event_type = models.CharField(max_length=60)
    resource_id = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=40, blank=True)
    outcome = models.CharField(max_length=300, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id} {self.status}"


class ListKind(models.TextChoices):
    QUALIFIED = "qualified", "passed the qualification test"
    EXCLUDED = "excluded", "excluded"


class ListEntry(models.Model):
    """A worker put on one of the connection's market lists (a Prolific participant group, an MTurk
    qualification), so later syncs send only who is new."""

    connection = models.ForeignKey(MarketConnection, on_delete=models.CASCADE, related_name="list_entries")
    worker = models.ForeignKey("corpus.Worker", on_delete=models.CASCADE, related_name="market_list_entries")
    kind = models.CharField(max_length=9, choices=ListKind.choices)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "list entries"
        constraints = [
            models.UniqueConstraint(fields=["connection", "worker", "kind"], name="one_list_entry_per_worker")
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} on {self.kind}"
