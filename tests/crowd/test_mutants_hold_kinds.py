"""crowd/hold_kinds.py at the edges mutmut found unguarded: a registered kind is found by its name
and shown by its words (an unregistered name by itself), and a check that answers with `Found` rows
holds the code for each of their kinds."""

import pytest

from crowd import hold_kinds
from crowd.hold_kinds import Found, HoldKind


@pytest.fixture
def own_kinds(monkeypatch):
    """The registry as the test leaves it afterwards: the apps' kinds come back untouched."""
    monkeypatch.setattr(hold_kinds, "_kinds", {})


def test_a_registered_kind_is_found_by_name_and_shown_by_its_words(own_kinds):
    probe = HoldKind("probe", "held by the probe")
    hold_kinds.register(probe)

    assert hold_kinds.kind("probe") is probe
    assert hold_kinds.label("probe") == "held by the probe"
    assert hold_kinds.label("never_registered") == "never_registered", "an old record's kind shows its name"
    with pytest.raises(ValueError, match="No hold kind 'never_registered'"):
        hold_kinds.kind("never_registered")


def test_a_check_answering_found_rows_holds_for_each_of_their_kinds(own_kinds):
    def several(session: object) -> list[Found]:
        return [Found("correlated", "Labels agree with other ids."), Found("deferred", "A first session.")]

    def plain(session: object) -> str:
        return "Held by the plain check."

    def silent(session: object) -> None:
        return None

    hold_kinds.register(HoldKind("market", "the market's", check=plain, last=True))
    hold_kinds.register(HoldKind("quality", "the quality test's", check=several))
    hold_kinds.register(HoldKind("quiet", "never finds anything", check=silent))
    hold_kinds.register(HoldKind("later", "found later, no check"))

    assert [found.name for found in hold_kinds.checks()] == ["quality", "quiet", "market"]
    assert hold_kinds.findings(object()) == [  # type: ignore[arg-type]
        Found("correlated", "Labels agree with other ids."),
        Found("deferred", "A first session."),
        Found("market", "Held by the plain check."),
    ]
