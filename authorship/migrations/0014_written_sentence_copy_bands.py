# The copy check finds its candidates by MinHash bands of each sentence's trigrams, not by the
# trigram index: on real English at 430k sentences every lookup of `%` read some 580,000 postings
# (bench/copy_check.py). `copy_bands(text)` is the sentence's pg_trgm trigram set (show_trgm, the
# set similarity() compares) summarised as BANDS band hashes of HASHES_PER_BAND minimum hashes each;
# two sentences share a band with probability 1 - (1 - s^HASHES_PER_BAND)^BANDS at trigram
# similarity s (99.9% at 0.85), and each candidate's similarity is checked exactly. The function
# names its schemas, so an index on it restores under any search_path; its cost (about 1 ms a
# sentence) is declared, so the planner does not compute it for every row of a scan. Building the
# index reads every written sentence once.

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

BANDS = 15
HASHES_PER_BAND = 6
OLD_TRIGRAM_INDEX = "written_sentence_normalised_trgm"


def create_copy_bands(apps, schema_editor):
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'")
        (trgm_schema,) = cursor.fetchone()
    hashes = BANDS * HASHES_PER_BAND
    schema_editor.execute(
        "CREATE OR REPLACE FUNCTION copy_bands(text) RETURNS integer[]"
        " LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 5000 AS $$"
        " SELECT pg_catalog.array_agg(pg_catalog.hashtext(band::text || ':' || mins) ORDER BY band) FROM ("
        f"  SELECT seed / {HASHES_PER_BAND} AS band, pg_catalog.string_agg(low::text, ',' ORDER BY seed) AS mins"
        "   FROM (SELECT seed, pg_catalog.min(pg_catalog.hashtext(seed::text || trigram)) AS low"
        f"    FROM pg_catalog.generate_series(0, {hashes - 1}) AS seed,"
        f"         pg_catalog.unnest({trgm_schema}.show_trgm($1)) AS trigram"
        "    GROUP BY seed) AS per_hash"
        f"  GROUP BY seed / {HASHES_PER_BAND}) AS per_band"
        " $$"
    )


def drop_copy_bands(apps, schema_editor):
    schema_editor.execute("DROP FUNCTION IF EXISTS copy_bands(text)")


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0013_written_sentence_pending_lists"),
    ]

    operations = [
        migrations.RunPython(create_copy_bands, drop_copy_bands),
        migrations.AddIndex(
            model_name="writtensentence",
            index=django.contrib.postgres.indexes.GinIndex(
                models.Func(
                    models.F("normalised"),
                    function="copy_bands",
                    output_field=django.contrib.postgres.fields.ArrayField(base_field=models.IntegerField()),
                ),
                gin_pending_list_limit=64,
                name="written_sentence_copy_bands",
            ),
        ),
        migrations.RunSQL(
            f"DROP INDEX IF EXISTS {OLD_TRIGRAM_INDEX}",
            f"CREATE INDEX IF NOT EXISTS {OLD_TRIGRAM_INDEX} ON authorship_writtensentence"
            " USING gin (normalised gin_trgm_ops) WITH (gin_pending_list_limit = 64)",
        ),
    ]
