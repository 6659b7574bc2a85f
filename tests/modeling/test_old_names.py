"""Names renamed in issue 22 item 3 that clients already knew keep working (docs/gpu-nodes.md, "Words")."""

import io

import pytest
from django.core.management import call_command

from modeling.models import NodeToken, TrainingRun, hash_node_key

from .training_fixtures import learnable_rows, make_snapshot


@pytest.mark.django_db
def test_create_worker_token_is_still_a_command_and_makes_a_node_token():
    out, err = io.StringIO(), io.StringIO()
    call_command("create_worker_token", "old-script-node", stdout=out, stderr=err)
    key = out.getvalue().split()[0]
    token = NodeToken.objects.get(name="old-script-node")
    assert token.key_hash == hash_node_key(key) and key.startswith(NodeToken.KEY_PREFIX)
    assert "set NODE_TOKEN" in err.getvalue()


@pytest.mark.django_db
def test_the_training_run_api_still_answers_worker_hostname_beside_node_hostname(researcher, tmp_path, client):
    snapshot = make_snapshot(
        tmp_path / "snap", {"train": learnable_rows(5, 1), "dev": learnable_rows(5, 2)}, researcher
    )
    run = TrainingRun.objects.create(snapshot=snapshot, snapshot_hash="x", model="cbow", node_hostname="gpu0@node-1")
    client.force_login(researcher)
    row = client.get(f"/api/training-runs/{run.pk}/").json()
    assert row["node_hostname"] == row["worker_hostname"] == "gpu0@node-1"
