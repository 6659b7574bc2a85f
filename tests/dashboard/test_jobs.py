"""Snapshots and training runs started from the dashboard, their live progress and results."""

import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from base.long_tasks import JobStatus
from modeling.models import RunStatus, Snapshot, TrainingRun
from tests.conftest import wait_for

from . import factories
from .pagefigures import figures, number


def finished(model, pk):
    def check():
        row = model.objects.get(pk=pk)
        return row if row.status in ("done", "failed") else None

    return check


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_snapshot_then_training_run_from_the_dashboard(celery_worker_process, client, researcher, settings):
    dataset = factories.corpus()
    client.force_login(researcher)

    response = client.post(reverse("dashboard:snapshots"), {"datasets": [dataset.slug]})
    assert response.status_code == 302
    snapshot = Snapshot.objects.get()
    assert snapshot.datasets == [dataset.slug] and snapshot.created_by == researcher
    snapshot = wait_for(finished(Snapshot, snapshot.pk), timeout=90, message="the export")
    try:
        assert snapshot.status == JobStatus.DONE, snapshot.error
        live = client.get(reverse("dashboard:snapshots_progress"), {"ids": snapshot.pk}).json()["items"][0]
        assert live["status"] == "done" and live["finished"] and live["progress"] == 1.0
        page = client.get(reverse("dashboard:snapshots")).content.decode()
        for file in snapshot.files.all():
            assert f'/api/snapshots/{snapshot.pk}/files/{file.name}"' in page
            assert file.sha256[:12] in page
        assert snapshot.content_hash in page
        # The download link works with the researcher's session. (A worker subprocess writes under
        # its own DATA_DIR; in production web and workers share one SNAPSHOT_DIR.)
        settings.SNAPSHOT_DIR = Path(snapshot.directory).parent
        download = client.get(f"/api/snapshots/{snapshot.pk}/files/train.jsonl")
        assert download.status_code == 200
        assert b"She was sad." in b"".join(download.streaming_content if download.streaming else [download.content])

        response = client.post(
            reverse("dashboard:training"), {"snapshot": snapshot.pk, "model": "majority", "options": ""}
        )
        run = TrainingRun.objects.get()
        assert response.status_code == 302 and response["Location"] == reverse(
            "dashboard:training_detail", args=[run.pk]
        )
        run = wait_for(finished(TrainingRun, run.pk), timeout=120, message="the training run")
        assert run.status == RunStatus.DONE, run.error
        progress = client.get(reverse("dashboard:training_progress"), {"ids": run.pk}).json()["items"][0]
        assert progress["status"] == "done" and progress["progress"] == 1.0

        html = client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
        shown = {stat: number(value) for _, stat, value, _ in figures(html).rows if stat}
        for phase, accuracy in run.results["matched"].items():
            assert shown[f"{phase}-matched"] == pytest.approx(accuracy)
        for phase, accuracy in run.results["mismatched"].items():
            assert shown[f"{phase}-mismatched"] == pytest.approx(accuracy)
        for split, accuracy in run.results["accuracy"].items():
            assert shown[f"accuracy-{split}"] == (None if accuracy is None else pytest.approx(accuracy))
        assert 'id="table-per-genre"' in html and 'id="figure-confusion"' in html
    finally:
        if celery_worker_process is not None and snapshot.directory:
            shutil.rmtree(snapshot.directory, ignore_errors=True)


@pytest.fixture
def done_snapshot(db):
    return Snapshot.objects.create(status=JobStatus.DONE, content_hash="a" * 64, directory="/nonexistent")


@pytest.mark.parametrize(
    "form, message",
    [
        ({"model": "majority", "options": "{bad"}, "Options: not valid JSON"),
        ({"model": "majority", "options": "[1, 2]"}, "Options: a JSON object is needed"),
        ({"model": "majority", "options": '{"epochz": 2}'}, "unknown config key"),
        ({"model": "perceptron", "options": ""}, "Unknown model"),
    ],
)
def test_bad_training_input_is_explained_and_kept(client, researcher, done_snapshot, form, message):
    client.force_login(researcher)
    response = client.post(reverse("dashboard:training"), {"snapshot": done_snapshot.pk, **form})
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html
    if form["options"]:
        # What the researcher typed comes back in the box (HTML-escaped).
        from django.utils.html import escape

        assert f">{escape(form['options'])}</textarea>" in html
    assert not TrainingRun.objects.exists()


def test_training_needs_a_finished_snapshot(client, researcher):
    running = Snapshot.objects.create(status=JobStatus.RUNNING)
    client.force_login(researcher)
    response = client.post(reverse("dashboard:training"), {"snapshot": running.pk, "model": "majority"})
    assert response.status_code == 400 and "is running, not done" in response.content.decode()
    response = client.post(reverse("dashboard:training"), {"snapshot": "", "model": "majority"})
    assert response.status_code == 400 and "Choose a snapshot" in response.content.decode()
    assert not TrainingRun.objects.exists()


