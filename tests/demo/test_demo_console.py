"""`make demo`'s console output is honest: every number `load_demo` prints is
the one the dashboard shows for the same database, tables are never cut off, and the command
prints no stray library warnings. The same whole `load_demo` (every part: artifacts, quality,
recast, adversarial, the snapshot and its runs) on a fresh database leaves no hand-kept aggregate
drifting from what it counts and every pair tagged, so the snapshot exports every
written pair's parse.

The whole demo is loaded once for this module (tests.conftest.rows_for_the_module): each test sees
it as that one load leaves it, with what the load printed, warned, logged and wrote on stderr."""

import json
import logging
import os
import re
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from io import StringIO

import pytest
from django.core.management import call_command

from artifacts import tag_tally
from artifacts.services import pairs_to_tag
from base.console import format_table
from collection import hypothesis_tally
from corpus import tallies
from corpus.models import Pair, Worker
from corpus.recompute import recompute_gold
from dashboard.results import matrix_file
from demo.artifacts import DEMO_DRAFT
from demo.content import RESEARCHER, WRITING_STUDY
from modeling.management.commands.genre_matrix import format_matrix
from modeling.models import TrainingRun
from tests.artifacts.nudge_helpers import writing_claim_token
from tests.conftest import rows_for_the_module
from tests.present import present

SITE = "http://127.0.0.1:8000"


def test_a_console_table_fits_its_longest_cell_in_every_column():
    rows = [["nineeleven", "a very long cell that would not fit ten characters", 1], ["oup", "x", 123456789]]
    lines = format_table(["train \\ test", "figures", "n"], rows, align="<<>").split("\n")
    assert lines[1].split("  ")[0] == "nineeleven" and "a very long cell that would not fit ten characters" in lines[1]
    assert lines[2].endswith("123456789")
    # Columns line up: each cell starts where its header starts.
    start = lines[0].index("figures")
    assert lines[1][start:].startswith("a very long") and lines[2][start:].startswith("x")
    assert len({len(line) for line in lines}) == 1  # right-aligned numbers end together


def test_the_genre_matrix_prints_whole_genre_names():
    table = {
        "train_genres": ["facetoface", "nineeleven"],
        "test_genres": ["facetoface", "nineeleven", "government"],
        "accuracy": {
            "facetoface": {"facetoface": 0.5, "nineeleven": None, "government": 1.0},
            "nineeleven": {"facetoface": 0.25, "nineeleven": 0.125, "government": 0.0},
        },
    }
    lines = format_matrix(table).split("\n")
    assert lines[0].split() == ["train", "\\", "test", "facetoface", "nineeleven", "government"]
    assert lines[1].split() == ["facetoface", "50.0", "-", "100.0"]
    assert lines[2].split() == ["nineeleven", "25.0", "12.5", "0.0"]


def printed_figures(output):
    """{page: (figures, address)} from the table under "as the dashboard shows it:"."""
    lines = output.split("\n")
    start = next(i for i, line in enumerate(lines) if line.endswith("as the dashboard shows it:")) + 1
    header = lines[start]
    figures_at, address_at = header.index("figures"), header.index("address")
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("The nudge"):
            break
        rows[line[:figures_at].strip()] = (line[figures_at:address_at].strip(), line[address_at:].strip())
    return rows


def data_value(page, element_id):
    match = re.search(rf'id="{element_id}"[^>]*data-value="([^"]*)"', page)
    assert match, f"no #{element_id} on the page"
    return match.group(1)


def numbers(text):
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


@dataclass
class Loaded:
    output: str  # what the command printed
    warned: list  # warnings.WarningMessage, every one raised
    logged: list  # logging.LogRecord, WARNING and above
    stderr: str  # everything written to stderr, by Python or below it


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@contextmanager
def _logged_warnings():
    """As caplog.at_level(logging.WARNING) does for a test: the root logger at WARNING, its records kept."""
    root, kept = logging.getLogger(), _Kept()
    level = root.level
    root.setLevel(logging.WARNING)
    root.addHandler(kept)
    try:
        yield kept.records
    finally:
        root.removeHandler(kept)
        root.setLevel(level)


