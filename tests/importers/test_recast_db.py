"""Recasting into the database (importers.recast_service, `manage.py recast`, the dashboard page):
a dry run shows the first pairs and writes nothing; saving writes pairs, labels and provenance in
one transaction; the saved sentiment recast of DNC's own source rows gives DNC's hypotheses and labels."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from corpus import labels as scheme_labels
from corpus.models import Dataset, LabelScheme, Pair, PairProvenance, Premise
from corpus.scope import Scope
from importers.recast_service import RecastRefused, dry_run, recast_into
from tests.importers.test_recasting import SENTENCES, name_of, rebuilt, without_name
from tests.present import present

pytestmark = pytest.mark.django_db


def test_dry_run_shows_the_first_pairs_and_saves_nothing():
    preview = dry_run("puns", SENTENCES, n=4, dataset="puns-here")
    assert len(preview.pairs) == 4 and preview.rows_read == 2  # two pairs a sentence: reads only what it shows
    assert all(present(pair.provenance).corpus for pair in preview.pairs)
    assert not Pair.objects.exists() and not Dataset.objects.filter(slug="puns-here").exists()


def test_saving_the_sentiment_recast_of_dncs_rows_gives_dncs_pairs_with_provenance():
    release, rows = rebuilt("sentiment")
    report = recast_into("sentiment", rows, "recast-sentiment", "dev", seed=3)
    assert report.pairs_created == len(release.pairs) == 600
    dataset = Dataset.objects.get(slug="recast-sentiment")
    assert dataset.label_scheme == LabelScheme.TWO_WAY
    saved = list(Pair.objects.filter(dataset=dataset).order_by("pk").select_related("premise", "provenance"))
    for ours, theirs in zip(saved, release.pairs, strict=True):
        name, their_name = name_of(ours), name_of(theirs)
        assert without_name(ours.hypothesis, name) == without_name(theirs.hypothesis, their_name)
        assert without_name(ours.premise.text, name) == without_name(theirs.context, their_name)
        assert scheme_labels.to_scheme("two_way", ours.author_label) == theirs.label
        assert ours.provenance.corpus == theirs.provenance.corpus
        assert ours.provenance.corpus_sent_id == theirs.provenance.corpus_sent_id
    # A second recast into the same dataset continues the pair ids instead of colliding.
    again = recast_into("sentiment", rows[:2], "recast-sentiment", "dev", seed=4)
    assert again.pairs_created == 4 and Pair.objects.filter(dataset=dataset).count() == 604


def test_a_row_the_template_cannot_recast_saves_nothing():
    rows = [dict(SENTENCES[0]), {"sentence": "no pun field"}]
    with pytest.raises(RecastRefused, match=r"row 1.*nothing was saved"):
        recast_into("puns", rows, "puns-bad", "dev")
    assert not Pair.objects.exists() and not Premise.objects.exists() and not PairProvenance.objects.exists()


def test_recast_command_dry_run_then_save(tmp_path, capsys):
    source = tmp_path / "puns.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in SENTENCES[:3]))
    call_command("recast", "puns", str(source), "--dataset", "cmd-puns", "--split", "dev", "--dry-run", "--limit", "2")
    printed = capsys.readouterr().out
    assert "Dry run" in printed and "nothing saved" in printed and printed.count("->") == 2
    assert not Pair.objects.exists()
    call_command("recast", "puns", str(source), "--dataset", "cmd-puns", "--split", "dev")
    assert Pair.objects.filter(dataset__slug="cmd-puns").count() == 6
    with pytest.raises(CommandError, match="no such template"):
        call_command("recast", "no-such-template", str(source), "--dataset", "x", "--split", "dev", "--dry-run")


def test_dashboard_recast_page_previews_then_saves_for_researchers_only(client, researcher, make_worker):
    url = reverse("dashboard:recast")
    client.force_login(make_worker().user)
    assert client.get(url).status_code in (302, 403)
    client.force_login(researcher)
    assert client.get(url).status_code == 200
    rows = "".join(json.dumps(row) + "\n" for row in SENTENCES[:3])
    form = {"template": "puns", "dataset": "dash-puns", "split": "dev", "format": "jsonl", "rows": rows, "seed": "0"}
    preview = client.post(url, {**form, "action": "preview"})
    assert preview.status_code == 200 and "nothing is saved yet" in preview.content.decode()
    assert preview.content.decode().count('class="recast-pair"') == 6
    assert not Pair.objects.exists()
    saved = client.post(url, {**form, "action": "save"})
    assert saved.status_code == 302
    assert Pair.objects.filter(dataset__slug="dash-puns").count() == 6
    bad = client.post(url, {**form, "rows": '{"sentence": "x"}\n', "action": "save", "dataset": "dash-bad"})
    assert bad.status_code == 400 and "nothing was saved" in bad.content.decode()
    assert not Dataset.objects.filter(slug="dash-bad").exists()


def test_recast_premises_count_on_the_corpus_page_like_imported_ones():
    from dashboard.queries.corpus import _corpus_overview

    recast_into("puns", SENTENCES[:3], "counted-puns", "dev")
    dataset = Dataset.objects.get(slug="counted-puns")
    premises = Premise.objects.filter(dataset=dataset).count()
    assert premises > 0
    assert _corpus_overview(Scope.of_dataset(dataset))["premise_summary"]["count"] == premises
