"""The label-level file's lines are built by PostgreSQL and streamed by one COPY
(modeling/snapshots/label_rows.py `label_lines_sql`); the file is defined in Python (`label_rows`,
each row written by format.jsonl_line). These tests pin the two equal, byte for byte: awkward text
in the pair ids (tabs, quotes, newlines, backslashes, unicode, emoji, control characters, the
COPY's own framing characters, empty parses), floats whose printing differs between PostgreSQL
and Python, excluded and imported labels, replacements, every label scheme, typing flags, the
quality checks' flags, catch trials and the filters."""

import json
import random
import struct
import uuid
from pathlib import Path

import pytest
from django.db import connection

from authorship.models import WritingEvidence
from base.long_tasks import JobStatus
from corpus.models import Label, LabelScheme, Pair, ValidationLabel
from corpus.services import add_labels
from modeling.snapshots import selectors
from modeling.snapshots.database_lines import json_float
from modeling.snapshots.format import LABELS_FILE, jsonl_line, read_manifest
from modeling.snapshots.label_rows import label_rows
from modeling.snapshots.services import create_snapshot, export_snapshot
from quality.models import CatchTrialAnswer
from tests.modeling.test_export_sql_lines import AWKWARD, awkward_corpus

pytestmark = pytest.mark.django_db
L = Label

# Seconds PostgreSQL and Python print differently unless the SQL says how: whole numbers (repr's
# ".0"), exponents, fixed notation from 1e15 to 1e16, integers from 1e16 on (PostgreSQL's every
# digit), 1e23 (a tie PostgreSQL rounds the other way), negative zero, the largest float.
TRICKY_FLOATS = [
    None,
    0.0,
    -0.0,
    3.0,
    12.5,
    1 / 3,
    0.1 + 0.2,
    1e-4,
    9.99e-5,
    1.5e-7,
    5e-324,
    123456.789,
    1e15,
    1e15 + 0.125,
    9007199254740994.0,
    1e16,
    6.197042841472106e16,
    1e23,
    2.0**70,
    1e100,
    -2.5e-5,
    1.7976931348623157e308,
]