def test_unknown_dataset_makes_no_snapshot(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("dashboard:snapshots"), {"datasets": ["ghost"]}, follow=True)
    assert "unknown dataset(s): ghost" in response.content.decode()
    assert not Snapshot.objects.exists()


def figure_in(client, html, figure_id):
    """The SVG of the page's figure `figure_id`: the image its <img> asks for (dashboard/charts.py)."""
    found = re.search(rf'id="{figure_id}"><img class="plot" src="([^"]+)"', html)
    assert found, f"no figure {figure_id} on the page"
    response = client.get(unescape(found.group(1)))
    assert response.status_code == 200 and response["Content-Type"].startswith("image/svg+xml")
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def test_run_page_shows_live_progress_and_genre_matrix(client, researcher, done_snapshot):
    """Single-genre runs on one snapshot make MultiNLI Table 5; a running run shows its progress."""

    def result(per_genre):
        return {
            "dev": {
                "per_genre": {g: {"n": 10, "accuracy": a} for g, a in per_genre.items()},
                "per_label": {},
                "confusion": None,
            },
            "matched": {"dev": 0.5},
            "mismatched": {"dev": 0.4},
            "splits": {},
        }

    runs = [
        TrainingRun.objects.create(
            snapshot=done_snapshot,
            snapshot_hash="a" * 64,
            model="cbow",
            status="done",
            config={"train_genre": genre},
            results=result(per_genre),
        )
        for genre, per_genre in (
            ("fiction", {"fiction": 0.7, "travel": 0.6}),
            ("travel", {"fiction": 0.55, "travel": 0.75}),
        )
    ]
    client.force_login(researcher)
    html = client.get(reverse("dashboard:training_detail", args=[runs[0].pk])).content.decode()
    matrix = figure_in(client, html, "figure-genre-matrix")
    assert ">70.0<" in matrix and ">75.0<" in matrix

    live = TrainingRun.objects.create(
        snapshot=done_snapshot,
        snapshot_hash="a" * 64,
        model="cbow",
        status="running",
        epoch=2,
        total_epochs=5,
        step=40,
        total_steps=100,
        loss=0.8,
    )
    html = client.get(reverse("dashboard:training_detail", args=[live.pk])).content.decode()
    assert 'data-reload-when-finished="yes"' in html and 'aria-valuenow="40"' in html
    item = client.get(reverse("dashboard:training_progress"), {"ids": live.pk, "view": "detail"}).json()["items"][0]
    assert (item["epoch"], item["total_epochs"], item["step"], item["progress"]) == (2, 5, 40, 0.4)
    assert "epoch 2/5" in item["html"]


def test_snapshot_form_passes_filters(client, researcher):
    dataset = factories.corpus()
    client.force_login(researcher)
    client.post(
        reverse("dashboard:snapshots"),
        {"datasets": [dataset.slug], "splits": ["dev"], "gold_only": "on", "unvalidated_gold": "-"},
    )
    snapshot = Snapshot.objects.get()
    assert snapshot.datasets == [dataset.slug]
    assert snapshot.filters["splits"] == ["dev"] and snapshot.filters["gold_only"] is True
    assert snapshot.filters["unvalidated_gold"] == "-"


def test_run_page_reads_the_genre_matrix_file(client, researcher, done_snapshot, tmp_path):
    """`manage.py genre_matrix` writes the table to a file and names it in each run's results."""
    import json

    table = {
        "phase": "test",
        "train_genres": ["fiction", "slate"],
        "test_genres": ["fiction", "slate", "oup"],
        "accuracy": {
            "fiction": {"fiction": 0.654, "slate": 0.5, "oup": 0.52},
            "slate": {"fiction": 0.55, "slate": 0.612, "oup": None},
        },
    }
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(table))
    run = TrainingRun.objects.create(
        snapshot=done_snapshot,
        snapshot_hash="a" * 64,
        model="cbow",
        status="done",
        config={"train_genre": "fiction"},
        results={"splits": {}, "genre_matrix_file": str(path)},
    )
    client.force_login(researcher)
    html = client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
    matrix = figure_in(client, html, "figure-genre-matrix")
    assert ">65.4<" in matrix and ">61.2<" in matrix
    assert "test accuracy per evaluated genre" in html
    path.unlink()  # a file written on another machine: the page still renders, without the matrix
    html = client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
    assert 'id="figure-genre-matrix"' not in html


@pytest.mark.django_db
def test_right_after_make_snapshot_the_embedded_queue_says_it_is_starting(client, researcher, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the embedded mode's banner (a broker has none)
    Snapshot.objects.create(status=JobStatus.PENDING)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:snapshots")).content.decode()
    banner = page.split('id="embedded-running"')[1].split("</p>")[0]
    assert "Starting in a moment: 1 snapshot exports" in banner and "Nothing is running now" not in banner
