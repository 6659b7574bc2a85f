"""A session's shape refusals as evidence: word salad is refused three times in four
(collection/sentence_shape.py), so a bot that keeps sending it still gets one through now and then.
What no honest writer does is be refused for shape again and again: 0.3% of real hypotheses are
refused or warned. A warning counts as a refusal (the writer overrides it by sending the same
sentence again: `confirmed_texts`). So every refusal of a study session is recorded
(`ShapeRefusal`, outside the refused submit's rolled-back transaction), and a session whose
refusals pass `sentence_shape.held_for_shape` has its completion code held (`hold_code_of_salad`,
the SALAD hold kind's check). The adversarial task keeps such a session's fooled examples out of
verification while the hold waits.

The rule is always on (no study setting): bench/shape_holds.py simulates honest writers by SNLI
dev's real hypotheses, and none of its sessions, of 1 to 50 tasks, is held.
"""

from collections.abc import Iterable

from authorship.models import WritingEvidence
from crowd import hold_kinds
from crowd.models import StudySession

from .models import ShapeRefusal
from .sentence_shape import SHAPE_HOLD_MIN_REFUSALS, ShapeProblem, held_for_shape
from .writing_rules import normalised

SALAD_HOLD_PREFIX = "Sentences that do not read as English"
SALAD = "word_salad"


def shape_refused(errors: dict[str, str], texts: dict[str, str]) -> list[str]:
    """The texts of the fields (name -> text) whose error is a shape refusal."""
    return [texts[name] for name, message in errors.items() if isinstance(message, ShapeProblem) and name in texts]


def record_shape_refusals(study_session: StudySession | None, texts: Iterable[str]) -> int:
    """Record the session's hypotheses refused for their shape, each distinct text once a session;
    returns how many were new. Nothing outside a study session: there is no code to hold."""
    if study_session is None:
        return 0
    known = {
        normalised(text)
        for text in ShapeRefusal.objects.filter(study_session=study_session).values_list("text", flat=True)
    }
    new: dict[str, str] = {}
    for text in texts:
        key = normalised(text)
        if key not in known:
            new.setdefault(key, text)
    ShapeRefusal.objects.bulk_create(ShapeRefusal(study_session=study_session, text=text) for text in new.values())
    return len(new)


def confirmed_texts(study_session: StudySession | None) -> frozenset[str] | None:
    """The `normalised` texts this session was refused or warned about for their shape: a warned one
    sent again is the writer's override. None outside a study session (no warning is given)."""
    if study_session is None:
        return None
    return frozenset(
        normalised(text)
        for text in ShapeRefusal.objects.filter(study_session=study_session).values_list("text", flat=True)
    )


def shape_counts(study_session: StudySession) -> tuple[int, int]:
    """(hypotheses refused for their shape, hypotheses sent: those refused and those accepted, each
    accepted one having its typing-evidence row) of a study session."""
    refused = ShapeRefusal.objects.filter(study_session=study_session).count()
    if refused < SHAPE_HOLD_MIN_REFUSALS:  # held_for_shape says no whatever was sent
        return refused, refused
    return refused, refused + WritingEvidence.objects.filter(study_session=study_session).count()


def writes_salad(study_session: StudySession | None) -> bool:
    """Whether the session's refusals so far pass the threshold (its code will be held)."""
    return study_session is not None and held_for_shape(*shape_counts(study_session))


def hold_code_of_salad(study_session: StudySession) -> str | None:
    """Why the completing session's code is held: its shape refusals pass the threshold; or None."""
    refused, sent = shape_counts(study_session)
    if not held_for_shape(refused, sent):
        return None
    return (
        f"{SALAD_HOLD_PREFIX}: {refused} of the {sent} hypotheses sent were refused for their shape "
        "(word salad?); an honest writer's are refused or warned 0.3% of the time."
    )


def register_salad_hold_kind() -> None:
    """The word-salad kind and its check (CollectionConfig.ready)."""
    hold_kinds.register(hold_kinds.HoldKind(SALAD, "sentences refused for their shape", check=hold_code_of_salad))