@contextmanager
def _stderr_into(path):
    """As capfd does for a test, for a module's fixture: file descriptor 2 and sys.stderr both
    written to `path` (a library's C code writes to the descriptor, Python's to sys.stderr)."""
    sys.stderr.flush()
    saved_fd, saved_stream = os.dup(2), sys.stderr
    with open(path, "w+", encoding="utf-8") as file:
        os.dup2(file.fileno(), 2)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        try:
            yield
        finally:
            sys.stderr.flush()
            sys.stderr = saved_stream
            os.dup2(saved_fd, 2)
            os.close(saved_fd)


@pytest.fixture(scope="module")
def whole_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    directory = tmp_path_factory.mktemp("whole-demo")
    with rows_for_the_module(django_db_blocker, directory):
        out, stderr = StringIO(), directory / "stderr.txt"
        with warnings.catch_warnings(record=True) as caught, _logged_warnings() as logged, _stderr_into(stderr):
            warnings.simplefilter("always")
            call_command("load_demo", "--serving", "--site", SITE, stdout=out)
        yield Loaded(out.getvalue(), list(caught), list(logged), stderr.read_text(encoding="utf-8"))


@pytest.mark.django_db
def test_every_number_the_demo_prints_is_the_dashboards(client, whole_demo):
    output = whole_demo.output

    # No stray warnings: none raised, none logged, nothing on stderr but the training progress bars.
    shown = [
        w for w in whole_demo.warned if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
    ]
    assert not shown, [f"{w.category.__name__}: {w.message} ({w.filename})" for w in shown]
    assert not whole_demo.logged, [record.getMessage() for record in whole_demo.logged]
    stderr = whole_demo.stderr
    assert not [line for line in re.split(r"[\r\n]", stderr) if line.strip() and "step" not in line], stderr

    figures = printed_figures(output)
    assert set(figures) == {"collection", "validation", "corpus", "artifacts", "snapshots", "training"}
    client.login(username=RESEARCHER[0], password=RESEARCHER[1])

    def page(address):
        assert address.startswith(SITE + "/")  # the whole address, not cut off
        response = client.get(address[len(SITE) :])
        assert response.status_code == 200, address
        return response.content.decode()

    text, address = figures["collection"]
    collection = page(address)
    assert numbers(text) == [int(data_value(collection, "stat-premises")), int(data_value(collection, "stat-pairs"))]

    text, address = figures["validation"]
    assert numbers(text) == [int(data_value(page(address), "stat-five_label_pairs"))]

    text, address = figures["corpus"]
    corpus = page(address)
    tagged = numbers(text)[0]
    assert tagged > 0 and tagged == int(data_value(corpus, "stat-tagged-pairs"))

    text, address = figures["artifacts"]
    artifacts = page(address)
    overall = re.search(
        r'id="monitor-overall">.*?<strong data-value="[^"]*">([^<]+)</strong>.*?against '
        r"<strong>([^<]+)</strong>",
        artifacts,
        re.S,
    )
    assert overall is not None
    hypotheses = present(re.search(r"over ([\d,]+) hypotheses", artifacts)).group(1)
    assert text.startswith(
        f"hypothesis-only {overall.group(1)} vs majority {overall.group(2)} over {hypotheses} hypotheses"
    )
    flagged = text.split("flagged: ")[1].split(", ")
    table = present(re.search(r'id="table-flagged-writers">(.*?)</table>', artifacts, re.S)).group(1)
    on_page = [Worker.objects.get(pk=pk).user.username for pk in re.findall(r'data-worker="(\d+)"', table)]
    assert flagged == on_page and "demo-guessable" in flagged

    text, address = figures["snapshots"]
    snapshot_id, rows = numbers(text)
    snapshots = page(address)
    row = present(re.search(rf'<tr[^>]*id="snapshot-{int(snapshot_id)}".*?</tr>', snapshots, re.S)).group(0)
    assert int(rows) == int(present(re.search(r'data-field="rows">([\d,]+)<', row)).group(1).replace(",", ""))

    text, address = figures["training"]
    training = page(address)
    for run_id, accuracy in re.findall(r"#(\d+) [^,]*? ([\d.]+%|—)", text):
        row = present(re.search(rf'<tr id="run-{run_id}".*?</tr>', training, re.S)).group(0)
        assert present(re.search(r'data-field="dev-accuracy">([^<]+)<', row)).group(1) == accuracy

    # The genre matrix: each printed cell is the run page's (dashboard.results.matrix_file).
    printed = output.split("per training genre; written to ")[1].split("\n")
    header, body = printed[1].split()[3:], printed[2:]
    run = present(TrainingRun.objects.exclude(config__train_genre=None).first())
    matrix = present(matrix_file(run.results["genre_matrix_file"]))
    assert header == matrix["columns"]
    for genre, values in zip(matrix["rows"], matrix["values"], strict=True):
        line = next(line for line in body if line.split()[0] == genre)
        assert line.split()[1:] == [f"{100 * v:.1f}" if v is not None else "-" for v in values]
    assert page(f"{SITE}/dashboard/training/{run.pk}/")

    # The nudge's figure: what the scoring endpoint answers for the same draft in the demo study.
    p = float(
        present(
            re.search(rf'the draft "{re.escape(DEMO_DRAFT)}" written as a contradiction scores p=([\d.]+)', output)
        ).group(1)
    )
    client.logout()
    client.get(f"/study/{WRITING_STUDY['slug']}/?PROLIFIC_PID=console-pid&STUDY_ID=s&SESSION_ID=c1")
    answer = client.post(
        "/artifacts/score/",
        json.dumps({"text": DEMO_DRAFT, "label": "contradiction", "claim": writing_claim_token(client)}),
        content_type="application/json",
    ).json()
    # The endpoint says whether to nudge, never the probability (no oracle).
    assert answer["guessable"] == (p >= 0.8) and "p" not in answer

    # The closing table of links is whole too.
    assert (
        f"{SITE}/study/demo-validation/?PROLIFIC_PID=demo-pid-2&STUDY_ID=demo-study&SESSION_ID=demo-session-2" in output
    )


