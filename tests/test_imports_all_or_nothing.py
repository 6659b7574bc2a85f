"""Imports are all or nothing: a run that fails unexpectedly after some chunks were written keeps
none of them and is marked failed with the reason.

The failure is real, not a mock: a trigger in the database refuses one row deep in the file (as a
constraint would), so the INSERT of a late chunk raises a database error after earlier chunks
went through. transactional_db: the import's transaction is a real one, not a savepoint inside
the test's, and the triggers are dropped afterwards.
"""

import json

import pytest
from django.db import DatabaseError, connection

from collection.models import PremiseImport
from collection.premise_import import import_premises
from corpus.models import ImportStatus, Pair, Premise, ValidationLabel
from importers.models import CorpusImport
from importers.services import import_pairs_file
from tests.collection.test_premise_import import make_genre
from tests.importers.helpers import C, E, N, ensure_genres, snli_record, write_jsonl

POISON = "The refused sentence that the database will not take."


@pytest.fixture
def refuse_in_database(transactional_db):
    """refuse(model, column): the database raises on INSERT of a row whose column is POISON."""
    made = []

    def refuse(model, column):
        table = model._meta.db_table
        name = f"refuse_{table}"
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.{column} = '{POISON}' THEN RAISE EXCEPTION 'refused by the database'; END IF; "
                f"RETURN NEW; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(f"CREATE TRIGGER {name} BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()")
        made.append(name)

    yield refuse
    with connection.cursor() as cursor:
        for name in made:
            table = name.removeprefix("refuse_")
            cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            cursor.execute(f"DROP FUNCTION IF EXISTS {name}()")


def test_a_pairs_import_that_fails_in_a_late_chunk_keeps_nothing_and_says_why(tmp_path, refuse_in_database):
    ensure_genres("captions")
    refuse_in_database(Pair, "hypothesis")
    records = [
        snli_record(
            f"p{i}",
            [E, N, C, E, E],
            caption=f"{i}.jpg#0",
            premise=f"Premise number {i} of the file.",
            hypothesis=f"Hypothesis number {i}.",
        )
        for i in range(900)
    ]
    records[760]["sentence2"] = POISON  # line 761: chunks 1-7 of 100 were written before it
    path = write_jsonl(tmp_path / "poisoned_dev.jsonl", records)
    with pytest.raises(DatabaseError, match="refused by the database"):
        import_pairs_file(path, "snli-poisoned", chunk_size=100)
    assert (Pair.objects.count(), Premise.objects.count(), ValidationLabel.objects.count()) == (0, 0, 0)
    run = CorpusImport.objects.get()
    assert run.status == ImportStatus.FAILED and run.finished_at is not None
    assert "refused by the database" in run.error and "rolled back" in run.error
    assert run.pairs_created == 0 and run.lines_read >= 761  # it got that far, and kept nothing

    # The same file without the bad row imports whole: the failure, not the file, was the problem.
    records[760]["sentence2"] = "Hypothesis number 760."
    report = import_pairs_file(write_jsonl(tmp_path / "fixed_dev.jsonl", records), "snli-poisoned", chunk_size=100)
    assert report.pairs_created == Pair.objects.count() == 900


def test_a_premise_import_that_fails_in_a_late_batch_keeps_nothing_and_says_why(tmp_path, refuse_in_database):
    make_genre("fiction", True)
    refuse_in_database(Premise, "text")
    sentences = [f"The courier number {n} crossed the long bridge before the bells rang at noon." for n in range(300)]
    sentences[250] = POISON
    path = tmp_path / "poisoned.jsonl"
    path.write_text("".join(json.dumps({"text": s}) + "\n" for s in sentences), encoding="utf-8")
    progress = []

    with pytest.raises(DatabaseError, match="refused by the database"):
        import_premises([path], "fiction", batch_size=40, on_batch=lambda report: progress.append(report.kept))
    assert progress[:6] == [40, 80, 120, 160, 200, 240]  # batches went through before the failure...
    assert Premise.objects.count() == 0  # ...and none of them stayed
    run = PremiseImport.objects.get()
    assert run.status == ImportStatus.FAILED and run.kept == 0 and run.finished_at is not None
    assert "refused by the database" in run.error and "rolled back" in run.error


def test_a_running_import_shows_its_progress_but_not_its_rows_to_other_connections(tmp_path, transactional_db):
    """What the admin sees while an import runs: the progress figures move batch by batch, and
    none of the premises exist yet for anyone else (they commit with the run)."""
    import copy

    from django.db.utils import load_backend

    make_genre("fiction", True)
    path = tmp_path / "many.jsonl"
    path.write_text(
        "".join(
            json.dumps({"text": f"The courier number {n} crossed the long bridge at noon."}) + "\n" for n in range(200)
        ),
        encoding="utf-8",
    )
    seen = []

    def look_from_another_connection(report):
        other = load_backend(connection.settings_dict["ENGINE"]).DatabaseWrapper(
            copy.deepcopy(connection.settings_dict), alias="observer"
        )
        try:
            with other.cursor() as cursor:
                cursor.execute(f"SELECT kept FROM {PremiseImport._meta.db_table}")
                kept = cursor.fetchone()[0]
                cursor.execute(f"SELECT count(*) FROM {Premise._meta.db_table}")
                seen.append((kept, cursor.fetchone()[0]))
        finally:
            other.close()

    import_premises([path], "fiction", batch_size=50, on_batch=look_from_another_connection)
    assert seen[:4] == [(50, 0), (100, 0), (150, 0), (200, 0)]
    assert Premise.objects.count() == 200 and PremiseImport.objects.get().status == ImportStatus.DONE
