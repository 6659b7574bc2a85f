"""The typing records' flags as the Pairs page filters them: each filter is a set of flags, and the
records holding any flag of a set are one SQL/JSON path test on `flags`. That test is also the
condition of the set's own partial index of the records' pairs (authorship.models), so a filter
reads its pair ids from that index alone, sized by the records it names."""

import json
from collections.abc import Iterable

from django.db.models import BooleanField, F, Func, Value

from .judgements import TYPING_FLAGS, Flag

# The Pairs page's flag filters over typing records: the record's own typing flags, the writer's
# reuse of a sentence, a near-copy of an earlier one (authorship.copies, kept when the copied
# sentence leaves).
FLAG_FILTERS: dict[str, tuple[str, ...]] = {
    "typing": tuple(sorted(TYPING_FLAGS)),
    "repeated": (Flag.REPEATED.value,),
    "copy": (Flag.COPY.value,),
}


class MatchesPath(Func):
    """`json @? path`: whether the SQL/JSON path finds anything in the value."""

    template = "(%(expressions)s::jsonpath)"
    arg_joiner = " @? "
    output_field = BooleanField()


def holds_any_flag(flags: Iterable[str]) -> MatchesPath:
    """Whether a record's flags hold one of `flags`: one path test, written the same for the same
    set in any order (a partial index serves a query whose condition is its own, to the letter)."""
    wanted = " || ".join(f"@ == {json.dumps(str(name))}" for name in sorted(set(flags)))
    return MatchesPath(F("flags"), Value(f"$[*] ? ({wanted})"))


def flag_filter_index_name(name: str) -> str:
    return f"evidence_{name}_pairs"
