"""Fixtures shared by the whole suite.

The suite runs on PostgreSQL: in CI on the server DATABASE_URL names, with a real Celery worker on
Redis (CELERY_BROKER_URL); under `make test` without DATABASE_URL on the embedded cluster in
var/postgres/ (scripts/with_database.py), with tasks run in-process.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest
from django.conf import settings
from django.db.models.signals import post_migrate

from tests.worker_publish_log import FROM_A_ROLLED_BACK_TEST

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

# Playwright's sync API runs an event loop in the test thread; the ORM calls we make there are
# ordinary blocking calls, so Django's async guard would only get in the way.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def in_ci():
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def skip_or_fail_in_ci(message):
    """A test that cannot run here: a skip on a workstation, a failure in CI (CI=true), where every
    input the suite needs is part of the contract and a skip would turn a missing input green."""
    if in_ci():
        pytest.fail(f"CI must run this test: {message}", pytrace=False)
    pytest.skip(message)


def shared_file(relative):
    """A file (or folder) of the public data, ../shared/data or NLI_SHARED_DATA; the one helper
    every test uses for it. Missing: a skip on a workstation, a failure in CI."""
    path = Path(os.environ.get("NLI_SHARED_DATA", SHARED_DATA)) / relative
    if not path.exists():
        skip_or_fail_in_ci(f"{path} is not here (public data lives in ../shared/data; set NLI_SHARED_DATA)")
    return path


def require_package(module, install_hint):
    """Import an optional package a test needs; a missing one is a skip here, a failure in CI."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        skip_or_fail_in_ci(f"the optional package {module!r} is not installed ({error}); {install_hint}")


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """The suite's own connections wait 5 s before they look for a deadlock; the Celery worker and
    gunicorn subprocesses keep PostgreSQL's 1 s. A transactional test's teardown empties every
    table (`_flush_by_delete`) while the session's real Celery worker may still be reading rows that test committed (a tagging
    task queued by its new pairs): in that deadlock the Celery worker's statement is the one cancelled,
    and the task fails on rows that are being wiped anyway, instead of the flush, which would
    leave them to the next test."""
    options = settings.DATABASES["default"].setdefault("OPTIONS", {})
    options["options"] = f"{options.get('options', '')} -c deadlock_timeout=5s".strip()


# --- one migrated test database, cloned for each pytest-xdist process ----------------------------
# Migrating a database from nothing is about 17 s of Python (some 40 s with coverage on a busy
# machine); under pytest-xdist each process did it, side by side on the same cores. Instead the
# controller migrates one test database, in a thread, while the test processes start and collect
# (about 20 s of their own), and each process clones it (`CREATE DATABASE ... TEMPLATE`, under a
# second) once the controller says it is ready, as Django's own parallel runner does. With
# --reuse-db (and no --create-db) each process keeps its own database as pytest-django does.

TEMPLATE_KEY = "nli_test_database_template"
_template = pytest.StashKey[dict]()


