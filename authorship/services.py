"""Writes of the authorship app: the evidence stored beside each sentence, a study's refusal of
pasted text, and the completion hold of a session whose sentences were not typed. The task apps
call these inside their submit's transaction, each with its claim's `ClaimClock`: a record that
claims more typing than the server saw the task open for is forged or replayed.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from corpus.models import Pair, Worker
from crowd import hold_kinds
from crowd.models import StudySession, TypingEvidenceAction

from . import copies, judgements, selectors, sense, sentence_tally, typing_tally
from .evidence import FieldEvidence, read_evidence
from .models import WritingEvidence

REFUSED_MESSAGE = (
    "This study asks you to type your own sentences: pasted or inserted text is not accepted here. "
    "Please type this sentence yourself."
)
NO_RECORD_MESSAGE = (
    "This study records how sentences are typed, and this page sent no record of it: the page needs "
    "JavaScript. Please turn JavaScript on, reload the page and type this sentence yourself."
)
CLOCK_MESSAGE = (
    "This sentence arrived sooner than it can be typed since the task was handed out. "
    "Please type this sentence yourself."
)


@dataclass(frozen=True)
class ClaimClock:
    """The server's own times of one writing claim: when it was handed out and when this page
    arrived. A claim taken back after it ran out keeps its first time (crowd.holds)."""

    served_at: datetime
    submitted_at: datetime

    @property
    def open_ms(self) -> int:
        return max(0, int((self.submitted_at - self.served_at).total_seconds() * 1000))


def study_action(study_session: StudySession | None) -> str:
    return TypingEvidenceAction.RECORD if study_session is None else study_session.study.typing_evidence_action


def _refusal(flags: list[judgements.Flag]) -> str | None:
    found = judgements.REFUSED_FLAGS & set(flags)
    if not found:
        return None
    if judgements.Flag.NO_EVIDENCE in found:
        return NO_RECORD_MESSAGE
    if found <= {judgements.Flag.TIMES_OUTSIDE_CLAIM, judgements.Flag.TOO_FAST}:
        return CLOCK_MESSAGE
    return REFUSED_MESSAGE


def refused_fields(
    study_session: StudySession | None,
    raw: str | None,
    texts: Mapping[str, str],
    *,
    clock: ClaimClock | None = None,
    restorable_chars: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """{field name: message} for the fields a study that refuses pasted text refuses. A page without a
    typing record is refused too (a bot posting the form leaves it out), with a message that says the
    page needs script."""
    if study_action(study_session) != TypingEvidenceAction.REFUSE_PASTE:
        return {}
    flags = judgements.page_field_flags(
        read_evidence(raw, texts),
        dict(texts),
        claim_open_ms=None if clock is None else clock.open_ms,
        restorable_chars=restorable_chars,
    )
    refusals = {name: _refusal(found) for name, found in flags.items()}
    return {name: message for name, message in refusals.items() if message}


def _evidence_row(
    worker: Worker,
    study_session: StudySession | None,
    name: str,
    text: str,
    found: FieldEvidence | None,
    away: tuple[int, int],
    flags: list[judgements.Flag],
) -> WritingEvidence:
    row = WritingEvidence(
        worker=worker,
        study_session=study_session,
        field_name=name[:40],
        text_chars=len(text),
        flags=[str(flag) for flag in flags],
        flagged=bool(judgements.AUTHORSHIP_FLAGS & set(flags)),
    )
    if found is not None:
        row.has_evidence = True
        row.keystrokes = found.keystrokes
        row.deletions = found.deletions
        row.typed_chars = found.typed
        row.pasted_chars = found.pasted + found.dropped
        row.untrusted_chars = found.untrusted + found.scripted + found.unkeyed
        row.prefilled_chars = found.prefilled
        row.pasted_after_away_chars = found.pasted_after_away
        row.away_count, row.away_ms = away
        row.first_key_ms = found.first_key_ms
        row.typing_ms = found.typing_ms
        row.intervals = found.intervals
        row.interval_mean_ms = found.interval_mean_ms
        row.interval_cv = found.interval_cv
    return row


def _earlier_hypotheses(worker: Worker, study_session: StudySession | None) -> list[tuple[int, str]]:
    return [(premise_id, text) for premise_id, text in selectors.earlier_hypotheses_query(worker, study_session)]


def record_writing_evidence(
    worker: Worker,
    study_session: StudySession | None,
    raw: str | None,
    written: Sequence[tuple[str, Pair]],
    *,
    clock: ClaimClock | None = None,
) -> list[WritingEvidence]:
    """Store each new pair's evidence and flags, `written` being (form field name, pair) pairs, judged
    against the claim's `clock` (None only outside a claim). Runs in the submit's transaction. A
    near-copy of the writer's own sentence on another premise in this study session is flagged as
    repeated, so a writer who pastes a few prepared sentences is flagged within the session."""
    evidence = read_evidence(raw, [name for name, _ in written])
    away = (0, 0) if evidence is None else (evidence.away_count, evidence.away_ms)
    repeats = judgements.repeated_sentences(
        _earlier_hypotheses(worker, study_session), [(pair.premise_id, pair.hypothesis) for _, pair in written]
    )
    page_flags = judgements.page_field_flags(
        evidence,
        {name: pair.hypothesis for name, pair in written},
        claim_open_ms=None if clock is None else clock.open_ms,
    )
    # Near-copies of any earlier sentence: other writers', or this writer's in other sessions.
    pairs = [pair for _, pair in written]
    found_copies = copies.copies_of(worker, study_session, pairs)
    sentence_tally.recorded(copies.record_written_sentences(worker, study_session, pairs, found_copies))
    rows = []
    for (name, pair), repeated, copy in zip(written, repeats, found_copies, strict=True):
        found = None if evidence is None else evidence.fields.get(name)
        flags = page_flags[name]
        if repeated:
            flags.append(judgements.Flag.REPEATED)
        if copy is not None:
            flags.append(judgements.Flag.COPY)
        row = _evidence_row(worker, study_session, name, pair.hypothesis, found, away, flags)
        row.pair = pair
        rows.append(row)
    sense.sense_arriving()  # scored once the submit commits (authorship.sense), off the request path
    saved = WritingEvidence.objects.bulk_create(rows)
    typing_tally.recorded(saved, study_session)
    return saved


def record_try_evidence(
    worker: Worker,
    study_session: StudySession | None,
    raw: str | None,
    field_name: str,
    text: str,
    *,
    clock: ClaimClock | None = None,
    restorable_chars: int = 0,
) -> WritingEvidence:
    """Store one adversarial try's evidence (a try has no pair until it fools the model), judged
    against its claim's `clock`; `restorable_chars`: the length of the writer's last try, which the
    page puts back in the field for them to change."""
    evidence = read_evidence(raw, [field_name])
    found = None if evidence is None else evidence.fields.get(field_name)
    away = (0, 0) if evidence is None else (evidence.away_count, evidence.away_ms)
    flags = judgements.page_field_flags(
        evidence,
        {field_name: text},
        claim_open_ms=None if clock is None else clock.open_ms,
        restorable_chars={field_name: restorable_chars},
    )[field_name]
    row = _evidence_row(worker, study_session, field_name, text, found, away, flags)
    row.save()
    typing_tally.recorded([row], study_session)
    return row


def evidence_of_pair(evidence_id: int | None, pair: Pair) -> None:
    """An adversarial try that became a pair: its evidence is the pair's too."""
    if evidence_id is not None:
        WritingEvidence.objects.filter(pk=evidence_id).update(pair=pair)
    sense.sense_arriving()


def hold_code_of_typist(study_session: StudySession) -> str | None:
    """The reason to hold this completing session's code, or None (always None unless its study
    holds the codes of sessions whose sentences were not typed)."""
    if study_action(study_session) != TypingEvidenceAction.HOLD_CODE:
        return None
    rows = WritingEvidence.objects.filter(study_session=study_session)
    hypotheses = rows.count()
    flagged = rows.filter(flagged=True).count()
    if not judgements.session_is_flagged(flagged, hypotheses):
        return None
    return (
        f"Sentences not typed by the writer: {flagged} of {hypotheses} flagged (pasted, scripted, repeated, copied, "
        "without a typing record, or faster than the task's own time allows)."
    )


TYPIST = "typist"


def register_typist_hold_kind() -> None:
    """The typing-evidence kind and its check (AuthorshipConfig.ready)."""
    hold_kinds.register(hold_kinds.HoldKind(TYPIST, "sentences not typed by the writer", check=hold_code_of_typist))
