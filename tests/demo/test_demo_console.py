"""`make demo`'s console output is honest (issue 13 item 10): every number `load_demo` prints is
the one the dashboard shows for the same database, tables are never cut off, and the command
prints no stray library warnings."""

import json
import logging
import re
import warnings
from io import StringIO

import pytest
from django.core.management import call_command

from annotation_site.console import format_table
from corpus.models import Worker
from dashboard.results import matrix_file
from demo.artifacts import DEMO_DRAFT
from demo.content import RESEARCHER, WRITING_STUDY
from modeling.management.commands.genre_matrix import format_matrix
from modeling.models import TrainingRun
from tests.artifacts.nudge_helpers import writing_claim_token
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


@pytest.mark.django_db
def test_every_number_the_demo_prints_is_the_dashboards(client, capfd, caplog):
    out = StringIO()
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        call_command("load_demo", "--serving", "--site", SITE, stdout=out)
    output = out.getvalue()

    # No stray warnings: none raised, none logged, nothing on stderr but the training progress bars.
    shown = [w for w in caught if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    assert not shown, [f"{w.category.__name__}: {w.message} ({w.filename})" for w in shown]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    stderr = capfd.readouterr().err
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
    matrix = matrix_file(run.results["genre_matrix_file"])
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
    # The endpoint says whether to nudge, never the probability (issue 27: no oracle).
    assert answer["guessable"] == (p >= 0.8) and "p" not in answer

    # The closing table of links is whole too.
    assert (
        f"{SITE}/study/demo-validation/?PROLIFIC_PID=demo-pid-2&STUDY_ID=demo-study&SESSION_ID=demo-session-2" in output
    )
