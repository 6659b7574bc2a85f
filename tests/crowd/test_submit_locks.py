"""A submit locks its own session, never the study every other participant's submit shares.

A task's submit counts itself on its session (`crowd.services.record_task_done`) inside the
submit's transaction. Locking the study row as well (a `FOR UPDATE` over a join locks every
joined row) put every participant's submit in one queue behind the study, and any row that
references the study (a served count, a claim) needs a key-share lock on it: two submits that
each held one and waited for the other ended as a deadlock (a 500 to a participant)."""

import ast
import threading
from pathlib import Path

from django.db import connection, transaction

from crowd.models import Study, StudySession
from crowd.services import record_task_done
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

REPO = Path(__file__).resolve().parents[2]


def _study_and_two_sessions(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    study = make_study(dataset, slug="locks-study", tasks_per_batch=3)
    sessions = [
        StudySession.objects.create(study=study, worker=make_worker(), external_session_id=f"locks-{n}")
        for n in range(2)
    ]
    return study, sessions


def _while_counting(session, probe):
    """Run `probe` in another connection while `record_task_done(session)`'s transaction is open."""
    counted, probed = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def submit():
        try:
            with transaction.atomic():
                record_task_done(session)
                counted.set()
                probed.wait(30)
        finally:
            connection.close()

    def other():
        try:
            counted.wait(30)
            outcome["result"] = probe()
        except Exception as error:  # the test reports it
            outcome["result"] = error
        finally:
            probed.set()
            connection.close()

    threads = [threading.Thread(target=submit), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return outcome["result"]


def _with_lock_timeout(statement, params):
    def probe():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")
            cursor.execute(statement, params)
            return cursor.fetchall()

    return probe


def test_a_counting_submit_leaves_the_study_row_to_other_participants(transactional_db, make_worker):
    study, (first, _) = _study_and_two_sessions(make_worker)
    table = Study._meta.db_table
    # What a row referencing the study (a foreign key check) takes on it: FOR KEY SHARE.
    result = _while_counting(
        first, _with_lock_timeout(f"SELECT id FROM {table} WHERE id = %s FOR KEY SHARE", [study.pk])
    )
    assert result == [(study.pk,)], f"the study row was locked by another participant's submit: {result!r}"
    result = _while_counting(first, _with_lock_timeout(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", [study.pk]))
    assert result == [(study.pk,)], f"the study row was locked by another participant's submit: {result!r}"


def test_two_participants_count_their_tasks_at_once(transactional_db, make_worker):
    _, (first, second) = _study_and_two_sessions(make_worker)
    result = _while_counting(first, lambda: _counted_alone(second))
    assert isinstance(result, StudySession), result
    assert StudySession.objects.get(pk=second.pk).tasks_done == 1
    assert StudySession.objects.get(pk=first.pk).tasks_done == 1


def _counted_alone(session):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '2s'")
        return record_task_done(session)


def _locks_over_joins(path: Path):
    """Where `select_for_update()` with no `of=` is chained with a `select_related(...)` join."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        methods = []
        chain = node
        while isinstance(chain, ast.Call) and isinstance(chain.func, ast.Attribute):
            methods.append(chain)
            chain = chain.func.value
        locks = [
            c
            for c in methods
            if isinstance(c.func, ast.Attribute)
            and c.func.attr == "select_for_update"
            and not any(k.arg == "of" for k in c.keywords)
        ]
        if locks and any(
            isinstance(c.func, ast.Attribute) and c.func.attr == "select_related" and c.args for c in methods
        ):
            yield f"{path.relative_to(REPO)}:{locks[0].lineno}"


def test_no_row_lock_takes_the_rows_it_joins_for_reading():
    """A lock over a join names the rows it locks (`of=("self",)`): the joined parents (a study, a
    dataset, a snapshot) are read, and locking them queues every writer of their children."""
    sources = [
        path
        for path in REPO.rglob("*.py")
        if not {".venv", "tests", "bench", "migrations", "var", ".git"} & set(path.relative_to(REPO).parts)
    ]
    assert len(sources) > 100
    found = sorted({place for path in sources for place in _locks_over_joins(path)})
    assert not found, f"select_for_update over a select_related join without of=: {found}"