def _clones_a_template(config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not (
        config.getvalue("reuse_db") and not config.getvalue("create_db")
    )


def pytest_configure(config):
    from tests.mutant_sessions import start_session, under_mutmut

    # A stopped session's database is made anew: tests/mutant_sessions.py says why.
    under = under_mutmut() and not hasattr(config, "workerinput") and config.getvalue("reuse_db")
    if under and start_session(config.rootpath):
        config.option.create_db = True


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """The controller of a pytest-xdist run starts migrating the template (`_clones_a_template`),
    before pytest-xdist starts the test processes (and after pytest-django's last `block()`)."""
    config = session.config
    if hasattr(config, "workerinput") or not _clones_a_template(config):
        return
    import tempfile
    import threading

    from django.db import connection
    from pytest_django.plugin import blocking_manager_key

    blocker = config.stash[blocking_manager_key]
    original = connection.settings_dict["NAME"]
    ready = Path(tempfile.mkdtemp(prefix="nli-test-template-")) / "ready"
    creation: Any = connection.creation  # Django's private helpers, which its own parallel runner uses
    made = {"name": creation._get_test_db_name(), "ready": str(ready), "original": original}

    def migrate_the_template():
        from django.db import connection as own  # this thread's connection

        try:
            with blocker.unblock():
                own.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
                own.close()
            ready.write_text("ok")
        except BaseException as error:  # the test processes report it instead of waiting for ever
            ready.write_text(f"the controller could not make the test database: {error!r}")
            raise

    thread = threading.Thread(target=migrate_the_template, name="test-database-template", daemon=True)
    thread.start()
    config.stash[_template] = made

    def drop_the_template():
        thread.join()
        with blocker.unblock(), creation._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(made['name'])} WITH (FORCE)")
        connection.settings_dict["NAME"] = original

    config.add_cleanup(drop_the_template)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, in the controller, before each test process starts: where the template is."""
    if _template in node.config.stash:
        node.workerinput[TEMPLATE_KEY] = node.config.stash[_template]


def _wait_for_the_template(template) -> str:
    ready = Path(template["ready"])
    deadline = time.monotonic() + 900
    while not ready.exists() or not ready.read_text():
        if time.monotonic() > deadline:
            raise RuntimeError("the controller did not make the test database within 15 minutes")
        time.sleep(0.2)
    if ready.read_text() != "ok":
        raise RuntimeError(ready.read_text())
    return template["name"]


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_keepdb,
    django_db_createdb,
    django_db_modify_db_settings,
):
    """The test database: a clone of the controller's migrated template in a pytest-xdist process
    (`pytest_configure_node`), else made as pytest-django makes it."""
    from django.db import connection
    from django.test.utils import setup_databases

    template = getattr(request.config, "workerinput", {}).get(TEMPLATE_KEY)
    if not template:
        with django_db_blocker.unblock():
            made = setup_databases(
                verbosity=request.config.option.verbose,
                interactive=False,
                keepdb=django_db_keepdb and not django_db_createdb,
            )
            _commits_without_waiting_for_the_disk()
            _copy_reference_rows()
        yield
        if not django_db_keepdb:
            with django_db_blocker.unblock():
                _drop_test_databases(made)
        else:
            # Kept for the next session, and the names given back: a later session in this process
            # (mutmut runs them one after another) would otherwise take `test_<test name>`.
            for connection_kept, old_name, _ in made:
                settings.DATABASES[connection_kept.alias]["NAME"] = connection_kept.settings_dict["NAME"] = old_name
        return
    creation: Any = connection.creation  # Django's private helpers, which its own parallel runner uses
    original = connection.settings_dict["NAME"]
    clone = creation._get_test_db_name()  # the test name with this process's suffix (test_x_gw0)
    quote = connection.ops.quote_name
    with django_db_blocker.unblock():
        name = _wait_for_the_template(template)
        with creation._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(clone)} WITH (FORCE)")
            cursor.execute(f"CREATE DATABASE {quote(clone)} TEMPLATE {quote(name)}")
        connection.close()
        settings.DATABASES[connection.alias]["NAME"] = clone
        connection.settings_dict["NAME"] = clone
        _commits_without_waiting_for_the_disk()
        _copy_reference_rows()
    yield
    with django_db_blocker.unblock():
        _drop_test_database(connection, original)


def _drop_test_databases(made):
    """`teardown_databases`, each database dropped as `_drop_test_database` drops it."""
    for connection, old_name, destroy in made:
        if destroy:
            _drop_test_database(connection, old_name)


def _drop_test_database(connection, original_name):
    """Drop the test database `connection` is on, WITH (FORCE), and point the connection back at
    `original_name`. FORCE: a connection some thread or process of the run still holds (the embedded
    mode's in-process tasks, a live server's thread, the session's Celery worker) would otherwise
    keep it ("database ... is being accessed by other users": Django's plain DROP DATABASE failed a
    single-process run's last test so), and with it the next run's name."""
    test_name = connection.settings_dict["NAME"]
    connection.close()
    with connection.creation._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(test_name)} WITH (FORCE)")
    settings.DATABASES[connection.alias]["NAME"] = connection.settings_dict["NAME"] = original_name


def _commits_without_waiting_for_the_disk():
    """Every connection to the test database (this process's, and its servers' and workers', which
    reach it through DATABASE_URL) commits without waiting for the WAL to reach the disk
    (`synchronous_commit = off`): about 3 ms a commit on this machine's disk against 0.07 ms, and
    the suite commits tens of thousands of times. Visibility, locks and atomicity are unchanged;
    what it gives up is the last commits of a PostgreSQL server that crashes, which no test does."""
    from django.db import connection

    with connection.cursor() as cursor:
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
    connection.close()  # a database's settings apply to the connections opened after


# The rows a migrated database holds that a flush must give back: what post_migrate makes (content
# types, permissions) and the reference data of the data migrations that `_reference_data_after_a_flush`
# puts back (genres, prompt families and their examples, the FAQ).
REFERENCE_TABLES = (
    "django_content_type",
    "auth_permission",
    "collection_genre",
    "collection_promptfamily",
    "collection_promptexample",
    "collection_faqentry",
)
REFERENCE_SCHEMA = "nli_test_reference"
_reference_copy = {"made": False}


def _copy_reference_rows():
    """A copy of REFERENCE_TABLES, as the freshly made test database holds them, in a schema of its
    own (a test that empties `public`, as the migration test does, leaves it), for the flush."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"DROP SCHEMA IF EXISTS {REFERENCE_SCHEMA} CASCADE; CREATE SCHEMA {REFERENCE_SCHEMA}")
        for table in REFERENCE_TABLES:
            cursor.execute(f"CREATE TABLE {REFERENCE_SCHEMA}.{table} AS TABLE public.{table}")
    _reference_copy["made"] = True


# A table whose heap is over this many bytes is TRUNCATEd by the flush, not DELETEd from.
LARGE_TABLE_BYTES = 1024 * 1024


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete():
    """A transactional test's flush empties every table with DELETE and puts the reference rows back
    from their copy (`_copy_reference_rows`), in one transaction that turns off triggers and
    foreign-key checks (`session_replication_role = replica`; the suite's role is a superuser on
    CI's server and the embedded cluster), instead of Django's TRUNCATE followed by post_migrate.

    On tables of a few rows TRUNCATE costs far more: it gives each table and index a new file
    (about 0.5 s for the 98 tables, against about 0.05 s); and post_migrate, which made the content
    types, permissions and reference data again through the ORM, some 300 statements, was about
    0.25 s of every transactional test's teardown. The reference rows come back as they were made,
    ids included. Every table of the schema is emptied but the migration record, as TRUNCATE and
    its trigger (which empties the pair search table) leave them."""
    from django.core.management.commands import flush
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncating = DatabaseOperations.sql_flush
    flush_module: Any = flush  # the command's module names the signal's sender it imported
    emit_post_migrate = flush_module.emit_post_migrate_signal
    restored = {"now": False}

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            (superuser,) = cursor.fetchone()
            cursor.execute(
                "SELECT quote_ident(tablename), "
                "pg_relation_size(format('%%I.%%I', schemaname, tablename)::regclass) > %s FROM pg_tables "
                "WHERE schemaname = current_schema() AND tablename <> 'django_migrations'",
                [LARGE_TABLE_BYTES],
            )
            sized = cursor.fetchall()
        if reset_sequences or not tables or not superuser or not _reference_copy["made"]:
            return truncating(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        restored["now"] = True
        large = [name for name, is_large in sized if is_large]
        return [
            "SET LOCAL session_replication_role = replica",
            # A large table (a test that imported SNLI dev) is emptied faster by TRUNCATE: a DELETE of
            # its rows took 25 s of one teardown. CASCADE: the tables that refer to it are emptied
            # anyway, by this statement or the DELETEs.
            *([f"TRUNCATE {', '.join(large)} CASCADE"] if large else []),
            *(f"DELETE FROM {name}" for name, is_large in sized if not is_large),
            *(f"INSERT INTO public.{table} SELECT * FROM {REFERENCE_SCHEMA}.{table}" for table in REFERENCE_TABLES),
            # The copy's ids are below what the sequences hand out, unless the schema was made anew.
            *(
                f"SELECT setval(pg_get_serial_sequence('public.{table}', 'id'), "
                f"greatest((SELECT max(id) FROM public.{table}), 1))"
                for table in REFERENCE_TABLES
            ),
        ]

    def post_migrate_unless_restored(*args, **kwargs):
        if restored["now"]:
            restored["now"] = False
            return None
        return emit_post_migrate(*args, **kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
    patch.setattr(flush, "emit_post_migrate_signal", post_migrate_unless_restored)
    yield
    patch.undo()


# Seconds each test file took in a recent whole run (setup, call and teardown of its tests, in
# coverage's pass on two cores): `NLI_RECORD_DURATIONS=tests/file_seconds.json make test` rewrites
# it. Files run heaviest first, so that pytest-xdist (`--dist loadfile` hands out whole files in
# collection order) ends on light files instead of one process finishing a 30 s file alone while
# the other waits. A file not listed (new since) runs after the listed ones; a stale figure only
# moves a file in the order.
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")


def heaviest_files_first(items, seconds):
    """`items` regrouped by file (each file's tests in their order), the files by their recorded
    seconds, most first; unlisted files after, in collection order."""
    by_file: dict[str, list] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(by_file, key=lambda name: -seconds.get(name, 0.0))  # sorted() is stable
    return [item for name in order for item in by_file[name]]


def pytest_collection_modifyitems(config, items):
    import json

    for item in items:
        _markers_of[item.nodeid] = sorted(
            {mark.name for mark in item.iter_markers()} & {"browser", "celery_worker", "slow"}
        )
    if FILE_SECONDS.exists():
        items[:] = heaviest_files_first(items, json.loads(FILE_SECONDS.read_text(encoding="utf-8")))


def pytest_collection_finish(session):
    """What collection loaded (Django, torch, the apps, every test module: some 300,000 objects)
    lives until the process ends: frozen, the garbage collector no longer walks it. Each full
    collection walked all of it, about 0.25 s apiece: in one process running 356 tests, full
    collections took 12.5 s before and 5.5 s after (timed by gc.callbacks; docs/checks.md)."""
    import gc

    gc.collect()
    gc.freeze()


def _reference_data_after_a_flush(sender, app_config=None, **kwargs):
    """Genres and prompt families put back after each flush (a transactional test's end; post_migrate
    follows a flush as it follows `migrate`), committed. Without this, every test after the first
    transactional one in a pytest process found them gone and made all 82 rows again inside its own
    rolled-back transaction: about 45 ms of setup for each of some 2,000 tests."""
    if app_config is not None and app_config.label == "corpus":
        from corpus.prompt_install import install_prompt_content

        install_prompt_content()


post_migrate.connect(_reference_data_after_a_flush, dispatch_uid="tests-reference-data-after-a-flush")


@pytest.fixture(autouse=True)
def _reference_data(request):
    """Genres and prompt families, as a migrated database has them.

    They come from a data migration, and every transactional test ends by flushing all tables;
    `_reference_data_after_a_flush` puts them back, and this makes them where that could not (a
    test that emptied them some other way), so no test runs on a database no real installation has.
    """
    wants_db = request.node.get_closest_marker("django_db") or {"db", "transactional_db", "live_server"} & set(
        request.fixturenames
    )
    if not wants_db:
        return
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker and marker.kwargs.get("transaction")) or {"transactional_db", "live_server"} & set(
        request.fixturenames
    )
    request.getfixturevalue("transactional_db" if transactional else "db")
    from corpus.models import Genre
    from corpus.prompt_content import GENRES
    from corpus.prompt_install import install_prompt_content

    if Genre.objects.count() < len(GENRES):
        install_prompt_content()


@contextmanager
def rows_for_the_module(django_db_blocker, directory):
    """Rows made once for all the tests of a module (a loaded demo, a simulated study), for a
    module-scoped fixture: `with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp(...)):
    make them, then yield`.

    They are made in a transaction that the module's end rolls back, and each test runs in a
    savepoint of it (pytest-django's `db`), so what one test changes is gone before the next: every
    test sees the rows exactly as they were made, as if it had made them itself (tests/demo/
    test_demo_loaded.py does the same by hand). They are made as a test would make them: on the
    reference data (`_reference_data`), with an empty cache, the suite's fast password hasher and
    data folders of their own (the autouse fixtures below set those per test, after this runs).
    """
    from django.core.cache import cache
    from django.db import transaction
    from django.test import override_settings

    from corpus.models import Genre
    from corpus.prompt_content import GENRES
    from corpus.prompt_install import install_prompt_content

    directory = Path(directory)
    suite_settings = override_settings(
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        DATA_DIR=directory / "var",
        SNAPSHOT_DIR=directory / "var" / "snapshots",
        CHECKPOINT_DIR=directory / "var" / "checkpoints",
    )
    with django_db_blocker.unblock(), transaction.atomic():
        if Genre.objects.count() < len(GENRES):
            install_prompt_content()
        cache.clear()
        with suite_settings:
            yield
        cache.clear()
        transaction.set_rollback(True)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache (in CI it is Redis, shared with the Celery worker), and
    with no statement compiled by an earlier test (base.compiled)."""
    from django.core.cache import cache

    from base.compiled import forget_compiled

    forget_compiled()
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashing is deliberately slow; it is not what these tests are about.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _isolated_data_dirs(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "var"
    settings.SNAPSHOT_DIR = tmp_path / "var" / "snapshots"
    settings.CHECKPOINT_DIR = tmp_path / "var" / "checkpoints"


@pytest.fixture
def make_researcher(db, django_user_model):
    def make(username="researcher", password="research-pass-1"):
        # A researcher in the researcher group, staff (for the admin), and a superuser: a superuser
        # sees every team's data, and these tests make their data in no team or several. (It was
        # first made a superuser because the group's permissions went missing after flushes; that
        # leak is found and fixed, see dashboard/migrations/0001_researcher_group.py.) The group's
        # own permissions are tested with non-superusers in tests/dashboard/test_researcher_group.py,
        # team scoping in tests/test_team_access.py.
        from base.permissions import ensure_researcher_group

        user = django_user_model.objects.create_user(
            username=username, password=password, is_staff=True, is_superuser=True
        )
        user.groups.add(ensure_researcher_group())
        return user

    return make


@pytest.fixture
def researcher(make_researcher):
    return make_researcher()


@pytest.fixture
def make_worker(db, django_user_model):
    from corpus.models import Worker

    counter = {"n": 0}

    def make(username=None, password="worker-pass-1", is_excluded=False, **fields):
        """`is_excluded`: excluded in the default team, where the suite's data lives (an exclusion
        is a team's: corpus.models.WorkerExclusion)."""
        from corpus.models import WorkerExclusion
        from teams.models import default_team_id

        counter["n"] += 1
        username = username or f"worker{counter['n']}"
        user = django_user_model.objects.create_user(username=username, password=password)
        worker = Worker.objects.create(user=user, **fields)
        if is_excluded:
            WorkerExclusion.objects.create(worker=worker, team_id=default_team_id())
        return worker

    return make


# --- browser -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium_browser():
    if not Path(CHROMIUM).exists():
        skip_or_fail_in_ci(f"no chromium at {CHROMIUM}; scripts/ensure_chromium.sh installs Debian's 'chromium'")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture(params=[390, 1280], ids=["phone", "desktop"])
def page_on_phone_and_desktop(request, chromium_browser):
    """A page at a phone's width and at a desktop's: each test that takes it runs at both."""
    context = chromium_browser.new_context(viewport={"width": request.param, "height": 844})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


# --- Celery ----------------------------------------------------------------------------------


def xdist_suffix():
    """ "-gw0", "-gw1", ... in a pytest-xdist worker process, else "": for files each process writes."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"-{worker}" if worker else ""


def broker_url():
    return os.environ.get("CELERY_BROKER_URL", "")


def needs_broker():
    """A test of the real Celery worker on Redis: CI runs it (CELERY_BROKER_URL given); on the embedded
    cluster alone, where tasks run in-process, it skips and says why."""
    if not broker_url():
        skip_or_fail_in_ci("needs a real Celery worker on a broker: set CELERY_BROKER_URL=redis://... (CI does)")


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real `celery worker` subprocess on the test database, when a broker is configured.

    Without a broker, tasks run in-process and this yields None. Tests that use it need
    `transactional_db` so the worker sees their rows. Its data folder (snapshots, checkpoints) is
    its pytest process's own: the test databases of two pytest-xdist processes are clones of one
    template, so their ids run alike, and two workers writing the checkout's var/snapshots/<id>/
    overwrote each other's snapshot of the same id (a training run then failed on the hash).
    """
    if not broker_url():
        yield None
        return
    log_path = Path(os.environ.get("CELERY_TEST_LOG", f"/tmp/nli-test-celery-worker{xdist_suffix()}.log"))
    data_dir = tmp_path_factory.mktemp("celery-worker-data")
    empty_the_suites_broker()
    process = start_celery_worker(f"test-{os.getpid()}", "default,gpu", log_path, {"DATA_DIR": str(data_dir)})
    yield process
    stop_celery_worker(process)
    empty_the_suites_broker()


def empty_the_suites_broker():
    """Drop every message on this test process's broker database (its own: annotation_site/
    test_settings.py). A worker that stops puts the tasks it held for later (a countdown's) back on
    the queue, and the revocations of an earlier run live only in the memory of that run's workers:
    the next session's worker would run them on its own test database, in the middle of a test."""
    import redis

    redis.Redis.from_url(broker_url()).flushdb()


# The ids of the tasks this process published during the running test (Celery's before_task_publish).
_published_by_this_test: list[str] = []


# Whether the running test's rows are one transaction rolled back at its end (pytest-django's `db`).
_test_rolls_back: list[bool] = [False]


def _note_published_task(sender=None, headers=None, **kwargs):
    """Note the task's id; one published inside a test's rolled-back transaction is marked so the
    suite's workers never run it (tests/worker_publish_log.py): the worker cannot see the test's rows,
    and would commit what it computed from the rows other tests left."""
    if headers is None:
        return
    _published_by_this_test.append(headers.get("id", ""))
    if _test_rolls_back[0]:
        headers[FROM_A_ROLLED_BACK_TEST] = "1"


def revoke_tasks_left_behind():
    """Revoke every task this process published since the test began, and forget the runs
    `enqueue_coalesced` counted on (each covered a later call only through its own queued run).

    The session's Celery worker outlives each test: a task a test queued to run later (a flag
    refresh a few seconds on) or one still waiting in the queue when it ended would otherwise run in
    the next test, on the same database, and commit what it computed from the rows the flush left:
    a worker-quality page then showed that refresh's empty rows. A revoked task the worker has not
    started is discarded when it is taken or its time comes; one already running is waited for.
    The tasks the suite's workers published themselves (tests/worker_publish_log.py) are revoked
    too, those a running task published before it ended included."""
    from base import task_queue

    ids = [task_id for task_id in _published_by_this_test if task_id]
    _published_by_this_test.clear()
    task_queue._coalesced_runs.clear()
    if not broker_url():
        return
    import redis

    from tests.worker_publish_log import take_published

    client = redis.Redis.from_url(broker_url())
    ids += take_published(client)
    from annotation_site.celery import app

    # A revoked task already running would finish during the next test and commit what it
    # computed from the rows the flush left (a worker-flag refresh's scope row, which that test's
    # page then took as fresh).
    for _ in range(REVOKE_ROUNDS):
        if not ids:
            return
        app.control.revoke(ids)
        _wait_until_none_runs(app, set(ids))
        ids = take_published(client)


# How many times a teardown revokes what running tasks published, and how long it waits for them.
REVOKE_ROUNDS = 5
RUNNING_TASK_WAIT_SECONDS = 30.0

# The Celery workers the suite started and has not stopped (start_celery_worker, stop_celery_worker).
_running_workers: list["CeleryWorkerProcess"] = []


def _wait_until_none_runs(app, ids):
    """Until no worker the suite runs is executing one of `ids` (at most RUNNING_TASK_WAIT_SECONDS)."""
    nodes = [process.nodename for process in _running_workers if process.poll() is None]
    if not nodes:
        return
    deadline = time.monotonic() + RUNNING_TASK_WAIT_SECONDS
    while time.monotonic() < deadline:
        asked = app.control.inspect(destination=nodes, timeout=1.0, limit=len(nodes))
        # Taken (reserved) as well as running: a task handed to the pool before its revocation still runs.
        replies = [*(asked.active() or {}).values(), *(asked.reserved() or {}).values()]
        if not {task["id"] for tasks in replies for task in tasks or ()} & ids:
            return
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _no_task_outlives_its_test(request):
    """Revoke what the test left behind (`revoke_tasks_left_behind`) before its database is rolled
    back or flushed: a task still running then would commit what it computed from the emptied
    tables, and the next test would read it. The test's database fixture is set up before this one
    (`_reference_data` asks for it), so this teardown runs before that fixture's."""
    from celery.signals import before_task_publish

    names = set(request.fixturenames)
    marker = request.node.get_closest_marker("django_db")
    transactional = bool({"transactional_db", "live_server"} & names) or bool(
        marker is not None and marker.kwargs.get("transaction")
    )
    _test_rolls_back[0] = not transactional and ("db" in names or marker is not None)
    before_task_publish.connect(_note_published_task, weak=False, dispatch_uid="tests.published_tasks")
    _published_by_this_test.clear()
    yield
    revoke_tasks_left_behind()


def celery_subprocess_env(extra_env=None):
    """The environment of a Celery subprocess on the test database (plus `extra_env`)."""
    return dict(os.environ, DATABASE_URL=subprocess_database_url(), DATABASE_CONN_MAX_AGE="0", **(extra_env or {}))


def subprocess_database_url():
    """The URL of the test database, for a subprocess (a Celery worker, gunicorn) to reach it: on the
    server DATABASE_URL names, or on the embedded cluster's Unix socket (its folder as the host,
    percent-encoded, as dj-database-url reads it)."""
    from urllib.parse import quote

    db = settings.DATABASES["default"]
    user = quote(db.get("USER") or "postgres", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    where = quote(host, safe="") if host.startswith("/") else f"{host}:{db.get('PORT') or 5432}"
    return f"postgres://{user}{password}@{where}/{db['NAME']}"


class CeleryWorkerProcess(subprocess.Popen[bytes]):
    """A Celery worker the suite started (start_celery_worker): its log and node name beside it."""

    log_path: Path
    log: IO[str]
    nodename: str
    data_dir: Path


def start_celery_worker(name, queues, log_path, extra_env=None, concurrency=1, wait=True):
    """Start `celery worker -n NAME@host -Q QUEUES` on the test database; return it once it answers a ping.

    `concurrency`: processes in its prefork pool (a training node's TRAINING_RUNS_PER_NODE).
    `wait=False`: return it at once; `wait_until_answering(process)` waits for its ping (so that
    several workers start side by side).

    The process has `.log_path` and `.nodename` (what tasks see as their hostname).
    """
    import socket

    needs_broker()
    env = celery_subprocess_env(extra_env)
    env["DATA_DIR"] = str(Path((extra_env or {}).get("DATA_DIR") or settings.DATA_DIR))
    celery = shutil.which("celery", path=str(Path(sys.executable).parent)) or "celery"
    log = open(log_path, "w")  # noqa: SIM115 - closed by stop_celery_worker
    nodename = f"{name}@{socket.gethostname()}"
    process = CeleryWorkerProcess(
        [
            celery,
            "-A",
            "annotation_site",
            "worker",
            "-Q",
            queues,
            "--concurrency",
            str(concurrency),
            "--pool",
            "prefork",
            "--prefetch-multiplier",
            "1",
            # Gossip, mingle and event heartbeats tell workers of each other and monitors of them;
            # nothing here reads them (a run's liveness is its own heartbeat row), and mingle's wait
            # for neighbours made a worker answer its first ping in 3.0-3.5 s instead of 2.0 s
            # (under coverage), some 30 times a run.
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "info",
            "-n",
            nodename,
            # Test code in the worker: it notes the tasks the worker publishes, for the teardown.
            "--include",
            "tests.worker_publish_log",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    process.log_path, process.log, process.nodename = log_path, log, nodename
    process.data_dir = Path(env["DATA_DIR"])  # its disk: a test sharing it with the worker sets DATA_DIR to it
    _running_workers.append(process)
    return wait_until_answering(process) if wait else process


def wait_until_answering(process):
    """The worker `process` (start_celery_worker), once it answers a ping; it fails if it exits or stays silent 60 s."""
    from annotation_site.celery import app

    log_path, nodename = process.log_path, process.nodename
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited early; see {log_path}")
        if app.control.ping(destination=[nodename], timeout=1.0):
            return process
    os.killpg(process.pid, signal.SIGTERM)
    raise RuntimeError(f"celery worker did not answer a ping within 60 s; see {log_path}")


def stop_celery_worker(process, sig=signal.SIGTERM, timeout=20, whole_group=True):
    """Signal the worker (its whole process group, or only its main process) and wait for it to end."""
    if process.poll() is None:
        if whole_group:
            os.killpg(process.pid, sig)
        else:
            os.kill(process.pid, sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    process.log.close()
    if process in _running_workers:
        _running_workers.remove(process)


def wait_for(predicate, timeout=60.0, interval=0.25, message="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


# --- S3: a real S3-compatible server process (moto_server) -----------------------------------
# Object storage is tested against a server, never an in-process mock: django-storages and boto3
# speak HTTP to it exactly as they would to AWS S3 or MinIO, and subprocesses (gunicorn, Celery
# workers) reach the same bucket through OBJECT_STORAGE_* variables.

S3_REGION = "us-east-1"
S3_KEY = "testing"  # moto accepts any credentials; boto3 only needs some


class S3Server:
    """A running moto_server: its endpoint, and buckets made on it."""

    def __init__(self, process: subprocess.Popen[bytes], endpoint_url: str) -> None:
        self.process = process
        self.endpoint_url = endpoint_url

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=S3_REGION,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_KEY,
        )

    def new_bucket(self) -> str:
        import uuid

        name = f"test-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def environment(self, bucket: str) -> dict[str, str]:
        """The OBJECT_STORAGE_* variables that point a subprocess's settings at `bucket` on this server."""
        return {
            "OBJECT_STORAGE_BUCKET": bucket,
            "OBJECT_STORAGE_ENDPOINT_URL": self.endpoint_url,
            "OBJECT_STORAGE_REGION": S3_REGION,
            "OBJECT_STORAGE_ACCESS_KEY": S3_KEY,
            "OBJECT_STORAGE_SECRET_KEY": S3_KEY,
        }


def start_s3_server(log_path: Path) -> S3Server:
    """Start `moto_server` on a free 127.0.0.1 port and return it once it answers."""
    import socket
    import urllib.request

    require_package("moto", "pip install -r requirements-dev.txt (moto[server])")
    executable = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(log_path, "w")  # noqa: SIM115 - the server's output while it lives
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    process = subprocess.Popen(
        [executable, "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited at start; see {log_path}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                return S3Server(process, endpoint)
        except OSError:
            time.sleep(0.2)
    os.killpg(process.pid, signal.SIGTERM)
    raise RuntimeError(f"moto_server did not answer within 60 s; see {log_path}")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """One moto_server process for the session; tests take their own bucket (`s3_storage`)."""
    server = start_s3_server(tmp_path_factory.mktemp("s3") / "moto_server.log")
    yield server
    os.killpg(server.process.pid, signal.SIGTERM)
    server.process.wait(timeout=20)


@pytest.fixture
def s3_storage(s3_server, settings):
    """This test's settings point every file kind at a fresh bucket on the S3 server, as
    OBJECT_STORAGE_BUCKET does in production; yields the bucket's OBJECT_STORAGE_* variables
    (for subprocesses) with `.server` and `.bucket`."""
    from base.file_storage import object_storage_aliases

    bucket = s3_server.new_bucket()
    env = s3_server.environment(bucket)
    settings.OBJECT_STORAGE_BUCKET = bucket
    # Django's setting_changed receiver empties `storages`' cache of backends on this assignment
    # and again when the fixture restores STORAGES, so no test sees another's bucket.
    settings.STORAGES = {
        **settings.STORAGES,
        **object_storage_aliases(
            bucket,
            endpoint_url=s3_server.endpoint_url,
            region=S3_REGION,
            access_key=S3_KEY,
            secret_key=S3_KEY,
        ),
    }
    yield S3Bucket(env, server=s3_server, bucket=bucket)


class S3Bucket(dict[str, str]):
    """A test's bucket: its OBJECT_STORAGE_* variables, and the server and name."""

    def __init__(self, env: dict[str, str], *, server: S3Server, bucket: str) -> None:
        super().__init__(env)
        self.server = server
        self.bucket = bucket

    def keys_under(self, prefix: str) -> list[str]:
        """The keys in the bucket that start with `prefix` (e.g. "snapshots/12/"), sorted."""
        pages = self.server.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


# --- skip accounting for CI ------------------------------------------------------------------
# With NLI_SKIP_REPORT=<path>, the session writes every skipped test (its markers and reason) and
# the outcome counts to that JSON file; .ci/check_skips.py reads it and fails a pass on a skip
# that pass must not have. Counting here, not by parsing pytest's output, keeps it exact.

_outcomes = {"passed": 0, "failed": 0, "skipped": 0, "error": 0, "xfailed": 0, "xpassed": 0}
_skipped: list[dict] = []
_xfail: dict[str, list[dict[str, str]]] = {"xfailed": [], "xpassed": []}
# nodeid -> the suite's markers on that test (from collection, never from its name)
_markers_of: dict[str, list[str]] = {}
# test process ("gw0", ... or "main") -> the test files it ran, in order; and each failure's process.
# A test that fails only after others in its process (a leak between tests) is found from these.
_files_of_process: dict[str, list[str]] = {}
_failed: list[dict[str, str]] = []


def _process_of(report) -> str:
    gateway = getattr(getattr(report, "node", None), "gateway", None)  # set by pytest-xdist's controller
    return getattr(gateway, "id", None) or os.environ.get("PYTEST_XDIST_WORKER") or "main"


_seconds_of_file: dict[str, float] = {}


def pytest_runtest_logreport(report):
    test_file = report.nodeid.split("::", 1)[0]
    _seconds_of_file[test_file] = _seconds_of_file.get(test_file, 0.0) + report.duration
    if report.when == "setup":
        files = _files_of_process.setdefault(_process_of(report), [])
        if not files or files[-1] != test_file:
            files.append(test_file)
    if report.failed:
        _failed.append({"nodeid": report.nodeid, "when": report.when, "process": _process_of(report)})
    if hasattr(report, "wasxfail") and (report.skipped or (report.passed and report.when == "call")):
        # An expected failure hides a broken test as well as a skip does: CI lists both outcomes.
        outcome = "xfailed" if report.skipped else "xpassed"
        _outcomes[outcome] += 1
        _xfail[outcome].append({"nodeid": report.nodeid, "reason": report.wasxfail, "when": report.when})
    elif report.skipped:
        _outcomes["skipped"] += 1
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        # Under pytest-xdist this process did not collect: the worker's report carries the keywords.
        markers = _markers_of.get(report.nodeid) or sorted(set(report.keywords) & {"browser", "celery_worker", "slow"})
        _skipped.append({"nodeid": report.nodeid, "markers": markers, "reason": reason, "when": report.when})
    elif report.failed:
        _outcomes["failed" if report.when == "call" else "error"] += 1
    elif report.passed and report.when == "call":
        _outcomes["passed"] += 1


def pytest_sessionfinish(session, exitstatus):
    import json

    from tests.mutant_sessions import end_session, under_mutmut

    if under_mutmut() and not hasattr(session.config, "workerinput"):
        end_session(session.config.rootpath, int(exitstatus))

    recorded = os.environ.get("NLI_RECORD_DURATIONS")
    if recorded and not hasattr(session.config, "workerinput"):
        # The files this run ran replace their old figures; the others keep theirs (a partial run).
        known = json.loads(Path(recorded).read_text(encoding="utf-8")) if Path(recorded).exists() else {}
        # (A pytest run that a test starts in a folder of its own inherits the variable: not ours.)
        known.update({name: round(value, 1) for name, value in _seconds_of_file.items() if name.startswith("tests/")})
        Path(recorded).write_text(json.dumps(dict(sorted(known.items())), indent=0) + "\n", encoding="utf-8")
    path = os.environ.get("NLI_SKIP_REPORT")
    if not path or hasattr(session.config, "workerinput"):
        # Under pytest-xdist the controller writes it: every test process's reports reach its hooks.
        return

    report = {
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "broker": bool(broker_url()),
        "ci": in_ci(),
        "exitstatus": int(exitstatus),
        "collected": session.testscollected,
        "outcomes": dict(_outcomes),
        "skipped": _skipped,
        "xfailed": _xfail["xfailed"],
        "xpassed": _xfail["xpassed"],
        "failed": _failed,
        "files_of_process": _files_of_process,
    }
    Path(path).write_text(json.dumps(report, indent=2) + "\n")
