"""Money follows holds. A session whose completion code is held has its bonuses
wait for the hold's decision: in no payment file, never marked paid, shown apart on the bonus and
cost pages; payable once the hold is released, never once it is refused. (The market payer's side:
tests/markets/test_payments_follow_holds.py.)"""

from decimal import Decimal

import pytest
from django.urls import reverse

from corpus.models import Market
from crowd.holds import SHARED_BROWSER, decide_code_holds, hold
from crowd.models import CodeHoldDecision, StudySession
from dashboard.queries.costs import cost_overview
from quality import bonuses
from quality.models import BonusEntry, BonusKind
from tests.quality.test_bonus_causes_and_files import CATCH, earn
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db

HELD_PID = "5f00000000000000000000bb"
FREE_PID = "5f00000000000000000000aa"


def complete(session: StudySession, *, held: str = "") -> StudySession:
    """Complete the session as record_task_done does: its code given, or held with a reason."""
    session.completed_at = session.started_at
    session.tasks_done = session.study.tasks_per_batch
    if not held:
        session.completion_code = session.expected_completion_code()
    session.save()
    if held:
        hold(session, SHARED_BROWSER, held)
    return session


@pytest.fixture
def two_prolific_sessions(make_worker):
    """A study with two Prolific participants, each with two catch bonuses of 1.00; the second's
    code is held (the shared-browser check's words)."""
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(2)]
    study = make_study(dataset)
    free = make_worker(market=Market.PROLIFIC, external_id=FREE_PID)
    held = make_worker(market=Market.PROLIFIC, external_id=HELD_PID)
    free_session = complete(session_for(study, free, "P-FREE"))
    held_session = complete(session_for(study, held, "P-HELD"), held=f"Same browser as participant {FREE_PID}")
    for trap in traps:
        earn(study, free, trap, free_session, CATCH)
        earn(study, held, trap, held_session, CATCH)
    return study, free_session, held_session


def test_a_held_sessions_bonus_is_absent_from_the_prolific_file_until_its_hold_is_released(two_prolific_sessions):
    study, _, held_session = two_prolific_sessions

    assert bonuses.prolific_bulk_bonus_csv(bonuses.unpaid(study)) == f"{FREE_PID},2.00\n"
    assert [entry.study_session_id for entry in bonuses.held_back(study)] == [held_session.pk] * 2

    assert decide_code_holds([held_session.pk], CodeHoldDecision.RELEASED) == 1

    assert bonuses.prolific_bulk_bonus_csv(bonuses.unpaid(study)) == f"{FREE_PID},2.00\n{HELD_PID},2.00\n"
    assert not bonuses.held_back(study).exists()


def test_a_refused_holds_bonuses_are_never_in_a_file(two_prolific_sessions):
    study, _, held_session = two_prolific_sessions

    decide_code_holds([held_session.pk], CodeHoldDecision.REFUSED)
    # A second decision changes nothing: the refusal stands.
    assert decide_code_holds([held_session.pk], CodeHoldDecision.RELEASED) == 0

    assert bonuses.prolific_bulk_bonus_csv(bonuses.unpaid(study)) == f"{FREE_PID},2.00\n"
    assert bonuses.refused_with_hold(study).count() == 2
    assert not bonuses.held_back(study).exists()
    held_session.refresh_from_db()
    assert held_session.completion_code == "" and held_session.code_is_held


def test_a_held_sessions_mturk_bonus_is_absent_from_the_mturk_file(make_worker):
    dataset = make_dataset()
    trap = catch_pair(dataset)
    study = make_study(dataset)
    turker = make_worker(market=Market.MTURK, external_id="A1HELDTURKER")
    session = complete(session_for(study, turker, "ASSIGN-HELD"), held="At chance")
    earn(study, turker, trap, session, CATCH)

    assert bonuses.mturk_bonus_csv(bonuses.unpaid(study)) == "worker_id,assignment_id,amount,reason\n"
    decide_code_holds([session.pk], CodeHoldDecision.RELEASED)
    assert "A1HELDTURKER,ASSIGN-HELD,1.00" in bonuses.mturk_bonus_csv(bonuses.unpaid(study))


def test_a_held_sessions_bonus_is_never_marked_paid_while_held(two_prolific_sessions):
    study, _, held_session = two_prolific_sessions
    held_ids = list(BonusEntry.objects.filter(study_session=held_session).values_list("pk", flat=True))

    with pytest.raises(bonuses.PaymentRefused, match="held"):
        bonuses.mark_paid(study, held_ids)

    assert not BonusEntry.objects.filter(kind=BonusKind.PAID).exists()
    decide_code_holds([held_session.pk], CodeHoldDecision.RELEASED)
    assert bonuses.mark_paid(study, held_ids)["paid"] == 2


