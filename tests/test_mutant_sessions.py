"""Under mutmut each pytest session reuses one test database: a session that did not end (mutmut
stopped it) leaves no clean mark, so the next one makes the database anew; a session that ran its
tests to the end, passing or failing, marks it clean for the next."""

from pathlib import Path

import pytest

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
