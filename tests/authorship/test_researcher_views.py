"""Researchers see the typing evidence: per writer on the workers page, per hypothesis in the admin."""

import json

from django.urls import reverse

from authorship.models import WritingEvidence
from collection import services
from tests.collection.writing_helpers import add_premises, writing_setup

SENTENCES = {
    "entailment": "A boat left the harbour.",
    "neutral": "The boat carried fishermen at dawn.",
    "contradiction": "The boat stayed in the harbour all day.",
}


def write_with_one_pasted(worker):
    fields = {name: {"k": len(text), "t": len(text), "n": 0} for name, text in SENTENCES.items()}
    fields["neutral"] = {"p": len(SENTENCES["neutral"])}
    claim = services.claim_next_premise(worker)
    services.submit_hypotheses(worker, claim.token, typing_evidence=json.dumps({"v": 1, "fields": fields}), **SENTENCES)


def test_the_workers_page_shows_each_writers_flagged_share(client, researcher, make_worker, settings):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": dataset.slug}
    writer = make_worker(username="paster")
    write_with_one_pasted(writer)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:workers")).content.decode()
    cell = page.split(f'<tr data-worker="{writer.pk}">', 1)[1].split('data-stat="typing_flagged">', 1)[1]
    assert cell.split("</td>", 1)[0].count("1 of 3") == 1


def test_the_admin_lists_the_evidence_and_flags_of_each_hypothesis(client, researcher, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 1)
    write_with_one_pasted(make_worker(username="paster"))
    client.force_login(researcher)
    listing = client.get(reverse("admin:authorship_writingevidence_changelist") + "?flagged__exact=1")
    assert listing.status_code == 200 and "pasted" in listing.content.decode()
    row = WritingEvidence.objects.get(flagged=True)
    assert client.get(reverse("admin:authorship_writingevidence_change", args=[row.pk])).status_code == 200
