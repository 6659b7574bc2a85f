"""The kinds of completion-code hold, each registered once by the app that finds it (crowd.holds).

The app that owns a kind registers it at start: its words for researchers and, when the kind is
found at completion, the check `crowd.services.record_task_done` asks of every completing session.
A kind found later (a correlated group, the market's refusal) registers no check and is written by
`crowd.holds.hold` when found. So crowd names no app above it.

Every check is asked, in registration order, the `last` ones after the others: a check that
answers with words holds the code for that kind. A check may answer for several kinds (the
quality app's one test finds a guesser, a correlated group or a first session to defer) by
returning `Found` rows; a plain string is a finding of the check's own kind.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import StudySession


@dataclass(frozen=True)
class Found:
    """One reason a check found: its kind (registered) and its words for researchers."""

    kind: str
    text: str


Check = Callable[["StudySession"], "str | Iterable[Found] | None"]


@dataclass(frozen=True)
class HoldKind:
    """A kind of hold: `name` (stored), `label` (shown), the completion `check` (None: written when
    found later), and whether it is asked `last` (the market's, which a later answer lifts)."""

    name: str
    label: str
    check: Check | None = None
    last: bool = False


# Records from before the kinds whose words no registered kind claims.
OTHER = "other"

_kinds: dict[str, HoldKind] = {OTHER: HoldKind(OTHER, "held (a reason recorded before kinds)")}


def register(kind: HoldKind) -> None:
    """Register a kind (an app's ready()); registering it again replaces it."""
    _kinds[kind.name] = kind


def kind(name: str) -> HoldKind:
    """The registered kind `name`; an unknown one is refused (a typo would hold under no kind)."""
    try:
        return _kinds[name]
    except KeyError:
        raise ValueError(f"No hold kind {name!r} is registered.") from None


def label(name: str) -> str:
    """The kind's words for researchers (the name itself for a kind no app registered)."""
    return _kinds[name].label if name in _kinds else name


def checks() -> list[HoldKind]:
    """The kinds with a completion check, in the order they are asked."""
    return sorted((found for found in _kinds.values() if found.check is not None), key=lambda found: found.last)


def findings(session: "StudySession") -> list[Found]:
    """Every reason the registered checks find to hold the completing `session`'s code."""
    found: list[Found] = []
    for held in checks():
        assert held.check is not None
        answer = held.check(session)
        if not answer:
            continue
        if isinstance(answer, str):
            found.append(Found(held.name, answer))
        else:
            found.extend(answer)
    return found
