from django.db import migrations

# The kinds of the holds written before there were records, told by the words their reasons began
# with (each app's own): anything else is "other".
KIND_OF_WORDS = [
    ("Not vouched for by the market", "unvouched"),
    ("Deferred to a second batch", "deferred"),
    ("Labels at chance so far", "guesser"),
    ("Labels probably below", "guesser"),
    ("Labels not yet shown", "guesser"),
    ("Labels agree with other ids", "correlated"),
    ("Same browser as participant", "shared_browser"),
    ("Sentences not typed by the writer", "typist"),
    ("Sentences that do not read as English", "word_salad"),
]


def _kind_case() -> str:
    whens = " ".join(f"WHEN starts_with(code_held_reason, '{words}') THEN '{kind}'" for words, kind in KIND_OF_WORDS)
    return f"CASE {whens} ELSE 'other' END"


FORWARD = f"""
INSERT INTO crowd_codehold (session_id, kind, text, found_at, decision, decided_at, decided_by_id)
SELECT id, {_kind_case()}, code_held_reason, COALESCE(completed_at, started_at),
       code_hold_decision, code_hold_decided_at, code_hold_decided_by_id
FROM collection_studysession WHERE code_held_reason <> ''
"""

# Back: the session's columns take the decision of its latest decided hold.
BACKWARD = """
UPDATE collection_studysession AS s
SET code_hold_decision = h.decision, code_hold_decided_at = h.decided_at, code_hold_decided_by_id = h.decided_by_id
FROM (
    SELECT DISTINCT ON (session_id) session_id, decision, decided_at, decided_by_id
    FROM crowd_codehold WHERE decision <> '' ORDER BY session_id, decided_at DESC NULLS LAST
) AS h
WHERE h.session_id = s.id;
DELETE FROM crowd_codehold;
"""


class Migration(migrations.Migration):
    """One hold record per session held today, its kind told by its reason's words."""

    dependencies = [("crowd", "0032_code_holds")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
