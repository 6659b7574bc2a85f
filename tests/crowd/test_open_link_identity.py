"""Identity that costs money to multiply: a paid study takes participants only with verified ids (its
market confirms each one, or signed links), unless the researcher opened it as an unverified link;
such a study pays no bonus and keeps each participant id to its first browser."""

from collections.abc import Callable
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from corpus.models import Worker
from crowd.arrival import LAUNCH_REFUSED
from crowd.holds import OPEN_LINK_NO_BONUS
from crowd.models import Study, StudySession
from dashboard.queries.prelaunch import BLOCK, UNVERIFIED, launch_check
from markets.models import ConnectedMarket, MarketConnection
from quality import bonuses
from quality.models import BonusEntry
from tests import factories
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = pytest.mark.django_db

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc33dd44ee55ff", "SESSION_ID": "s-1"}


def paid_study(**fields: object) -> Study:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 4)
    return make_study(dataset, payment_per_task=Decimal("1.50"), bonus_per_catch_match=Decimal("0.25"), **fields)


def entry(study: Study) -> str:
    return reverse("study_entry", args=[study.slug])


def findings(study: Study) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in launch_check(study, catch_shortfall=None, sheet=None):
        found.setdefault(finding.level, []).append(finding.what)
    return found


def test_a_paid_study_with_unverified_ids_takes_nobody_and_its_check_names_the_two_ways(client: Client) -> None:
    study = paid_study()
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 403 and "not open yet" in response.content.decode()
    assert not Worker.objects.exists() and not StudySession.objects.exists()
    assert not get_user_model().objects.exists()
    refusal = [what for what in findings(study)[BLOCK] if what == LAUNCH_REFUSED]
    assert refusal and "connect the study to its market" in refusal[0] and "require signed links" in refusal[0]
    assert "Open link: ids are unverified, no bonuses" in refusal[0]


@pytest.mark.parametrize("pay", ["payment_per_task", "bonus_per_catch_match"])
def test_either_pay_makes_a_study_paid(client: Client, pay: str) -> None:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 4)
    study = make_study(dataset, **{pay: Decimal("0.10")})
    assert client.get(entry(study), PROLIFIC).status_code == 403


def test_an_unpaid_study_takes_participants_as_before(client: Client) -> None:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 4)
    study = make_study(dataset)
    assert client.get(entry(study), PROLIFIC).status_code == 302
    assert LAUNCH_REFUSED not in findings(study).get(BLOCK, [])


def test_signed_links_or_a_market_connection_verify_the_ids(client: Client) -> None:
    signed = paid_study(require_signed_link=True)
    response = client.get(entry(signed), {**PROLIFIC, "sig": signed.link_signature()})
    assert response.status_code == 302
    assert LAUNCH_REFUSED not in findings(signed).get(BLOCK, [])
    dataset, _genre = writing_setup()
    connected = make_study(dataset, slug="connected", payment_per_task=Decimal("2.00"))
    assert LAUNCH_REFUSED in findings(connected)[BLOCK]
    MarketConnection.objects.create(
        study=connected,
        market=ConnectedMarket.PROLIFIC,
        market_study_id="60aa11bb22cc33dd44ee55ff",
        sealed_credentials="sealed",
        webhook_key="k-connected",
    )
    assert LAUNCH_REFUSED not in findings(connected).get(BLOCK, [])


def test_an_open_link_study_serves_and_its_check_says_so_in_red(client: Client, researcher: object) -> None:
    study = paid_study(open_link_unverified=True)
    assert client.get(entry(study), PROLIFIC).status_code == 302
    found = findings(study)
    assert LAUNCH_REFUSED not in found.get(BLOCK, [])
    assert found[UNVERIFIED] and "no bonus is ever paid" in found[UNVERIFIED][0]
    client.force_login(researcher)  # type: ignore[arg-type]
    page = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert 'class="flag bad" data-level="unverified"' in page and "Ids unverified:" in page


def _bonus_on(study: Study, worker: Worker) -> list[BonusEntry]:
    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{study.slug}")
    catch = factories.pair(study.dataset, study.dataset.premises.first(), ["entailment"])

    class Matched:
        pair_id = catch.pk

    return bonuses.record_catch_bonuses(worker, session, [Matched()])


def test_an_open_link_study_records_bonuses_as_not_payable_with_the_reason(make_worker: Callable[[], Worker]) -> None:
    worker = make_worker()
    open_link = paid_study(open_link_unverified=True)
    (entry_open,) = _bonus_on(open_link, worker)
    assert OPEN_LINK_NO_BONUS in entry_open.reason and entry_open.cause == "catch_trial"
    assert not bonuses.unpaid(open_link).exists()
    assert list(bonuses.not_payable_open_link(open_link)) == [entry_open]
    with pytest.raises(bonuses.PaymentRefused, match="never paid"):
        bonuses.mark_paid(open_link, [entry_open.pk])
    # The same bonus on a study whose links are signed is owed.
    dataset, _ = writing_setup()
    signed = make_study(dataset, slug="signed", bonus_per_catch_match=Decimal("0.25"), require_signed_link=True)
    (entry_signed,) = _bonus_on(signed, worker)
    assert OPEN_LINK_NO_BONUS not in entry_signed.reason
    assert list(bonuses.unpaid(signed)) == [entry_signed]


def test_on_an_open_link_an_id_is_kept_to_its_first_browser(client: Client) -> None:
    study = paid_study(open_link_unverified=True)
    assert client.get(entry(study), PROLIFIC).status_code == 302
    assert client.get(entry(study), PROLIFIC).status_code == 302  # the same browser comes back
    other = Client()
    refused = other.get(entry(study), {**PROLIFIC, "SESSION_ID": "s-2"})
    assert refused.status_code == 403 and "Please use the browser you started in" in refused.content.decode()
    # Confirming the switch changes nothing: the id is all that says who the participant is.
    forced = other.post(entry(study), {**PROLIFIC, "SESSION_ID": "s-2", "switch": "yes"})
    assert forced.status_code == 403
    assert StudySession.objects.count() == 1 and "_auth_user_id" not in other.session


def test_on_a_verified_study_another_browser_is_asked_not_refused(client: Client) -> None:
    study = paid_study(require_signed_link=True)
    signed = {**PROLIFIC, "sig": study.link_signature()}
    assert client.get(entry(study), signed).status_code == 302
    asked = Client().get(entry(study), {**signed, "SESSION_ID": "s-2"})
    assert asked.status_code == 200 and 'name="switch"' in asked.content.decode()
