"""A study's preference in the validation claim order (validation/claim_order.py): what the
registered preference answers for a study is what the claim gets, for that very study; a second
registration replaces the first rather than adding to it; and a process that never registered one
is told so in words (which app to install) instead of claiming without the study's triage.

Plain pytest, no database: the studies are unsaved objects."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from crowd.models import Study
from validation import claim_order


def _study(slug: str) -> Study:
    # An unsaved study with a team named, so that making it reads nothing from the database.
    return Study(slug=slug, name=slug, team_id=1)


@pytest.fixture
def registered() -> Iterator[list[claim_order.ClaimPreference]]:
    """The registration as the site made it at start, put back after the test."""
    before = list(claim_order._registered)
    yield claim_order._registered
    claim_order._registered[:] = before


def test_the_site_registers_exactly_one_preference_at_start(
    registered: list[claim_order.ClaimPreference],
) -> None:
    from model_annotators.triage import claim_preference

    assert registered == [claim_preference]


def test_the_registered_preference_answers_for_the_study_asked_about(
    registered: list[claim_order.ClaimPreference],
) -> None:
    asked: list[Study] = []

    def prefer_odd_pairs(study: Study) -> claim_order.Preference | None:
        asked.append(study)
        return ("collection_pair.id % %s = 1", [study.slug])

    claim_order.register(prefer_odd_pairs)
    study = _study("one-study")

    assert claim_order.preference_for(study) == ("collection_pair.id % %s = 1", ["one-study"])
    assert asked == [study]


def test_a_preference_that_answers_none_leaves_the_order_alone(
    registered: list[claim_order.ClaimPreference],
) -> None:
    claim_order.register(lambda study: None)

    assert claim_order.preference_for(_study("plain")) is None


def test_a_second_registration_replaces_the_first(registered: list[claim_order.ClaimPreference]) -> None:
    def first(study: Study) -> claim_order.Preference:
        return ("TRUE", ["first"])

    def second(study: Study) -> claim_order.Preference:
        return ("FALSE", ["second"])

    claim_order.register(first)
    claim_order.register(second)

    assert claim_order.preference_for(_study("s")) == ("FALSE", ["second"])
    assert registered == [second]


def test_a_process_that_registered_no_preference_is_told_which_app_it_lacks(
    registered: list[claim_order.ClaimPreference],
) -> None:
    registered.clear()

    with pytest.raises(ImproperlyConfigured) as refused:
        claim_order.preference_for(_study("s"))

    assert str(refused.value) == (
        "No claim preference is registered: annotation_site.apps.SiteConfig must be in INSTALLED_APPS."
    )


def test_registering_after_none_was_registered_makes_claims_possible_again(
    registered: list[claim_order.ClaimPreference],
) -> None:
    registered.clear()
    answer: claim_order.Preference = ("TRUE", [])

    def always(study: Any) -> claim_order.Preference:
        return answer

    claim_order.register(always)

    assert claim_order.preference_for(_study("s")) is answer
