"""The bot bench/attacks/open_link_fresh_browsers.py against a live server: typed participant ids,
each in a fresh browser, on a paid study without a market connection. Left as a researcher leaves
it, the study takes none of them; opened as an unverified link, it serves them and owes no bonus."""

import pytest
from pytest_django.live_server_helper import LiveServer

from bench.attacks import open_link_fresh_browsers as bot
from crowd.models import StudySession
from quality.models import BonusEntry


@pytest.mark.django_db(transaction=True)
def test_fresh_browsers_get_no_task_on_an_unverified_paid_study_and_no_bonus_on_an_open_link(
    live_server: LiveServer,
) -> None:
    # Catch trials are drawn at random: at the bot's 20% share, three ids sometimes met none, and then
    # nothing was earned for the open link to refuse. At 60% they meet several.
    result = bot.run(live_server.url, seed=5, ids=3, share=0.6)
    assert result["at_chance_or_refused"] and result["succeeded"] == 0, result["detail"]
    assert "0 of 3 fresh-browser ids admitted (0 sessions)" in result["detail"]
    # The open link did serve (codes) and the catch trials earned bonuses: recorded, never owed.
    assert StudySession.objects.filter(study__open_link_unverified=True, completed_at__isnull=False).count() == 3
    earned = BonusEntry.objects.filter(study__open_link_unverified=True)
    assert earned.exists(), result["detail"]
    assert all("never" in entry.reason or "not payable" in entry.reason for entry in earned), result["detail"]
