"""Data commands run the model checks only: the URL and template checks (which import every view)
are for `manage.py check` and the server."""

import pytest
from django.core import checks
from django.core.management import call_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def failing_url_check():
    @checks.register(checks.Tags.urls)
    def broken_urls(app_configs, **kwargs):
        return [checks.Error("a URL check that always fails", id="tests.E001")]

    yield
    checks.registry.registry.registered_checks.discard(broken_urls)


@pytest.mark.parametrize("command", ["agreement_stats", "recompute_gold", "fold_tallies", "rebuild_tallies"])
def test_data_commands_skip_the_url_checks(failing_url_check, command, capsys):
    call_command(command, skip_checks=False)  # would raise SystemCheckError if the URL checks ran
    with pytest.raises(Exception, match="a URL check that always fails"):
        call_command("check")
