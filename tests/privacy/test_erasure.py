"""Erasure of a participant: the register's fields erased, contributions
kept or deleted by the study's policy, and every figure equal to a recompute from scratch."""

import pytest

from audit.models import AuditEntry
from corpus import tallies, worker_tally
from corpus.agreement import agreement_stats
from corpus.models import Dataset, Label, Pair, ValidationLabel, Worker
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.services import add_label
from crowd.models import DeviceSighting, Study, StudySession
from privacy.models import ErasureRecord
from privacy.services import (
    PSEUDONYM_PREFIX,
    ParticipantNotFound,
    download_participant_data,
    erase_by_market_id,
    pseudonym,
)
from teams.models import Team, default_team_id
from tests import factories

pytestmark = pytest.mark.django_db

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def figures(slug):
    """The statistics the dashboard shows, from the maintained tallies and from the pairs."""
    return {source: agreement_stats(Scope.named(slug), source=source) for source in ("tallies", "pairs")}


def no_drift(slug):
    """A recompute from scratch finds nothing to set right: counters, tallies and worker figures."""
    report = recompute_gold(Dataset.objects.get(slug=slug), fix=False)
    assert report.disagreements == 0 and report.overfull_pairs == 0
    assert report.tally_drift is not None and report.worker_tally_drift is not None
    assert report.tally_drift.keys == 0, report.tally_drift.summary()
    assert report.worker_tally_drift.keys == 0, report.worker_tally_drift.summary()
    lengths_and_words = tallies.check_and_rebuild(Dataset.objects.get(slug=slug), tallies.CORPUS, repair=False)
    assert lengths_and_words.keys == 0, lengths_and_words.summary()


def market_worker(make_worker, external_id):
    worker = make_worker(username=f"prolific-{external_id}")
    Worker.objects.filter(pk=worker.pk).update(market="prolific", external_id=external_id)
    worker.refresh_from_db()
    return worker


@pytest.fixture
def corpus(make_worker):
    """A dataset of its team with a study; a writer (market id WRITER0001) whose pair two others
    validated, and who validated three pairs of others; a session with device and market ids."""
    factories.genre("fiction")
    dataset = factories.dataset("erasable", team_id=default_team_id())
    study = Study.objects.create(slug="erasable", name="Erasable", dataset=dataset, completion_code="C0DE")
    person = market_worker(make_worker, "WRITER0001")
    others = [make_worker() for _ in range(4)]
    written = factories.pair(dataset, factories.premise(dataset), [E, E, N, E], author=person, validators=others)
    labelled = []
    for index in range(3):
        pair = factories.pair(dataset, factories.premise(dataset), [C], author=others[index], needs_validation=True)
        for label, worker in ((C, others[(index + 1) % 4]), (N, person), (C, others[(index + 2) % 4])):
            add_label(Pair.objects.get(pk=pair.pk), label, worker=worker)
        labelled.append(pair)
    StudySession.objects.create(
        study=study,
        worker=person,
        external_session_id="SESSION0001",
        market_participant_id="WRITER0001",
        device="device-cookie-0001",
    )
    DeviceSighting.objects.create(device="device-cookie-0001", worker=person)
    return dataset, study, person, written, labelled


def test_erasing_an_unknown_id_says_so_and_changes_nothing(corpus):
    before = (AuditEntry.objects.count(), ValidationLabel.objects.count(), ErasureRecord.objects.count())
    with pytest.raises(ParticipantNotFound, match="NOBODY"):
        erase_by_market_id("NOBODY", team_id=default_team_id())
    assert (AuditEntry.objects.count(), ValidationLabel.objects.count(), ErasureRecord.objects.count()) == before


def test_another_teams_researchers_cannot_erase_the_participant(corpus):
    other = Team.objects.create(slug="other-lab", name="Other lab")
    with pytest.raises(ParticipantNotFound):
        erase_by_market_id("WRITER0001", team_id=other.pk)
    assert Worker.objects.filter(external_id="WRITER0001").exists()


