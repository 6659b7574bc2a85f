"""The pairs' search text in a table of its own, with the trigram indexes (PostgreSQL only).

Every counter move (a validator's label, `recompute_gold`'s fix) writes a new version of the pair
row, and since label_count is indexed (the claim queues order by it) no such update is HOT: each
version takes an entry in every index of the pair table. The two trigram GIN indexes on the
hypothesis and the pairID were the dearest of them (each row ~50 trigrams), about 40 % of the fix of
every pair at 433k pairs (18.0 s with them, 10.8 s without). Their text never changes when counters
move, so it lives in `collection_pair_search` (pair pk, hypothesis, pairID), kept by triggers on the
pair table: inserted rows (per statement, from the transition table, so a bulk insert or COPY costs
one INSERT ... SELECT), an edited hypothesis or pairID (per row, only when either changed; a counter
UPDATE names neither column and fires nothing), deleted rows and TRUNCATE. The admin's search reads
it (corpus.admin_pairs.PAIR_SEARCH_SQL). SQLite has no trigram indexes and searches the pairs themselves.

The same migration narrows two indexes that every counter move also writes to, to the rows some
query reads: the validation queue (only pairs marked for validation are ever looked up by it) and
the author's (an imported pair has no author; written pairs are looked up by author).
"""

from django.db import migrations, models
from django.db.models import Q

CREATE = """
CREATE TABLE collection_pair_search (
    pair_pk bigint PRIMARY KEY,
    hypothesis text NOT NULL,
    pair_id varchar(64) NOT NULL
);
INSERT INTO collection_pair_search (pair_pk, hypothesis, pair_id)
    SELECT id, hypothesis, pair_id FROM collection_pair;
CREATE INDEX pair_search_hypothesis_trgm ON collection_pair_search USING gin (upper(hypothesis) gin_trgm_ops);
CREATE INDEX pair_search_pair_id_trgm ON collection_pair_search USING gin (upper(pair_id) gin_trgm_ops);
DROP INDEX IF EXISTS pair_hypothesis_trgm;
DROP INDEX IF EXISTS pair_pair_id_trgm;

CREATE FUNCTION pair_search_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO collection_pair_search (pair_pk, hypothesis, pair_id)
        SELECT id, hypothesis, pair_id FROM added_pairs;
    RETURN NULL;
END $$;
CREATE TRIGGER pair_search_added AFTER INSERT ON collection_pair
    REFERENCING NEW TABLE AS added_pairs FOR EACH STATEMENT EXECUTE FUNCTION pair_search_added();

CREATE FUNCTION pair_search_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collection_pair_search SET hypothesis = NEW.hypothesis, pair_id = NEW.pair_id
        WHERE pair_pk = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER pair_search_edited AFTER UPDATE OF hypothesis, pair_id ON collection_pair FOR EACH ROW
    WHEN (OLD.hypothesis IS DISTINCT FROM NEW.hypothesis OR OLD.pair_id IS DISTINCT FROM NEW.pair_id)
    EXECUTE FUNCTION pair_search_edited();

CREATE FUNCTION pair_search_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM collection_pair_search WHERE pair_pk IN (SELECT id FROM removed_pairs);
    RETURN NULL;
END $$;
CREATE TRIGGER pair_search_removed AFTER DELETE ON collection_pair
    REFERENCING OLD TABLE AS removed_pairs FOR EACH STATEMENT EXECUTE FUNCTION pair_search_removed();

CREATE FUNCTION pair_search_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE collection_pair_search;
    RETURN NULL;
END $$;
CREATE TRIGGER pair_search_emptied AFTER TRUNCATE ON collection_pair
    FOR EACH STATEMENT EXECUTE FUNCTION pair_search_emptied();
"""

DROP = """
DROP TRIGGER IF EXISTS pair_search_added ON collection_pair;
DROP TRIGGER IF EXISTS pair_search_edited ON collection_pair;
DROP TRIGGER IF EXISTS pair_search_removed ON collection_pair;
DROP TRIGGER IF EXISTS pair_search_emptied ON collection_pair;
DROP FUNCTION IF EXISTS pair_search_added();
DROP FUNCTION IF EXISTS pair_search_edited();
DROP FUNCTION IF EXISTS pair_search_removed();
DROP FUNCTION IF EXISTS pair_search_emptied();
DROP TABLE IF EXISTS collection_pair_search;
CREATE INDEX IF NOT EXISTS pair_hypothesis_trgm ON collection_pair USING gin (upper(hypothesis) gin_trgm_ops);
CREATE INDEX IF NOT EXISTS pair_pair_id_trgm ON collection_pair USING gin (upper(pair_id) gin_trgm_ops);
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0017_word_tally"),
    ]

    operations = [
        migrations.RunPython(create, drop),
        migrations.RemoveIndex(model_name="pair", name="pair_validation_queue"),
        migrations.AddIndex(
            model_name="pair",
            index=models.Index(
                fields=["label_count"], condition=Q(needs_validation=True), name="pair_validation_queue"
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="author",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=models.deletion.SET_NULL,
                related_name="pairs",
                to="corpus.worker",
            ),
        ),
        migrations.AddIndex(
            model_name="pair",
            index=models.Index(fields=["author"], condition=Q(author__isnull=False), name="pair_author"),
        ),
    ]
