"""The bot bench/attacks/qualification_throwaway_ids.py against a live server: throwaway ids learn a
qualification test from pass and fail, in one browser or a fresh browser each, and the real id is
never trusted (one browser: no tries left; fresh browsers: the study's ids are unverified)."""

import pytest
from pytest_django.live_server_helper import LiveServer

from bench.attacks import qualification_throwaway_ids as bot
from corpus.models import Worker


@pytest.mark.django_db(transaction=True)
def test_throwaway_ids_never_make_the_real_id_trusted(live_server: LiveServer) -> None:
    result = bot.run(live_server.url, seed=2, ids=8, rounds=1)
    assert result["succeeded"] == 0 and result["at_chance_or_refused"], result["detail"]
    assert not Worker.objects.filter(is_trusted=True).exists(), result["detail"]
