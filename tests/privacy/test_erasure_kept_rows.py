"""The rows pages keep of a person's name and figures (the workers table, the worker-flag rows) go
with the person: erased in every scope, even where the person's identity stays for another team's
work, and never part of the access download (their sources are)."""

import pytest

from corpus.models import Label, Split, Worker
from corpus.scope import Scope
from crowd.models import Study, StudySession
from dashboard import worker_table
from dashboard.models import WorkerTableRow
from privacy.selectors import participant_data
from privacy.services import erase_by_market_id
from quality import flag_rows
from quality.models import WorkerFlagRow
from teams.models import Team
from tests import factories

pytestmark = pytest.mark.django_db

E, N = Label.ENTAILMENT, Label.NEUTRAL


def _labelled(slug: str, person, others, team=None):
    dataset = factories.dataset(slug)
    if team is not None:
        dataset.team = team
        dataset.save(update_fields=["team"])
    for _ in range(3):
        premise = factories.premise(dataset, split=Split.DEV)
        factories.pair(dataset, premise, [E, E, N, E, E], validators=[person, *others[:3]])
    study = Study.objects.create(slug=slug, name=slug, dataset=dataset, completion_code=slug.upper())
    StudySession.objects.create(study=study, worker=person, external_session_id=f"S-{slug}")
    return dataset


@pytest.mark.parametrize("elsewhere", [False, True], ids=["only here", "also in another team"])
def test_the_kept_rows_of_an_erased_person_go_in_every_scope(make_worker, elsewhere: bool) -> None:
    factories.genre("fiction")
    person = make_worker(username="prolific-KEPTROWS01")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="KEPTROWS01")
    others = [make_worker() for _ in range(4)]
    here = _labelled("kept-here", person, others)
    if elsewhere:
        _labelled("kept-there", person, others, team=Team.objects.create(name="Another lab"))
    for scope in (Scope.of_dataset(here), Scope.everything()):
        worker_table.recompute(scope)
        flag_rows.recompute(scope)
    assert WorkerTableRow.objects.filter(worker=person).exists()
    assert WorkerFlagRow.objects.filter(worker=person).exists()
    assert here.team_id is not None
    download = participant_data(person, here.team_id)
    assert not any("WorkerTableRow" in name or "WorkerFlagRow" in name for name in download)

    erase_by_market_id("KEPTROWS01", team_id=here.team_id)

    assert not WorkerTableRow.objects.filter(worker=person).exists()
    assert not WorkerFlagRow.objects.filter(worker=person).exists()
    # The others' rows stay until their page recomputes them.
    assert WorkerTableRow.objects.filter(worker=others[0]).exists()
