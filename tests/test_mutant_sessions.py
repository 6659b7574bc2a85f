"""Under mutmut each pytest session reuses one test database: a session that did not end (mutmut
stopped it) leaves no clean mark, so the next one makes the database anew; a session that ran its
tests to the end, passing or failing, marks it clean for the next. Sessions run one after another
in one process (as mutmut runs them) each use the test database of the URL they were given."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_database_url
from tests.mutant_sessions import CLEAN_MARK, end_session, start_session


def test_the_first_session_and_one_after_a_stopped_session_make_the_database_anew(tmp_path: Path):
    assert start_session(tmp_path) is True
    # This session is stopped before it ends: no mark, so the next one starts fresh again.
    assert start_session(tmp_path) is True


@pytest.mark.parametrize("exitstatus", [0, 1])
def test_a_session_that_ran_its_tests_to_the_end_lets_the_next_reuse_the_database(tmp_path: Path, exitstatus):
    start_session(tmp_path)
    end_session(tmp_path, exitstatus)
    assert (tmp_path / CLEAN_MARK).exists()
    assert start_session(tmp_path) is False
    assert not (tmp_path / CLEAN_MARK).exists()  # taken: a session stopped from here on leaves none


@pytest.mark.parametrize("exitstatus", [2, 3, 4, 5])
def test_an_interrupted_or_broken_session_leaves_the_next_to_make_the_database_anew(tmp_path: Path, exitstatus):
    start_session(tmp_path)
    end_session(tmp_path, exitstatus)
    assert start_session(tmp_path) is True


# Run twice in one process by the test below, as mutmut runs its pytest sessions: each must be on
# the test database of the URL it was given, not on one named after the last session's.
SESSION_TWICE = """
import json, sys

import pytest

names = []


class Seen:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        from django.db import connection

        names.append(connection.settings_dict["NAME"])


args = ["-p", "no:xdist", "--reuse-db", "--no-migrations", "-q", sys.argv[1]]
codes = []
for _ in range(2):
    codes.append(int(pytest.main(args, plugins=[Seen()])))
    from django.conf import settings

    names.append(settings.DATABASES["default"]["NAME"])
print(json.dumps({"codes": codes, "names": names}))
"""


def test_a_session_runs_on_its_test_database(db):
    from django.db import connection

    assert connection.settings_dict["NAME"].startswith("test_")


def test_sessions_run_one_after_another_in_one_process_each_use_the_test_database_of_their_url(
    tmp_path: Path, django_db_setup: None, django_db_blocker: Any
):
    from django.db import connection

    # The inner sessions are given the URL whose test database is this session's, so that they
    # reuse it (--reuse-db) instead of migrating one of their own; a second session that took the
    # first one's test name for its URL's would make and use `test_test_...`.
    test_name = connection.settings_dict["NAME"]
    assert test_name.startswith("test_"), test_name
    given = test_name.removeprefix("test_")
    url = subprocess_database_url().rsplit("/", 1)[0] + f"/{given}"
    script = tmp_path / "twice.py"
    script.write_text(SESSION_TWICE)
    # The inner sessions write none of this run's reports.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NLI_SKIP", "NLI_RECORD"))}
    try:
        done = subprocess.run(
            [sys.executable, str(script), f"{Path(__file__).relative_to(Path.cwd())}::{SESSION_TEST}"],
            env={**env, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["codes"] == [0, 0], done.stdout[-3000:]
        # In the test, after the session, in the second test, after it.
        assert seen["names"] == [test_name, given, test_name, given]
    finally:
        creation: Any = connection.creation  # Django's private helper, as tests/conftest.py drops with
        with django_db_blocker.unblock(), creation._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name('test_' + test_name)} WITH (FORCE)")


SESSION_TEST = test_a_session_runs_on_its_test_database.__name__