def test_the_bonus_page_shows_held_bonuses_apart_and_its_download_leaves_them_out(
    client, researcher, two_prolific_sessions
):
    study, free_session, held_session = two_prolific_sessions
    client.force_login(researcher)

    page = client.get(reverse("dashboard:bonuses"), {"study": study.slug}).content.decode()
    download = client.get(reverse("dashboard:bonus_export", args=[study.slug, "prolific"])).content.decode()

    assert download == f"{FREE_PID},2.00\n"
    assert 'id="unpaid-total">2.00 USD' in page
    assert 'id="held-total">2.00 USD' in page
    assert f'data-session="{held_session.pk}"' in page and f"Same browser as participant {FREE_PID}" in page
    # The pay form names exactly the payable bonuses: pressing it pays the free session's two and
    # none of the held ones.
    form = page.split('id="pay-form"', 1)[1].split("</form>", 1)[0]
    fingerprint = form.split('name="listed" value="', 1)[1].split('"', 1)[0]
    paid = client.post(
        reverse("dashboard:bonus_pay", args=[study.slug]), {"listed": fingerprint, "confirm": "paid"}, follow=True
    )
    assert b"Marked 2 bonus(es) paid: 2.00 USD" in paid.content
    assert set(BonusEntry.objects.filter(kind=BonusKind.PAID).values_list("pays__study_session", flat=True)) == {
        free_session.pk
    }


def test_costs_show_held_sessions_tasks_and_bonuses_apart_from_paid_ones(two_prolific_sessions):
    study, free_session, held_session = two_prolific_sessions
    study.payment_per_task = Decimal("0.50")
    study.save()
    bonuses.mark_paid(study, BonusEntry.objects.filter(study_session=free_session).values_list("pk", flat=True))

    row = next(cost for cost in cost_overview()["studies"] if cost.study.pk == study.pk)

    # Ten tasks each: the free session's are spent, the held session's wait apart.
    assert (row.tasks, row.held_tasks) == (10, 10)
    assert str(row.task_money) == "5.00 USD" and str(row.held_task_money) == "5.00 USD"
    assert str(row.bonuses_paid) == "2.00 USD" and str(row.bonuses_held) == "2.00 USD"
    assert row.bonuses_owed.is_zero
    assert str(row.spent) == "7.00 USD" and str(row.held) == "7.00 USD"

    decide_code_holds([held_session.pk], CodeHoldDecision.RELEASED)
    row = next(cost for cost in cost_overview()["studies"] if cost.study.pk == study.pk)
    assert (row.tasks, row.held_tasks) == (20, 0)
    assert str(row.bonuses_owed) == "2.00 USD" and row.held.is_zero


def test_the_cost_page_shows_the_held_column(client, researcher, two_prolific_sessions):
    study, _, _ = two_prolific_sessions
    study.payment_per_task = Decimal("0.50")
    study.save()
    client.force_login(researcher)

    page = client.get(reverse("dashboard:costs")).content.decode()

    row = page.split(f'data-study="{study.slug}"', 1)[1].split("</tr>", 1)[0]
    assert 'data-stat="held" data-value="7.00" data-tasks="10"' in row
    assert 'data-stat="spent" data-value="5.00"' in row


def test_the_bonus_page_lists_held_bonuses_a_page_at_a_time_with_their_sums_from_the_tally(
    client, researcher, make_worker
):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(15)]
    study = make_study(dataset)
    held = []
    for index in range(2):
        worker = make_worker(market=Market.PROLIFIC, external_id=f"5f0000000000000000000{index:03d}")
        session = complete(session_for(study, worker, f"P-HELD-{index}"), held="Same browser as another participant")
        held += [earn(study, worker, trap, session, CATCH, amount="0.50").pk for trap in traps]
    # A second cause in the last held session: two tally rows, one session.
    held.append(earn(study, worker, None, session, "Thanks for the careful work", amount="1.00").pk)
    free = make_worker(market=Market.PROLIFIC, external_id=FREE_PID)
    earn(study, free, traps[0], complete(session_for(study, free, "P-FREE")), CATCH)
    client.force_login(researcher)

    def page(number):
        return client.get(reverse("dashboard:bonuses"), {"study": study.slug, "hpage": number}).content.decode()

    first, second = page(1), page(2)
    assert 'id="held-summary">31 bonus(es), <strong id="held-total">16.00 USD' in first
    assert "of 2\n    session(s) whose completion code is held" in first

    def held_rows(html):
        table = html.split('id="table-held"', 1)[1].split("</table>", 1)[0]
        return [int(row.split('"', 1)[0]) for row in table.split('data-bonus="')[1:]]

    shown = [held_rows(first), held_rows(second)]
    assert [len(rows) for rows in shown] == [25, 6]
    assert shown[0] + shown[1] == sorted(held)
    assert 'id="held-pager"' in first and "hpage=2#table-held" in first
