"""The markets' models at the edges mutmut found unguarded (markets/models.py).

A connection stores only ids in its market's format: `save` refuses a connection with an id out of
format unless the save names only fields that are no ids (the health check's line on a connection
whose old row holds a bad id is still written), `clean` refuses it with the field named, and
`id_problems` checks each of the four id fields against the connection's own market. Each model's
`__str__` is what the admin shows a researcher.
"""

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from markets.ids import MTURK_FORMAT, PROLIFIC_FORMAT
from markets.models import (
    BonusBatch,
    BonusPayment,
    ListEntry,
    MarketCall,
    MarketConnection,
    SessionReview,
    WebhookDelivery,
)

from .conftest import make_study

PROLIFIC = "60a3f1c2b4e5d6f7a8b9c0d1"
MTURK = "3XYZ0ABCDEF1GHIJ2KLMN3OPQR4STU"
BAD = "../users/me/#"


def prolific_connection(**fields: str) -> MarketConnection:
    """An unsaved Prolific connection of a new study, its ids in format unless `fields` say else."""
    values = {"market_study_id": PROLIFIC, **fields}
    return MarketConnection(
        study=make_study(),
        market="prolific",
        sealed_credentials="sealed-token",
        webhook_key="hook-key-models",
        **values,
    )


@pytest.mark.django_db
def test_a_connection_in_format_is_stored_and_passes_the_admins_check() -> None:
    connection = prolific_connection(qualified_list_id=PROLIFIC)
    connection.full_clean()
    connection.save()
    stored = MarketConnection.objects.get()
    assert (stored.market_study_id, stored.qualified_list_id) == (PROLIFIC, PROLIFIC)


@pytest.mark.django_db
def test_a_connection_with_an_id_out_of_format_is_never_stored() -> None:
    connection = prolific_connection(excluded_list_id=BAD)
    with pytest.raises(ValidationError) as refused:
        connection.save()
    assert refused.value.message_dict == {
        "excluded_list_id": [f"The excluded workers' list id {BAD!r} is not a market id: {PROLIFIC_FORMAT}."]
    }
    assert not MarketConnection.objects.exists()


@pytest.mark.django_db
def test_the_admins_check_names_the_id_out_of_format() -> None:
    connection = prolific_connection(market_study_id=BAD)
    with pytest.raises(ValidationError) as refused:
        connection.clean()
    assert refused.value.message_dict == {
        "market_study_id": [f"The Prolific study id {BAD!r} is not a market id: {PROLIFIC_FORMAT}."]
    }


@pytest.mark.django_db
def test_a_save_of_no_id_field_still_writes_on_an_old_row_with_a_bad_id() -> None:
    connection = prolific_connection()
    connection.save()
    # An old row, written before the check (a raw update), holds a path for an id.
    MarketConnection.objects.filter(pk=connection.pk).update(qualified_list_id=BAD)
    connection.refresh_from_db()
    connection.last_check = "Prolific answered"
    connection.approve_automatically = True  # changed here, but not among the fields saved
    connection.save(update_fields=["last_check"])
    stored = MarketConnection.objects.get()
    assert (stored.last_check, stored.approve_automatically) == ("Prolific answered", False)
    # A save that writes an id field is refused, even with other fields beside it.
    connection.last_check = "written again"
    with pytest.raises(ValidationError) as refused:
        connection.save(update_fields=["last_check", "qualified_list_id"])
    assert set(refused.value.message_dict) == {"qualified_list_id"}
    with pytest.raises(ValidationError):
        connection.save()
    assert MarketConnection.objects.get().last_check == "Prolific answered"


@pytest.mark.django_db
def test_a_save_passes_its_positional_arguments_on_to_django() -> None:
    connection = prolific_connection()
    # (force_insert, force_update) given by position, as Django 5 still takes them: an update
    # forced on a row never stored is refused, and nothing is stored.
    deprecated = pytest.warns(DeprecationWarning, match="Passing positional arguments to save")
    with deprecated, pytest.raises(ValueError, match="no primary key"), transaction.atomic():
        connection.save(False, True)
    assert not MarketConnection.objects.exists()


def test_each_prolific_id_field_is_checked_and_the_hit_type_is_left_alone() -> None:
    connection = MarketConnection(
        market="prolific",
        market_study_id=BAD,
        hit_type_id=BAD,
        qualified_list_id="qualified/..",
        excluded_list_id="excluded?x=1",
    )
    assert connection.id_problems() == {
        "market_study_id": f"The Prolific study id {BAD!r} is not a market id: {PROLIFIC_FORMAT}.",
        "qualified_list_id": f"The qualified workers' list id 'qualified/..' is not a market id: {PROLIFIC_FORMAT}.",
        "excluded_list_id": f"The excluded workers' list id 'excluded?x=1' is not a market id: {PROLIFIC_FORMAT}.",
    }


def test_each_mturk_id_field_is_checked_against_mturks_format() -> None:
    connection = MarketConnection(
        market="mturk",
        market_study_id=BAD,
        hit_type_id="hit/type",
        qualified_list_id=PROLIFIC,
        excluded_list_id=MTURK,
    )
    assert connection.id_problems() == {
        "hit_type_id": f"The HIT type id 'hit/type' is not a market id: {MTURK_FORMAT}.",
        "qualified_list_id": f"The qualified workers' list id {PROLIFIC!r} is not a market id: {MTURK_FORMAT}.",
    }
    assert MarketConnection(market="mturk", hit_type_id=MTURK).id_problems() == {}


def test_the_admin_names_each_market_row_as_a_researcher_reads_it() -> None:
    assert str(MarketConnection(market="prolific", study_id=7)) == "Prolific for 7"
    assert str(MarketConnection(market="mturk", study_id=8)) == "Mechanical Turk for 8"
    assert str(MarketCall(action="approve", ok=True)) == "approve ok"
    assert str(MarketCall(action="pay_bonus", ok=False)) == "pay_bonus failed"
    assert str(SessionReview(decision="reject", study_session_id=12, state="failed")) == "reject session 12: failed"
    assert str(BonusBatch(state="new")) == "bulk bonus (not created): new"
    assert str(BonusBatch(market_bulk_id="bulk-9", state="paid")) == "bulk bonus bulk-9: paid"
    assert str(BonusPayment(earned_id=31, state="unknown")) == "payment of bonus 31: unknown"
    delivery = WebhookDelivery(event_type="submission.status.change", resource_id="sub-1", status="APPROVED")
    assert str(delivery) == "submission.status.change sub-1 APPROVED"
    assert str(ListEntry(worker_id=5, kind="excluded")) == "5 on excluded"
