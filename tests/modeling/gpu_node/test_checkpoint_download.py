"""The embedded mode records checkpoints the same way, and a researcher downloads them from the run's page."""

import hashlib
import re

from django.urls import reverse

from modeling.models import RunStatus
from modeling.training.checkpoint import load_checkpoint
from modeling.training.services import execute_training_run, launch_training_run
from tests.present import present

from .helpers import SMALL, learnable_splits, served_snapshot


def test_the_runs_page_links_its_checkpoint_and_the_file_loads_and_predicts(db, client, researcher, tmp_path, settings):
    snapshot = served_snapshot(learnable_splits(seed=7, n_train=200, n_eval=40), researcher)
    run = launch_training_run(snapshot, "cbow", config=SMALL, user=researcher, enqueue=False)
    execute_training_run(run.pk)  # in-process, the database transport: no PLATFORM_URL here
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert run.node_token is None and "snapshot_source" not in run.results
    assert run.checkpoint_path.startswith(str(settings.CHECKPOINT_DIR))
    client.force_login(researcher)
    html = client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
    link = present(re.search(r'id="checkpoint-download" href="([^"]+)"', html)).group(1)
    assert run.checkpoint_sha256 in html
    response = client.get(link)
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert len(body) == run.checkpoint_bytes and hashlib.sha256(body).hexdigest() == run.checkpoint_sha256
    path = tmp_path / "downloaded.safetensors"
    path.write_bytes(body)
    model = load_checkpoint(path)
    assert model.kind == "cbow" and model.config["embedding_dim"] == SMALL["embedding_dim"]
    assert model.predict("A man walks.", "never a man walks.") == "contradiction"  # the cue word it learnt
    assert model.predict("A man walks.", "indeed a man walks.") == "entailment"


def test_a_run_without_a_checkpoint_has_no_link_and_its_download_is_404(db, client, researcher):
    snapshot = served_snapshot(learnable_splits(seed=8, n_train=20, n_eval=5), researcher)
    run = launch_training_run(snapshot, "cbow", config=SMALL, user=researcher, enqueue=False)
    client.force_login(researcher)
    assert "checkpoint-download" not in client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
    missing = client.get(f"/api/training-runs/{run.pk}/checkpoint/")
    assert missing.status_code == 404 and "no checkpoint" in missing.json()["detail"]
