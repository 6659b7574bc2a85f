"""What a withdrawal needs of an app above this one, registered into it at start (docs/consent.md):
the erasure engine, which deletes a withdrawn participant's contributions. Until one is registered,
a deleting withdrawal waits for removal (`Withdrawal.removal`), never marked done."""

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crowd.models import StudySession

# Removes one withdrawn visit's labels and writings and recomputes what counted them, in the
# caller's transaction; returns a sentence of what it did.
ContributionRemover = Callable[["StudySession"], str]

_registered: list[ContributionRemover] = []


def register_contribution_remover(remover: ContributionRemover) -> None:
    """Register the engine that deletes a withdrawn visit's contributions (a second call replaces the first)."""
    _registered[:] = [remover]


def contribution_remover() -> ContributionRemover | None:
    return _registered[0] if _registered else None
