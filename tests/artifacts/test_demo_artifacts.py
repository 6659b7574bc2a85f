"""`make demo` shows the artifacts: tags, give-away words, a flagged writer and a nudge."""

import json

import pytest

from artifacts.models import MonitorRefresh, PairTags, StudyNudge
from artifacts.selectors import giveaway_words_for
from corpus.models import Worker
from corpus.scope import Scope
from demo.artifacts import DEMO_DRAFT, GUESSABLE_WRITER, ensure_artifacts_demo
from demo.content import WRITING_STUDY, load_demo
from tests.artifacts.nudge_helpers import writing_claim_token

pytestmark = pytest.mark.django_db


def test_the_demo_flags_its_guessable_writer_tags_its_pairs_and_nudges(client, loaded_tagger):
    dataset = load_demo()["dataset"]
    summary = ensure_artifacts_demo(dataset)
    assert summary["created"] and summary["refresh"].flagged >= 1 and summary["draft"] > 0.5
    refresh = MonitorRefresh.objects.get(dataset=dataset)
    names = dict(Worker.objects.values_list("pk", "user__username"))
    flagged = {names[w["writer"]]: w for w in refresh.writers if w["flagged"]}
    # The planted writer; a demo author whose hand-written contradictions are easy may join them.
    assert GUESSABLE_WRITER in flagged and not any(name.startswith("demo-crowd") for name in flagged)
    flagged = flagged[GUESSABLE_WRITER]
    assert flagged["giveaway_words"]["contradiction"][0]["word"] == "not"
    assert PairTags.objects.filter(pair__dataset=dataset, negation=True).exists()
    words = giveaway_words_for(Scope.of_dataset(dataset), worker=Worker.objects.get(user__username=GUESSABLE_WRITER))
    assert words["words"]["contradiction"][0]["word"] == "not"
    assert StudyNudge.objects.get(study__slug=WRITING_STUDY["slug"]).enabled
    # A second run adds nothing and keeps the refresh.
    assert ensure_artifacts_demo(dataset)["created"] == 0
    assert MonitorRefresh.objects.filter(dataset=dataset).count() == 1
    client.get(f"/study/{WRITING_STUDY['slug']}/?PROLIFIC_PID=demo-pid-9&STUDY_ID=s&SESSION_ID=x")
    answer = client.post(
        "/artifacts/score/",
        json.dumps({"text": DEMO_DRAFT, "label": "contradiction", "claim": writing_claim_token(client)}),
        content_type="application/json",
    ).json()
    assert answer["guessable"] and answer["words"][0] == "not"
