"""The register of personal data: every model field that holds something about a participant
(docs/privacy.md says the same in words, and a test holds the two together).

Erasure, retention and the access download (`privacy.services`, `privacy.selectors`) read this
list and nothing else, so a field added here is downloaded, erased and expired with the rest;
`tests/privacy/test_register.py` fails when a model gains a field that looks personal and is
neither here nor in `NOT_PERSONAL`. Each entry says how to reach one participant's rows
(`worker_path`) and one team's (`team_paths`: any of them says so), what the field holds, and what
erasure and retention do to it.
"""

from dataclasses import dataclass

from django.db import models
from django.db.models import Q


class Kind(models.TextChoices):
    MARKET_ID = "market id", "an id the market gave the person (PROLIFIC_PID, workerId, session ids)"
    ACCOUNT = "account", "the person's account on this site (user name, e-mail, names)"
    DEVICE_ID = "device id", "the random cookie of the person's browser"
    LINK = "link", "that two ids are one person"
    TYPING = "typing", "how a sentence was typed (keystrokes, timings, pastes)"
    FREE_TEXT = "free text", "text the person wrote outside the corpus (reports, refused or nudged sentences)"
    CONTRIBUTION = "contribution", "a label or sentence in the corpus, counted by its figures"
    ESTIMATE = "estimate", "a figure about the person (skill estimates)"
    MARKET_RECORD = "market record", "what was sent to or received from the market, naming the person's id"
    LEDGER = "ledger", "money earned or paid"
    CONSENT = "consent", "what the person agreed to, or that they withdrew, and when"
    AUDIT = "audit", "an audit entry that names the person"


class Action(models.TextChoices):
    KEEP = "keep", "kept as it is (pseudonymous once the ids it hangs from are)"
    PSEUDONYMISE = "pseudonymise", "replaced by a keyed hash (HMAC-SHA256 with a key derived from SECRET_KEY)"
    REPLACE_ID_IN_TEXT = "replace id in text", "the person's ids in the text replaced by their keyed hash"
    BLANK = "blank", "emptied"
    DELETE_ROW = "delete row", "the row deleted"
    REDUCE_TO_FLAGS = "reduce to flags", "the measurements zeroed; the flags they led to kept"
    BY_POLICY = "by policy", "as the study says (contributions_on_withdrawal): kept pseudonymous, or deleted"
    REDACT = "redact", "the person's ids and names blanked (audit.services.redact)"


@dataclass(frozen=True)
class PersonalField:
    model: str  # "app_label.ModelName"
    field: str  # the field, or "*" for the row as a whole
    kind: Kind
    erasure: Action
    retention: Action
    worker_path: str  # from the row to its corpus.Worker ("pk" on the worker itself)
    team_paths: tuple[str, ...] = ()  # from the row to its team id; empty: the person's own row, of no team
    why: str = ""
    # The measurements a REDUCE_TO_FLAGS action zeroes (the field names the record as a whole).
    measurements: tuple[str, ...] = ()
    # A copy a page keeps of figures computed from the registered rows (and recomputes): erased in
    # every scope whatever else the person keeps, and never downloaded (its sources are).
    derived: bool = False

    def in_team(self, team_id: int) -> Q:
        """The rows of team `team_id`: any of `team_paths` says so."""
        condition = Q()
        for path in self.team_paths:
            condition |= Q(**{path: team_id})
        return condition


TYPING_MEASUREMENTS = (
    "keystrokes",
    "deletions",
    "typed_chars",
    "pasted_chars",
    "untrusted_chars",
    "prefilled_chars",
    "pasted_after_away_chars",
    "away_count",
    "away_ms",
    "first_key_ms",
    "typing_ms",
    "intervals",
    "interval_mean_ms",
    "interval_cv",
)

SESSION_TEAM = ("study__team",)
LABEL_TEAM = ("pair__dataset__team",)