def awkward_label_corpus(make_worker, scheme=LabelScheme.THREE_WAY):
    """awkward_corpus (awkward pair ids in every split and file; excluded, waiting and replacement
    labels) with tricky seconds on its labels, typing flags on some authors' hypotheses, a worker the
    quality checks flag (too fast) and one with a catch trial."""
    dataset = awkward_corpus(make_worker, slug=f"labels-{scheme}", scheme=scheme)
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk"))
    fast, careful = make_worker(), make_worker()
    rating = {L.ENTAILMENT: 5, L.NEUTRAL: 3} if scheme == LabelScheme.ORDINAL else {}

    def labelled(pairs, label):
        return [(pair, label, rating.get(label)) for pair in pairs if pair.label_count < 5]

    # The fast worker's first label is late in the file, the careful one's early: pseudonyms go by
    # the first label in file order, not by who came first.
    add_labels(labelled(pairs[len(pairs) // 2 :], L.ENTAILMENT), worker=fast, seconds=1.0)
    add_labels(labelled(pairs[:6], L.NEUTRAL), worker=careful, seconds=20.0)
    labels = list(ValidationLabel.objects.filter(pair__dataset=dataset).order_by("pk").values_list("pk", flat=True))
    for index, label in enumerate(labels[: 3 * len(TRICKY_FLOATS)]):
        ValidationLabel.objects.filter(pk=label).update(seconds=TRICKY_FLOATS[index % len(TRICKY_FLOATS)])
    ValidationLabel.objects.filter(pk__in=labels[1::9]).update(excluded=True)  # as set_workers_excluded marks
    CatchTrialAnswer.objects.create(
        worker=careful, pair=pairs[0], batch=uuid.uuid4(), label=L.ENTAILMENT, expected=L.ENTAILMENT, matched=True
    )
    for pair, flags in zip(pairs[::4], (["pasted"], [], ["pasted", "repeated"], ["no-evidence"]), strict=False):
        WritingEvidence.objects.create(
            pair=pair, worker=fast, field_name="hypothesis", has_evidence=True, flags=flags, flagged=bool(flags)
        )
    return dataset


def exported_label_file(filters):
    snapshot = export_snapshot(create_snapshot(None, filters={"label_rows": True, **filters}))
    assert snapshot.status == JobStatus.DONE
    return snapshot, (Path(snapshot.directory) / LABELS_FILE).read_bytes()


def reference_label_file(snapshot):
    """The label file as the Python definition writes it."""
    (scheme,) = selectors.label_schemes(snapshot.datasets) or ["three_way"]
    return "".join(jsonl_line(row) for row in label_rows(snapshot.datasets, snapshot.filters, scheme)).encode("utf-8")


@pytest.mark.parametrize("scheme", [LabelScheme.THREE_WAY, LabelScheme.TWO_WAY, LabelScheme.ORDINAL])
def test_the_database_writes_the_label_file_python_defines_for_awkward_text(make_worker, scheme):
    awkward_label_corpus(make_worker, scheme)
    snapshot, written = exported_label_file({"typing_flags": True})
    assert written == reference_label_file(snapshot)
    # Not two empty files: every awkward id, float, flag and pseudonym is there.
    rows = [json.loads(line) for line in written.decode("utf-8").split("\n")[:-1]]
    pairs = selectors.pairs_for_export(snapshot.datasets, snapshot.filters)
    assert len(rows) == ValidationLabel.objects.filter(pair__in=pairs).count()
    for text in AWKWARD:
        assert json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8") in written
    assert {row["seconds"] for row in rows} >= {1e23, 1e16, 3.0, None}
    assert b'"seconds": 3.0,' in written and b'"seconds": 1e+23,' in written
    assert {row["split"] for row in rows} == {
        "train",
        "dev_matched",
        "dev_mismatched",
        "test_matched",
        "test_mismatched",
    }
    assert len({row["annotator"] for row in rows}) >= 5 and ["too fast"] in [row["flags"] for row in rows]
    assert ["pasted", "repeated"] in [row["typing_flags"] for row in rows]
    assert {row["catch_trials_seen"] for row in rows} == {0, 1}
    assert {row["excluded"] for row in rows} == {row["counted"] for row in rows} == {True, False}
    if scheme == LabelScheme.ORDINAL:
        assert {row["rating"] for row in rows} >= {2, 5, None}
    entry = next(entry for entry in read_manifest(Path(snapshot.directory))["files"] if entry["name"] == LABELS_FILE)
    assert entry["rows"] == len(rows) and entry["bytes"] == len(written)


@pytest.mark.parametrize(
    "filters",
    [{"splits": ["dev"], "genres": ["letters"]}, {"gold_only": True}, {"min_labels": 4}, {}],
    ids=lambda filters: ",".join(filters) or "none",
)
def test_the_label_file_has_the_labels_of_the_snapshots_pairs_as_python_chooses(make_worker, filters):
    awkward_label_corpus(make_worker)
    snapshot, written = exported_label_file(filters)
    assert written and written == reference_label_file(snapshot)
    assert b'"typing_flags"' not in written


def test_json_float_prints_every_float_as_json_dumps_does(db):
    rng = random.Random(2018)
    values = [value for value in TRICKY_FLOATS if value is not None]
    values += [float(2**exponent) for exponent in range(40, 1024, 7)]
    for _ in range(2000):
        values.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        values.append(rng.uniform(0, 10 ** rng.randint(-6, 24)) * rng.choice([1, -1]))
        values.append(float(rng.randint(1, 10 ** rng.randint(15, 22))))
    values = [value for value in values if value == value]  # NaN: no JSON, and no such seconds
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {json_float('v')} FROM unnest(%s::text[]::float8[]) WITH ORDINALITY AS t(v, i) ORDER BY i",
            [[repr(value) for value in values]],
        )
        printed = [row[0] for row in cursor.fetchall()]
        cursor.execute(f"SELECT {json_float('NULL')}, {json_float(chr(39) + 'Infinity' + chr(39))}")
        assert cursor.fetchone() == ("null", "Infinity")
    assert [(value, text) for value, text in zip(values, printed, strict=True) if json.dumps(value) != text] == []
