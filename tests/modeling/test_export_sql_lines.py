"""The export's lines are built by PostgreSQL (modeling/snapshots/database_lines.py);
the format is defined in Python (format.jsonl_line / tsv_line of writer.export_record's record,
labels read by the reference reader selectors.rows_for_export). These tests pin the two equal, byte
for byte, so they can never drift: awkward text in every field (quotes, tabs, newlines, a lone
carriage return, control characters, the COPY's own framing characters, unicode, "NULL" and
"\\N", empty strings, parses), missing, excluded, waiting and healed labels, every label scheme,
the unvalidated_gold conventions, the filters and the aggregation option."""

from collections import defaultdict
from pathlib import Path

import pytest

from corpus.models import RETIRED_LABEL, Dataset, Label, LabelScheme, Pair, ValidationLabel
from modeling.snapshots import format as snapshot_format
from modeling.snapshots import selectors, writer
from modeling.snapshots.services import AGGREGATION_FIELDS, create_snapshot, export_snapshot
from quality.models import AggregatedLabel, AggregationRun
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
L = Label

AWKWARD = [
    'quotes "inside" and a\ttab',
    "a newline\nand a carriage\r\nreturn",
    "a lone carriage\rreturn",
    "backslash \\ slash / unicode café — 北京 😀 \u2028 \u2029 \ufeff",
    "control \x01 \x02\x02 \x1f \b \f \x7f characters",
    '"starts with a quote',
    'ends with a quote"',
    "",
    "NULL",
    "\\N",
    '{"annotator_labels": [], "json": true}',
    "  spaces around, commas, and; semicolons  ",
    "\x02\x01\x02 the COPY's framing \x01\x02\n",
]


def reference_files(snapshot):
    """{file name: bytes} as the Python definition writes the snapshot's split files."""
    datasets, filters = snapshot.datasets, snapshot.filters
    (scheme,) = selectors.label_schemes(datasets) or ["three_way"]
    aggregated = selectors.aggregated_labels(filters.get("aggregation_run"))
    extra = AGGREGATION_FIELDS if aggregated is not None else ()
    held_out = selectors.datasets_with_held_out_genres(datasets)
    lines = defaultdict(list)
    pairs = selectors.pairs_for_export(datasets, filters, premise_per_row=True)
    for values, counted in selectors.rows_for_export(pairs, page_size=4):
        labels = selectors.labels_in_scheme(scheme, counted)
        record = writer.export_record(values, labels, filters.get("unvalidated_gold", "author"), scheme)
        if aggregated is not None:
            record["aggregated_label"], record["aggregated_posterior"] = aggregated.get(values[0], ("", None))
        jsonl, tsv = writer.record_lines(record, labels, extra)
        name = writer.record_file(values, held_out)
        lines[f"{name}.jsonl"].append(jsonl)
        lines[f"{name}.tsv"].append(tsv)
    header = snapshot_format.tsv_line([*snapshot_format.TSV_COLUMNS, *extra])
    return {
        name: ((header if name.endswith(".tsv") else "") + "".join(rows)).encode("utf-8")
        for name, rows in lines.items()
    }


def exported_files(snapshot):
    return {path.name: path.read_bytes() for path in Path(snapshot.directory).iterdir() if path.name != "manifest.json"}


def assert_same_files(snapshot):
    exported, reference = exported_files(snapshot), reference_files(snapshot)
    assert sorted(exported) == sorted(reference)
    for name, content in reference.items():
        assert exported[name] == content, name
    return exported