REGISTER: list[PersonalField] = [
    # --- who the person is -------------------------------------------------------------------
    PersonalField(
        "corpus.Worker",
        "external_id",
        Kind.MARKET_ID,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "pk",
        why="PROLIFIC_PID or MTurk workerId: names the person on their market.",
    ),
    PersonalField(
        "auth.User",
        "username",
        Kind.ACCOUNT,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "worker",
        why="A market arrival's account is named after the market id (crowd.arrival).",
    ),
    PersonalField("auth.User", "email", Kind.ACCOUNT, Action.BLANK, Action.BLANK, "worker"),
    PersonalField("auth.User", "first_name", Kind.ACCOUNT, Action.BLANK, Action.BLANK, "worker"),
    PersonalField("auth.User", "last_name", Kind.ACCOUNT, Action.BLANK, Action.BLANK, "worker"),
    # --- visits ------------------------------------------------------------------------------
    PersonalField(
        "crowd.StudySession",
        "external_session_id",
        Kind.MARKET_ID,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "worker",
        SESSION_TEAM,
        why="SESSION_ID or assignmentId: the market's record of this person's visit.",
    ),
    PersonalField(
        "crowd.StudySession",
        "market_participant_id",
        Kind.MARKET_ID,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "worker",
        SESSION_TEAM,
        why="Whose the market says the visit is.",
    ),
    PersonalField(
        "crowd.StudySession",
        "device",
        Kind.DEVICE_ID,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "worker",
        SESSION_TEAM,
        why="The browser that did the work (the code is shown there only).",
    ),
    PersonalField(
        "crowd.StudySession",
        "market_check_note",
        Kind.MARKET_RECORD,
        Action.BLANK,
        Action.KEEP,
        "worker",
        SESSION_TEAM,
        why="The market's answer about the ids may name another id of the person.",
    ),
    PersonalField(
        "crowd.DeviceSighting",
        "device",
        Kind.DEVICE_ID,
        Action.DELETE_ROW,
        Action.PSEUDONYMISE,
        "worker",
        why="Ids seen in one browser: kept (hashed) for the shared-device check until erasure.",
    ),
    PersonalField(
        "crowd.WorkerLink",
        "*",
        Kind.LINK,
        Action.DELETE_ROW,
        Action.KEEP,
        "worker",
        why="Two ids known to be one person; holds row ids only, so retention leaves it.",
    ),
    PersonalField(
        "quality.QualificationAttempt",
        "device",
        Kind.DEVICE_ID,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "worker",
        ("test__study__team",),
    ),
    PersonalField(
        "quality.QualificationDraw",
        "device",
        Kind.DEVICE_ID,
        Action.PSEUDONYMISE,
        Action.PSEUDONYMISE,
        "worker",
        ("test__study__team",),
    ),
    # --- how they wrote, what they wrote outside the corpus ----------------------------------
    PersonalField(
        "authorship.WritingEvidence",
        "*",
        Kind.TYPING,
        Action.REDUCE_TO_FLAGS,
        Action.REDUCE_TO_FLAGS,
        "worker",
        ("study_session__study__team", "pair__dataset__team"),
        why="Keystroke counts and timings; the flags (pasted, not typed) stay for the figures that read them.",
        measurements=TYPING_MEASUREMENTS,
    ),
    PersonalField(
        "collection.PremiseReport",
        "message",
        Kind.FREE_TEXT,
        Action.BLANK,
        Action.KEEP,
        "worker",
        ("premise__dataset__team",),
        why="A note that a premise is broken, in the person's words.",
    ),
    PersonalField(
        "collection.ShapeRefusal",
        "text",
        Kind.FREE_TEXT,
        Action.DELETE_ROW,
        Action.KEEP,
        "study_session__worker",
        ("study_session__study__team",),
        why="A refused hypothesis, as sent.",
    ),
    PersonalField(
        "artifacts.NudgeRecord",
        "hypothesis",
        Kind.FREE_TEXT,
        Action.DELETE_ROW,
        Action.KEEP,
        "worker",
        ("dataset__team", "study__team"),
        why="A hypothesis as submitted on a page with the nudge script.",
    ),
    # --- contributions (the study's policy) --------------------------------------------------
    PersonalField(
        "corpus.ValidationLabel", "label", Kind.CONTRIBUTION, Action.BY_POLICY, Action.KEEP, "worker", LABEL_TEAM
    ),
    PersonalField(
        "corpus.Pair",
        "hypothesis",
        Kind.CONTRIBUTION,
        Action.BY_POLICY,
        Action.KEEP,
        "author",
        ("dataset__team",),
        why="A written pair; deleting it takes the other workers' labels on it out with it.",
    ),
    PersonalField(
        "corpus.GrammaticalityJudgment",
        "judgment",
        Kind.CONTRIBUTION,
        Action.BY_POLICY,
        Action.KEEP,
        "worker",
        LABEL_TEAM,
    ),
    PersonalField(
        "validation.PremiseLabel",
        "label",
        Kind.CONTRIBUTION,
        Action.BY_POLICY,
        Action.KEEP,
        "worker",
        ("premise_pair__item__dataset__team",),
    ),
    PersonalField(
        "authorship.WrittenSentence",
        "normalised",
        Kind.CONTRIBUTION,
        Action.BY_POLICY,
        Action.KEEP,
        "worker",
        ("pair__dataset__team",),
        why="The written hypothesis, normalised for the copy check: follows its pair.",
    ),
    PersonalField(
        "adversarial.AdversarialTry",
        "hypothesis",
        Kind.CONTRIBUTION,
        Action.BY_POLICY,
        Action.KEEP,
        "task__worker",
        ("round__study__team",),
        why="Every try against the model, the one that became a pair included.",
    ),
    # --- what they agreed to ----------------------------------------------------------------
    PersonalField(
        "consent.ConsentDecision",
        "*",
        Kind.CONSENT,
        Action.KEEP,
        Action.KEEP,
        "study_session__worker",
        ("study_session__study__team",),
        why="Which sheet version was agreed and when: the proof of consent stays.",
    ),
    PersonalField(
        "consent.Withdrawal",
        "*",
        Kind.CONSENT,
        Action.KEEP,
        Action.KEEP,
        "study_session__worker",
        ("study_session__study__team",),
        why="That the person withdrew, and what was done about it.",
    ),
    # --- figures about them, money, the market's record, the log -----------------------------
    PersonalField(
        "quality.WorkerFlagRow",
        "*",
        Kind.ESTIMATE,
        Action.DELETE_ROW,
        Action.DELETE_ROW,
        "worker",
        why="The kept figures and flags of the person's labels; the next refresh computes without them.",
        derived=True,
    ),
    PersonalField(
        "quality.WorkerEstimate",
        "*",
        Kind.ESTIMATE,
        Action.DELETE_ROW,
        Action.KEEP,
        "worker",
        ("run__dataset__team",),
        why="A method's estimate of the person's skill; the next run estimates without them.",
    ),
    PersonalField(
        "quality.BonusEntry",
        "*",
        Kind.LEDGER,
        Action.KEEP,
        Action.KEEP,
        "worker",
        ("study__team",),
        why="Money earned and paid stays in the ledger, pseudonymous through the worker's hashed id.",
    ),
    PersonalField(
        "quality.BonusTally",
        "*",
        Kind.LEDGER,
        Action.KEEP,
        Action.KEEP,
        "worker",
        ("study__team",),
        why="The ledger's rows summed per session and cause (kept by the database): kept as the ledger is.",
        derived=True,
    ),
    PersonalField(
        "markets.BonusBatch",
        "csv_bonuses",
        Kind.MARKET_RECORD,
        Action.REPLACE_ID_IN_TEXT,
        Action.REPLACE_ID_IN_TEXT,
        "",
        ("connection__study__team",),
        why="The participant_id,amount lines sent to the market.",
    ),
    PersonalField(
        "markets.MarketCall",
        "request_summary",
        Kind.MARKET_RECORD,
        Action.REPLACE_ID_IN_TEXT,
        Action.REPLACE_ID_IN_TEXT,
        "",
        ("connection__study__team",),
    ),
    PersonalField(
        "markets.MarketCall",
        "answer",
        Kind.MARKET_RECORD,
        Action.REPLACE_ID_IN_TEXT,
        Action.REPLACE_ID_IN_TEXT,
        "",
        ("connection__study__team",),
    ),
    PersonalField(
        "markets.ListEntry",
        "*",
        Kind.MARKET_RECORD,
        Action.DELETE_ROW,
        Action.KEEP,
        "worker",
        ("connection__study__team",),
        why="That the person was put on one of the market's lists.",
    ),
    PersonalField(
        "audit.AuditEntry",
        "subject",
        Kind.AUDIT,
        Action.REDACT,
        Action.KEEP,
        "",
        ("team",),
        why="Entries about the person name their market id (subject, before/after, reason).",
    ),
]

