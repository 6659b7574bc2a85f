"""Researchers see the typing evidence: per writer on the workers page, per hypothesis in the admin."""

from django.urls import reverse

from authorship import typing_tally
from authorship.models import WritingEvidence
from collection import services, writing_claims
from corpus import tallies
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present

SENTENCES = {
    "entailment": "A boat left the harbour.",
    "neutral": "The boat carried fishermen at dawn.",
    "contradiction": "The boat stayed in the harbour all day.",
}


def write_with_one_pasted(worker):
    fields = {name: records.typed(text) for name, text in SENTENCES.items()}
    fields["neutral"] = {"p": len(SENTENCES["neutral"])}
    claim = present(writing_claims.claim_next_premise(worker))
    records.age_claim(claim.token)
    services.submit_hypotheses(worker, claim.token, typing_evidence=records.page(fields), **SENTENCES)


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


def test_the_artifact_monitors_flagged_writers_show_their_typing_flagged_share(client, researcher, make_worker):
    """One page answers "who writes like a machine": the writer the monitor finds guessable, with
    the share of their hypotheses whose typing is flagged beside it."""
    from artifacts.monitoring import refresh_monitor
    from corpus.models import Pair
    from tests.artifacts.test_monitor import planted_corpus

    dataset, planted = planted_corpus(make_worker)
    for index, pair in enumerate(Pair.objects.filter(author=planted).order_by("pk")[:8]):
        pasted = index < 2
        WritingEvidence.objects.create(
            pair=pair,
            worker=planted,
            field_name="hypothesis",
            has_evidence=True,
            flags=["pasted"] if pasted else [],
            flagged=pasted,
        )
    tallies.check_and_rebuild(None, typing_tally.TALLY)  # records made around their writer
    refresh_monitor(dataset)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:artifacts"), {"dataset": dataset.slug}).content.decode()
    table = page.split('id="table-flagged-writers">', 1)[1].split("</table>", 1)[0]
    assert "typed evidence flagged %" in table
    cell = table.split(f'data-worker="{planted.pk}"', 1)[1].split('data-stat="typing_flagged">', 1)[1]
    assert "25" in cell.split("</td>", 1)[0] and "2 of 8" in cell.split("</td>", 1)[0]


def test_the_workers_page_shows_each_studys_flagged_share_per_day(client, researcher, make_worker):
    from datetime import timedelta

    from django.utils import timezone

    from crowd.models import Study, StudySession

    dataset, _ = writing_setup()
    study = Study.objects.create(slug="typing-day", name="Typing day", dataset=dataset, completion_code="C")
    today = timezone.now()
    yesterday = today - timedelta(days=1)
    for day, flags in ((yesterday, [True, False, False, False]), (today, [True, True, False, False])):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{day:%d}")
        for flagged in flags:
            row = WritingEvidence.objects.create(
                worker=worker, study_session=session, field_name="hypothesis", has_evidence=True, flagged=flagged
            )
            WritingEvidence.objects.filter(pk=row.pk).update(created_at=day)
    WritingEvidence.objects.create(worker=make_worker(), field_name="hypothesis", flagged=True)  # no study: left out
    tallies.check_and_rebuild(None, typing_tally.TALLY)  # records made (and dated) around their writer
    client.force_login(researcher)
    page = client.get(reverse("dashboard:workers")).content.decode()
    table = page.split('id="table-typing-over-time">', 1)[1].split("</table>", 1)[0]
    shares = {
        day: table.split(f'data-day="{day}"', 1)[1].split('data-stat="typing_flagged_share">', 1)[1].split("<", 1)[0]
        for day in (f"{yesterday:%Y-%m-%d}", f"{today:%Y-%m-%d}")
    }
    assert shares == {f"{yesterday:%Y-%m-%d}": "25.0%", f"{today:%Y-%m-%d}": "50.0%"}
    assert table.count("<tr data-study=") == 2