def awkward_corpus(make_worker, slug="awkward", scheme=LabelScheme.THREE_WAY):
    """Awkward text in every text field of pairs and premises, in every split and file, with every
    label situation the rules know."""
    dataset = Dataset.objects.create(slug=slug, name=slug, label_scheme=scheme)
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    excluded, waiting, counted = make_worker(is_excluded=True), make_worker(), make_worker()
    for index, text in enumerate(AWKWARD):
        split = ["train", "dev", "test"][index % 3]
        premise = add_premise(dataset, letters if index % 2 else fiction, split, text, prompt_id=f"{text}#{index}")
        premise.parse = premise.binary_parse = f"( ( {text} ) )"
        premise.save(update_fields=["parse", "binary_parse"])
        # Unvalidated: gold by the unvalidated_gold convention.
        add_pair(
            dataset, premise, text or "x", [L.NEUTRAL], pair_id=f"{index}{text}u", needs_validation=False, parse=text
        )
        five = add_pair(
            dataset,
            premise,
            f"{text} again",
            [L.ENTAILMENT, L.ENTAILMENT, L.NEUTRAL, L.CONTRADICTION, L.ENTAILMENT],
            pair_id=f"{index}{text}5",
        )
        Pair.objects.filter(pk=five.pk).update(binary_parse=f"(ROOT {text})")
        few = add_pair(dataset, premise, f"{text} few", [L.CONTRADICTION] * 3, pair_id=f"{index}f")
        situation = index % 4
        if situation == 0:  # an excluded worker's label in the middle: a blank slot
            ValidationLabel.objects.filter(pair=five, position=3).update(worker=excluded, excluded=True)
        elif situation == 1:  # healed: the excluded label replaced at position 6
            ValidationLabel.objects.filter(pair=five, position=2).update(worker=excluded, excluded=True)
            ValidationLabel.objects.create(pair=five, position=6, label=L.CONTRADICTION, worker=counted)
        elif situation == 2:  # a label the market has not vouched for yet
            ValidationLabel.objects.filter(pair=few, position=2).update(worker=waiting, awaiting_market_session=7)
        else:  # the author's label does not count, and a decided pair
            ValidationLabel.objects.filter(pair=few, position=1).update(worker=excluded, excluded=True)
            Pair.objects.filter(pk=five.pk).update(adjudicated_label=L.CONTRADICTION, gold_label=L.CONTRADICTION)
        if scheme == LabelScheme.ORDINAL:
            ValidationLabel.objects.filter(pair=five, position__in=(1, 4)).update(ordinal=5 if index % 2 else 2)
    retired = add_pair(dataset, premise, "retired", [L.ENTAILMENT] * 5, pair_id="retired")
    Pair.objects.filter(pk=retired.pk).update(adjudicated_label=RETIRED_LABEL)
    return dataset


@pytest.mark.parametrize("unvalidated_gold", ["author", "-", "author-all"])
def test_the_database_writes_the_lines_python_defines_for_awkward_text(make_worker, unvalidated_gold):
    awkward_corpus(make_worker)
    snapshot = export_snapshot(create_snapshot(None, filters={"unvalidated_gold": unvalidated_gold}))
    files = assert_same_files(snapshot)
    # Every file and every awkward text was written: the comparison is not between two empty exports.
    assert {name.split(".")[0] for name in files} == {
        "train",
        "dev_matched",
        "dev_mismatched",
        "test_matched",
        "test_mismatched",
    }
    written = b"".join(files.values()).decode("utf-8")
    for text in AWKWARD:
        assert snapshot_format.json_value(text)[1:-1] in written
    assert snapshot.row_count == 3 * len(AWKWARD)


@pytest.mark.parametrize("scheme", [LabelScheme.TWO_WAY, LabelScheme.ORDINAL])
def test_other_label_schemes_write_their_words_as_python_does(make_worker, scheme):
    awkward_corpus(make_worker, slug=f"awkward-{scheme}", scheme=scheme)
    files = assert_same_files(export_snapshot(create_snapshot(None)))
    written = b"".join(files.values())
    assert b"not-entailed" in written and b"neutral" not in written
    if scheme == LabelScheme.ORDINAL:
        assert b'"annotator_labels": ["2", ' in written and b"\t5\t" in written


@pytest.mark.parametrize(
    "filters",
    [
        {"splits": ["dev"], "genres": ["letters"]},
        {"gold_only": True},
        {"min_labels": 4},
        {"full_agreement": True},
    ],
    ids=lambda filters: ",".join(filters),
)
def test_filters_choose_the_same_rows_as_python(make_worker, filters):
    awkward_corpus(make_worker)
    snapshot = export_snapshot(create_snapshot(None, filters=filters))
    assert_same_files(snapshot)
    assert 0 < snapshot.row_count < 3 * len(AWKWARD)


def test_the_aggregation_option_writes_pythons_floats(make_worker):
    dataset = awkward_corpus(make_worker)
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"], status="done")
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk"))
    # Posteriors whose rounding and printing SQL would do differently (a tie at the 7th place, a
    # whole number, an exponent), and a label that needs escaping; one pair unscored.
    posteriors = [0.1234565, 1.0, 0.00001234, 0.5, 2 / 3, 0.9999995, 0.3333335]
    AggregatedLabel.objects.bulk_create(
        AggregatedLabel(
            run=run,
            method="dawid_skene",
            pair=pair,
            label='odd "label"\t' if index == 3 else L.NEUTRAL,
            posterior=posteriors[index % len(posteriors)],
            gold_label=pair.gold_label,
            differs=False,
        )
        for index, pair in enumerate(pairs[1:])
    )
    snapshot = export_snapshot(create_snapshot(None, filters={"aggregation_run": run.pk}))
    files = assert_same_files(snapshot)
    written = b"".join(files.values())
    assert b'"aggregated_posterior": 1.0' in written and b'"aggregated_posterior": null' in written
    assert b'"aggregated_posterior": 1.2e-05' in written  # round(p, 6), as Python prints it
