"""Each pair's counted labels in their export slots, in a table of their own kept by triggers on the
label table (PostgreSQL only).

The export's lines need, per pair, the earliest five labels that count (`corpus.selectors.
labels_that_count`), each in its TSV slot (`modeling.snapshots.selectors.counted_label_slots`: its
position; in order where a replacement beyond position 5 is among them). Read from the label table,
they are a subquery per pair, which PostgreSQL 15 will not run in a parallel worker; read from this
table, they are a join the parallel workers make beside the pair's own text.

`collection_pair_counted_labels` (pair pk, the five slots' stored labels and ratings, NULL where a
slot is blank) holds a row for every pair with a label that counts. Every statement that inserts,
updates or deletes labels recounts the pairs it touched (`pair_counted_labels_recount`, from the
transition tables: a bulk insert or COPY costs one statement more); TRUNCATE empties it. The recount
reads the labels with a snapshot of its own, taken under the pairs' row locks that every writer of a
pair's labels holds first (`crowd.services.LOCK_ORDER`), so it sees every label committed before.
"""

from django.db import migrations

LABELS = "validation_validationlabel"
TABLE = "collection_pair_counted_labels"
SLOTS = range(1, 6)

RECOUNT = f"""
CREATE FUNCTION pair_counted_labels_recount(pair_pks bigint[]) RETURNS void LANGUAGE sql AS $$
    WITH earliest AS (
        SELECT pair_id, position, label, ordinal,
               row_number() OVER (PARTITION BY pair_id ORDER BY position) AS n
        FROM {LABELS}
        WHERE pair_id = ANY(pair_pks) AND NOT excluded AND awaiting_market_session IS NULL
    ), slotted AS (
        SELECT pair_id, label, ordinal,
               CASE WHEN bool_or(position > 5) OVER (PARTITION BY pair_id) THEN n ELSE position END AS slot
        FROM earliest WHERE n <= 5
    )
    INSERT INTO {TABLE} (pair_pk, slot_labels, slot_ratings)
    SELECT pair_id,
           ARRAY[{", ".join(f"max(label::text) FILTER (WHERE slot = {slot})" for slot in SLOTS)}],
           ARRAY[{", ".join(f"max(ordinal) FILTER (WHERE slot = {slot})" for slot in SLOTS)}]::smallint[]
    FROM slotted GROUP BY pair_id ORDER BY pair_id
    ON CONFLICT (pair_pk) DO UPDATE SET slot_labels = EXCLUDED.slot_labels, slot_ratings = EXCLUDED.slot_ratings
        WHERE ({TABLE}.slot_labels, {TABLE}.slot_ratings)
            IS DISTINCT FROM (EXCLUDED.slot_labels, EXCLUDED.slot_ratings);
    DELETE FROM {TABLE} AS counted WHERE counted.pair_pk = ANY(pair_pks) AND NOT EXISTS (
        SELECT 1 FROM {LABELS} AS l
        WHERE l.pair_id = counted.pair_pk AND NOT l.excluded AND l.awaiting_market_session IS NULL
    );
$$;
"""

# Every pair with a label, recounted (the migration's fill).
FILL = f"SELECT pair_counted_labels_recount(ARRAY(SELECT DISTINCT pair_id FROM {LABELS}))"

CREATE = f"""
CREATE TABLE {TABLE} (
    pair_pk bigint PRIMARY KEY,
    slot_labels text[] NOT NULL,
    slot_ratings smallint[] NOT NULL
);
{RECOUNT}

CREATE FUNCTION pair_counted_labels_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pair_counted_labels_recount(ARRAY(SELECT DISTINCT pair_id FROM added_labels));
    RETURN NULL;
END $$;
CREATE TRIGGER pair_counted_labels_added AFTER INSERT ON {LABELS}
    REFERENCING NEW TABLE AS added_labels FOR EACH STATEMENT EXECUTE FUNCTION pair_counted_labels_added();

-- Only the rows whose counting changed: an update of a label's seconds recounts nothing.
CREATE FUNCTION pair_counted_labels_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pair_counted_labels_recount(ARRAY(
        SELECT DISTINCT pair FROM edited_before AS was JOIN edited_after AS now ON now.id = was.id
        CROSS JOIN LATERAL (VALUES (was.pair_id), (now.pair_id)) AS touched (pair)
        WHERE (was.pair_id, was.position, was.label, was.ordinal, was.excluded, was.awaiting_market_session)
            IS DISTINCT FROM (now.pair_id, now.position, now.label, now.ordinal, now.excluded, now.awaiting_market_session)
    ));
    RETURN NULL;
END $$;
CREATE TRIGGER pair_counted_labels_edited AFTER UPDATE ON {LABELS}
    REFERENCING OLD TABLE AS edited_before NEW TABLE AS edited_after
    FOR EACH STATEMENT EXECUTE FUNCTION pair_counted_labels_edited();

CREATE FUNCTION pair_counted_labels_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pair_counted_labels_recount(ARRAY(SELECT DISTINCT pair_id FROM removed_labels));
    RETURN NULL;
END $$;
CREATE TRIGGER pair_counted_labels_removed AFTER DELETE ON {LABELS}
    REFERENCING OLD TABLE AS removed_labels FOR EACH STATEMENT EXECUTE FUNCTION pair_counted_labels_removed();

CREATE FUNCTION pair_counted_labels_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE {TABLE};
    RETURN NULL;
END $$;
CREATE TRIGGER pair_counted_labels_emptied AFTER TRUNCATE ON {LABELS}
    FOR EACH STATEMENT EXECUTE FUNCTION pair_counted_labels_emptied();

-- Filled last: the triggers' lock on the label table, held to the migration's commit, keeps every
-- label written meanwhile waiting, so none is written between the fill's read and the triggers.
{FILL};
"""

DROP = f"""
DROP TRIGGER IF EXISTS pair_counted_labels_added ON {LABELS};
DROP TRIGGER IF EXISTS pair_counted_labels_edited ON {LABELS};
DROP TRIGGER IF EXISTS pair_counted_labels_removed ON {LABELS};
DROP TRIGGER IF EXISTS pair_counted_labels_emptied ON {LABELS};
DROP FUNCTION IF EXISTS pair_counted_labels_added();
DROP FUNCTION IF EXISTS pair_counted_labels_edited();
DROP FUNCTION IF EXISTS pair_counted_labels_removed();
DROP FUNCTION IF EXISTS pair_counted_labels_emptied();
DROP FUNCTION IF EXISTS pair_counted_labels_recount(bigint[]);
DROP TABLE IF EXISTS {TABLE};
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0037_counted_label_words"),
    ]

    operations = [
        migrations.RunPython(create, drop),
    ]