# Fields whose names look personal but hold nothing about a participant, and why.
NOT_PERSONAL: dict[str, str] = {
    "crowd.StudySession.external_study_id": "the study's id on its market (STUDY_ID, hitId), the same for everyone",
    "crowd.StudySession.turk_submit_to": "an MTurk host the assignment is posted back to, the same for everyone",
    "crowd.StudySession.code_held_reason": "the texts of the session's code holds, joined, written by the server",
    "crowd.CodeHold.text": "the server's reason for holding a code, written by the server",
    "crowd.CodeHold.kind": "which check held the code (a registered kind)",
    "crowd.StudySession.closed_reason": "the market's event that closed the visit (returned, timed out)",
    "crowd.WorkerLink.reason": "which rule linked the ids (a choice)",
    "markets.SessionReview.reason": "a researcher's reason for approving or rejecting",
    "markets.MarketConnection.market_study_id": "the study's id on its market",
    "markets.MarketConnection.hit_type_id": "the HIT type's id on MTurk",
    "markets.BonusBatch.market_bulk_id": "the market's id of a bulk payment",
    "modeling.TrainingRun.device": "the GPU a training run used",
    "modeling.TrainingRun.node_hostname": "the lab's GPU node",
    "quality.BonusEntry.reason": "the server's reason for a bonus (a catch trial matched)",
    "quality.ReferenceLabel.note": "a researcher's note",
    "quality.GroupDecidedPair.reason": "the server's reason",
    "quality.CorrelatedWorkerGroup.evidence": "figures about row ids (agreement between ids), no ids of the market",
    "corpus.Adjudication.note": "a researcher's note",
    "corpus.Adjudication.reason": "the server's or a researcher's reason",
    "validation.AdjudicationRequest.reason": "a researcher's reason",
    "adversarial.AdversarialTask.reason": "the server's reason",
    "collection.WritingClaim.claim_token": "a random token of one claim",
    "artifacts.NudgeRecord.claim_token": "a random token of one claim",
    "artifacts.NudgeRecord.shown_words": "words of the give-away list shown, the same for everyone",
    "authorship.WritingEvidence.field_name": "the form field's name",
    "authorship.WritingEvidence.flags": "the flags kept by retention and erasure (reduce to flags)",
    "model_annotators.ModelLabel.reason": "a model's answer",
    "model_annotators.ModelLabel.raw_answer": "a model's answer",
    "model_annotators.WritingCheck.reason": "a model's answer",
    "model_annotators.WritingCheck.raw_answer": "a model's answer",
}


def entries(action_of: str, actions: set[str]) -> list[PersonalField]:
    """The entries whose `action_of` ("erasure" or "retention") is one of `actions`."""
    return [entry for entry in REGISTER if getattr(entry, action_of) in actions]


def register_above(entry: PersonalField) -> None:
    """Register a field of an app above privacy (its rows are the pages' copies of figures), at
    start, from the composition root: privacy names no model above it."""
    if entry not in REGISTER:
        REGISTER.append(entry)


def registered_names() -> set[str]:
    """ "app.Model.field" of every registered field (the row entries as "app.Model.*")."""
    return {f"{entry.model}.{entry.field}" for entry in REGISTER}
