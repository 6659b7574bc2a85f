"""The writing claim's order in a narrow table of its own (PostgreSQL), kept by triggers on the premises.

A writing claim moves its premise's `claims_made`, a key of the claim-order indexes, so no claim's
update was HOT: each wrote a new version of the whole premise row (text, parses) and an entry in
every one of the premise table's fifteen indexes, trigram GIN indexes included, and the claim's
commit flushed that (about 24 KB of WAL, full-page images, against 54 bytes for a one-row lock).

`collection_premise_claim_order` holds one row a premise: what the claim walks and orders by
(dataset, genre, whether it is claimable: available with a split, writings done, claims made) and
nothing else, under its two walk indexes. A claim locks and updates this row and never writes the
premise. The premise stays the record of everything else: triggers copy its dataset, genre, status,
split and writings done here when a statement inserts premises (per statement, from the transition
table, so a COPY or bulk insert costs one INSERT ... SELECT), when one of those columns changes (per
row, only then), on deletion and on TRUNCATE. `claims_made` lives here only.
"""

from django.db import migrations

CREATE = """
CREATE TABLE collection_premise_claim_order (
    premise_id bigint PRIMARY KEY,
    dataset_id bigint NOT NULL,
    genre_id bigint NOT NULL,
    claimable boolean NOT NULL,
    writings_done integer NOT NULL,
    claims_made integer NOT NULL DEFAULT 0
);
INSERT INTO collection_premise_claim_order (premise_id, dataset_id, genre_id, claimable, writings_done, claims_made)
    SELECT id, dataset_id, genre_id, status = 'available' AND split <> '', writings_done, claims_made
    FROM collection_premise;
CREATE INDEX premise_claim_order_walk ON collection_premise_claim_order
    (dataset_id, writings_done, claims_made, premise_id) WHERE claimable;
CREATE INDEX premise_genre_claim_order_walk ON collection_premise_claim_order
    (dataset_id, genre_id, writings_done, claims_made, premise_id) WHERE claimable;
DROP INDEX IF EXISTS premise_genre_claim_order;

CREATE FUNCTION premise_claim_order_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO collection_premise_claim_order (premise_id, dataset_id, genre_id, claimable, writings_done)
        SELECT id, dataset_id, genre_id, status = 'available' AND split <> '', writings_done FROM added_premises;
    RETURN NULL;
END $$;
CREATE TRIGGER premise_claim_order_added AFTER INSERT ON collection_premise
    REFERENCING NEW TABLE AS added_premises FOR EACH STATEMENT EXECUTE FUNCTION premise_claim_order_added();

CREATE FUNCTION premise_claim_order_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collection_premise_claim_order SET dataset_id = NEW.dataset_id, genre_id = NEW.genre_id,
        claimable = NEW.status = 'available' AND NEW.split <> '', writings_done = NEW.writings_done
        WHERE premise_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER premise_claim_order_changed
    AFTER UPDATE OF dataset_id, genre_id, status, split, writings_done ON collection_premise FOR EACH ROW
    WHEN (OLD.dataset_id IS DISTINCT FROM NEW.dataset_id OR OLD.genre_id IS DISTINCT FROM NEW.genre_id
          OR OLD.status IS DISTINCT FROM NEW.status OR OLD.split IS DISTINCT FROM NEW.split
          OR OLD.writings_done IS DISTINCT FROM NEW.writings_done)
    EXECUTE FUNCTION premise_claim_order_changed();

CREATE FUNCTION premise_claim_order_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM collection_premise_claim_order WHERE premise_id IN (SELECT id FROM removed_premises);
    RETURN NULL;
END $$;
CREATE TRIGGER premise_claim_order_removed AFTER DELETE ON collection_premise
    REFERENCING OLD TABLE AS removed_premises FOR EACH STATEMENT EXECUTE FUNCTION premise_claim_order_removed();

CREATE FUNCTION premise_claim_order_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE collection_premise_claim_order;
    RETURN NULL;
END $$;
CREATE TRIGGER premise_claim_order_emptied AFTER TRUNCATE ON collection_premise
    FOR EACH STATEMENT EXECUTE FUNCTION premise_claim_order_emptied();
"""

DROP = """
DROP TRIGGER IF EXISTS premise_claim_order_added ON collection_premise;
DROP TRIGGER IF EXISTS premise_claim_order_changed ON collection_premise;
DROP TRIGGER IF EXISTS premise_claim_order_removed ON collection_premise;
DROP TRIGGER IF EXISTS premise_claim_order_emptied ON collection_premise;
DROP FUNCTION IF EXISTS premise_claim_order_added();
DROP FUNCTION IF EXISTS premise_claim_order_changed();
DROP FUNCTION IF EXISTS premise_claim_order_removed();
DROP FUNCTION IF EXISTS premise_claim_order_emptied();
UPDATE collection_premise p SET claims_made = o.claims_made
    FROM collection_premise_claim_order o WHERE o.premise_id = p.id AND o.claims_made <> 0;
DROP TABLE IF EXISTS collection_premise_claim_order;
CREATE INDEX IF NOT EXISTS premise_genre_claim_order ON collection_premise
    (dataset_id, genre_id, writings_done, claims_made, id) WHERE status = 'available' AND NOT (split = '');
"""


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0016_study_served_counts"),
        ("corpus", "0034_pair_gold_ne_author"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]