@pytest.mark.django_db
@pytest.mark.slow
def test_a_fresh_demo_has_no_drift_in_any_maintained_aggregate(whole_demo):
    check = recompute_gold(fix=False, lengths=True)  # what `recompute_gold --check` prints
    assert check.pairs_checked == Pair.objects.count() > 0
    assert check.disagreements == 0
    assert check.tally_drift is not None and (check.tally_drift.keys, check.tally_drift.rows) == (0, 0)
    assert tallies.check_and_rebuild(None, tag_tally.TALLY, repair=False).keys == 0
    assert hypothesis_tally.counts() == hypothesis_tally.fresh_counts() != {}


@pytest.mark.django_db
@pytest.mark.slow
def test_every_demo_pair_is_tagged_and_every_written_pair_parsed(whole_demo):
    assert "Phenomenon tags skipped" not in whole_demo.output  # the tagger is a requirement (requirements.txt)
    assert not pairs_to_tag().exists()
    written = Pair.objects.filter(author__isnull=False, dataset__slug="collected")
    assert written.exists() and not written.filter(parse="").exists()


def test_the_demo_writes_no_progress_bars_when_its_output_is_not_a_terminal(whole_demo):
    """make demo's console (its output a file or a pipe): the training bars redrawn many times a
    run were hundreds of lines before the addresses; off a terminal they are not drawn at all."""
    assert whole_demo.stderr.strip() == "", whole_demo.stderr[:500]
    assert len(whole_demo.output.splitlines()) < 120
