"""A market id is data, never a path: an id out of its market's format is refused when
it is stored (the service, the model, the admin's form) and when a client would send it."""

import pytest
from django.core.exceptions import ValidationError

from markets import connections, ids
from markets.clients import MarketError
from markets.clients.prolific import ProlificClient
from markets.models import MarketConnection

from .conftest import connect_mturk, connect_prolific, make_study

pytestmark = pytest.mark.django_db

PATH = "../users/me/#"


def test_a_path_for_a_study_id_is_refused_at_save(standin):
    study = make_study()
    connection = connect_prolific(study, standin)
    for field in ("market_study_id", "qualified_list_id", "excluded_list_id"):
        fields = {"market_study_id": standin.study_id, field: PATH}
        with pytest.raises(connections.ConnectionRefused, match="is not a market id"):
            connections.save_connection(study, market="prolific", **fields)
    connection.refresh_from_db()
    assert connection.market_study_id == standin.study_id and not connection.qualified_list_id
    # The model itself refuses it too: the admin's form (clean) and any other save.
    connection.market_study_id = PATH
    with pytest.raises(ValidationError) as refused:
        connection.full_clean()
    assert "market_study_id" in refused.value.message_dict
    with pytest.raises(ValidationError):
        connection.save()
    assert MarketConnection.objects.get().market_study_id == standin.study_id


def test_mturk_ids_are_checked_against_mturks_format(standin):
    study = make_study()
    with pytest.raises(connections.ConnectionRefused, match="HIT type id"):
        connections.save_connection(
            study, market="mturk", hit_type_id=PATH, access_key_id=standin.mturk_key, secret_access_key="s"
        )
    with pytest.raises(connections.ConnectionRefused, match="qualified workers"):
        connect_mturk(study, standin, qualified_list_id="qual/../type")
    assert not MarketConnection.objects.exists()


def test_a_stored_path_is_refused_at_request_time_and_never_reaches_the_market(standin):
    study = make_study()
    connection = connect_prolific(study, standin)
    # An id that got in some other way (an old row, a raw update) is refused by the client itself.
    MarketConnection.objects.filter(pk=connection.pk).update(market_study_id=PATH)
    connection.refresh_from_db()
    before = list(standin.requests)
    ok, line = connections.test_connection(connection)
    assert not ok and "is not a market id" in line
    asked = standin.requests[len(before) :]
    assert all("/studies/" not in path for _, path in asked), asked
    # Every path the client builds checks its ids, the ones from the market's answers too.
    client = ProlificClient("standin-prolific-token", base_url="http://127.0.0.1:9/api/v1/")
    calls = [
        lambda: client.submission("../users/me"),
        lambda: client.reject("a/b", "why", "OTHER"),
        lambda: client.pay_bonuses("x?y=1"),
        lambda: client.add_to_group(PATH, ["5f1a2b3c4d5e6f7a8b9c0d99"]),
        lambda: client.approve(standin.study_id, ["a/b"]),
    ]
    for call in calls:
        with pytest.raises(MarketError, match="is not a market id"):
            call()


def test_the_formats_are_the_markets_own():
    assert ids.prolific_id("60a3f1c2b4e5d6f7a8b9c0d1")
    for bad in ("60A3F1C2B4E5D6F7A8B9C0D1", "study-1", PATH, "60a3f1c2b4e5d6f7a8b9c0d1/"):
        with pytest.raises(ids.BadMarketId):
            ids.prolific_id(bad)
    assert ids.mturk_type_id("3XYZ0ABCDEF1GHIJ2KLMN3OPQR4STU")
    with pytest.raises(ids.BadMarketId):
        ids.mturk_type_id("3xyz0abcdef1ghij2klmn3opqr4stu")