def test_keep_policy_keeps_contributions_pseudonymous_and_erases_the_ids(corpus):
    _dataset, _study, person, written, _labelled = corpus
    before = figures("erasable")
    record = erase_by_market_id("WRITER0001", team_id=default_team_id())
    person.refresh_from_db()
    session = StudySession.objects.get(worker=person)
    assert person.external_id == pseudonym("WRITER0001") and person.external_id.startswith(PSEUDONYM_PREFIX)
    assert person.user.username.startswith(PSEUDONYM_PREFIX)
    assert session.external_session_id == pseudonym("SESSION0001")
    assert session.device.startswith(PSEUDONYM_PREFIX)
    assert not DeviceSighting.objects.filter(worker=person).exists()
    assert record.policy == "keep" and record.subject_hash == pseudonym("WRITER0001")
    # The pair and the labels stay and count: no figure moved.
    assert Pair.objects.filter(pk=written.pk).exists()
    assert ValidationLabel.objects.filter(worker=person).count() == 4
    assert figures("erasable") == before
    no_drift("erasable")
    # Nothing in the log says the id any more, and the erasure is in it.
    assert not [entry for entry in AuditEntry.objects.all() if "WRITER0001" in str(entry.__dict__)]
    assert AuditEntry.objects.filter(action="participant.erased").exists()


def test_an_erased_participants_open_visit_closes_and_its_held_tasks_go_back(corpus):
    from collection.models import WritingClaim
    from crowd.models import ClaimStatus

    dataset, _study, person, _written, _labelled = corpus
    session = StudySession.objects.get(worker=person)
    claim = WritingClaim.objects.create(
        worker=person, premise=factories.premise(dataset), study_session=session, expires_at="2099-01-01T00:00Z"
    )
    erase_by_market_id("WRITER0001", team_id=default_team_id())
    session.refresh_from_db()
    claim.refresh_from_db()
    assert session.closed_at is not None and session.ended_as == "erased" and "erased" in session.closed_reason
    assert claim.status == ClaimStatus.RELEASED


def test_delete_policy_takes_labels_and_written_pairs_out_and_every_figure_equals_a_recompute(corpus):
    dataset, study, person, written, labelled = corpus
    Study.objects.filter(pk=study.pk).update(contributions_on_withdrawal="delete")
    record = erase_by_market_id("WRITER0001", team_id=default_team_id())
    assert not Pair.objects.filter(pk=written.pk).exists()  # the written pair left, its labels with it
    assert not ValidationLabel.objects.filter(worker=person).exists()
    for pair in labelled:
        pair.refresh_from_db()
        assert (pair.label_count, pair.contradiction_votes, pair.neutral_votes, pair.gold_label) == (3, 3, 0, C)
    assert record.counts["contributions.labels"] == 3 and record.counts["contributions.pairs"] == 1
    after = figures("erasable")
    no_drift("erasable")
    # From scratch: every tally rebuilt from the label table gives the same figures.
    tallies.check_and_rebuild(Dataset.objects.get(slug="erasable"), tallies.CORPUS, repair=True)
    tallies.check_and_rebuild(Dataset.objects.get(slug="erasable"), worker_tally.TALLY, repair=True)
    assert figures("erasable") == after
    assert worker_tally.worker_sums(Scope.of_dataset(dataset)).get(person.pk) is None


def test_the_access_download_holds_what_the_register_names_and_is_audited(corpus):
    _dataset, _study, person, written, _labelled = corpus
    data = download_participant_data(person, team_id=default_team_id())
    assert data["participant"]["market_id"] == "WRITER0001"
    assert [row["external_session_id"] for row in data["crowd.StudySession"]] == ["SESSION0001"]
    assert len(data["corpus.ValidationLabel"]) == 4
    assert [row["hypothesis"] for row in data["corpus.Pair"]] == [written.hypothesis]
    assert AuditEntry.objects.filter(action="participant.data_downloaded", subject_id=str(person.pk)).exists()
