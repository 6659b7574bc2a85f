"""A dataset's premises with a split, counted per genre × import file (`collection.models.PremiseGroup`),
kept by triggers on the premises as the claim order is (0017): per statement from its transition table
when premises are added or removed, per row only when a premise's dataset, genre, file or having a
split changes. Counts are moved in key order, so two statements moving the same groups lock them in
the same order. A removal only lowers counts (a dataset's deletion may have removed its groups first)."""

import django.db.models.deletion
from django.db import migrations, models

KEY = "dataset_id, genre_id, source"

CREATE = f"""
INSERT INTO collection_premisegroup ({KEY}, premises)
    SELECT {KEY}, COUNT(*) FROM collection_premise WHERE split <> '' GROUP BY {KEY};

CREATE FUNCTION premise_groups_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO collection_premisegroup AS g ({KEY}, premises)
        SELECT {KEY}, COUNT(*) FROM added_premises WHERE split <> '' GROUP BY {KEY} ORDER BY {KEY}
        ON CONFLICT ({KEY}) DO UPDATE SET premises = g.premises + EXCLUDED.premises;
    RETURN NULL;
END $$;
CREATE TRIGGER premise_groups_added AFTER INSERT ON collection_premise
    REFERENCING NEW TABLE AS added_premises FOR EACH STATEMENT EXECUTE FUNCTION premise_groups_added();

CREATE FUNCTION premise_groups_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM collection_premisegroup g
        WHERE ({KEY}) IN (SELECT {KEY} FROM removed_premises WHERE split <> '') ORDER BY {KEY} FOR UPDATE;
    UPDATE collection_premisegroup g SET premises = g.premises - r.n
        FROM (SELECT {KEY}, COUNT(*) AS n FROM removed_premises WHERE split <> '' GROUP BY {KEY}) r
        WHERE g.dataset_id = r.dataset_id AND g.genre_id = r.genre_id AND g.source = r.source;
    DELETE FROM collection_premisegroup g
        WHERE g.premises <= 0 AND ({KEY}) IN (SELECT {KEY} FROM removed_premises WHERE split <> '');
    RETURN NULL;
END $$;
CREATE TRIGGER premise_groups_removed AFTER DELETE ON collection_premise
    REFERENCING OLD TABLE AS removed_premises FOR EACH STATEMENT EXECUTE FUNCTION premise_groups_removed();

CREATE FUNCTION premise_groups_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.split <> '' THEN
        UPDATE collection_premisegroup SET premises = premises - 1
            WHERE dataset_id = OLD.dataset_id AND genre_id = OLD.genre_id AND source = OLD.source;
        DELETE FROM collection_premisegroup
            WHERE dataset_id = OLD.dataset_id AND genre_id = OLD.genre_id AND source = OLD.source AND premises <= 0;
    END IF;
    IF NEW.split <> '' THEN
        INSERT INTO collection_premisegroup AS g ({KEY}, premises) VALUES (NEW.dataset_id, NEW.genre_id, NEW.source, 1)
            ON CONFLICT ({KEY}) DO UPDATE SET premises = g.premises + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER premise_groups_changed
    AFTER UPDATE OF dataset_id, genre_id, source, split ON collection_premise FOR EACH ROW
    WHEN (OLD.dataset_id IS DISTINCT FROM NEW.dataset_id OR OLD.genre_id IS DISTINCT FROM NEW.genre_id
          OR OLD.source IS DISTINCT FROM NEW.source OR (OLD.split <> '') IS DISTINCT FROM (NEW.split <> ''))
    EXECUTE FUNCTION premise_groups_changed();

CREATE FUNCTION premise_groups_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE collection_premisegroup;
    RETURN NULL;
END $$;
CREATE TRIGGER premise_groups_emptied AFTER TRUNCATE ON collection_premise
    FOR EACH STATEMENT EXECUTE FUNCTION premise_groups_emptied();
"""

DROP = """
DROP TRIGGER IF EXISTS premise_groups_added ON collection_premise;
DROP TRIGGER IF EXISTS premise_groups_removed ON collection_premise;
DROP TRIGGER IF EXISTS premise_groups_changed ON collection_premise;
DROP TRIGGER IF EXISTS premise_groups_emptied ON collection_premise;
DROP FUNCTION IF EXISTS premise_groups_added();
DROP FUNCTION IF EXISTS premise_groups_removed();
DROP FUNCTION IF EXISTS premise_groups_changed();
DROP FUNCTION IF EXISTS premise_groups_emptied();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0017_premise_claim_order_table"),
        ("corpus", "0038_pair_counted_labels"),
    ]

    operations = [
        migrations.CreateModel(
            name="PremiseGroup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source", models.CharField(blank=True, max_length=255)),
                ("premises", models.BigIntegerField(default=0)),
                (
                    "dataset",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="corpus.dataset",
                    ),
                ),
                (
                    "genre",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.genre"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("dataset", "genre", "source"), name="one_premise_group_per_genre_and_file"
                    )
                ],
            },
        ),
        migrations.RunSQL(CREATE, DROP),
    ]
