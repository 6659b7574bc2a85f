"""The workers, bonuses, adjudication, imports and study pages read each region of the page in its
own few statements, sized by the rows it shows: the same number with three times the crowd
(studies, workers, pairs, catch pools, bonuses, imports), and no more than the regions need. The
workers table and the worker-quality table read their count with their kept scope row, the quality
rows carry their workers' exclusions, the flagged queue reads the flags with their time, and the
bonus page asks once whether its study has a market connection. A study's page reads its market
connection with the study, its pool's genres once and what its pool still wants once (the pair
tally's sums for a labelling study), shared by the figures and the pre-launch check.

The crowd is `cost_factories.build` (two studies, five workers, six pairs, claims, bonuses), with a
catch trial marked in each dataset and served by each validation study, built once and then twice
more in datasets of their own."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from collection.models import PremiseImport
from corpus.models import ImportStatus, Pair, Worker, WorkerExclusion
from crowd.models import Study, StudySession
from quality.models import BonusEntry, BonusKind, ReferenceLabel
from teams.models import Team
from tests.present import present
from validation import adjudication

from . import cost_factories

pytestmark = pytest.mark.django_db

# Statements of a cold page (figure cache emptied, the kept worker tables fresh), session and
# user included.
STATEMENTS = {
    "workers": 19,
    # The unpaid bonuses in two: their groups per worker's session and cause, from the ledger's tally
    # (the pay form's count, sum and fingerprint, the summaries); the page's rows. The payment
    # machine's owed and paid figures in one more, from the tally too.
    "bonuses": 19,
    "flagged queue": 12,
    "imports": 8,
    "validation study": 19,
    "writing study": 16,
}
# Statements of the same pages asked again within the figure cache's interval: the figures it keeps
# per study (where the sessions got to and their times, live claims, arrivals' checks, consent
# answers and withdrawals; the bonus page's catch figures) are not read again, while the money
# (tasks and bonuses owed, approved, paid) and what the pre-launch check reads are.
WARM_STATEMENTS = {
    "workers": 7,  # the quality rows, the artifact monitor, the model annotators' calibrations, which annotators check writing, the writers' typing too
    "bonuses": 12,  # its catch pools and participants are the figure cache's too
    "validation study": 10,
    "writing study": 7,
}


def crowd(copy):
    ds, _writing, validation, pairs = cost_factories.build(f"regions-{copy}", prefix=f"r{copy}-")
    ReferenceLabel.objects.create(pair=pairs["A"], label=cost_factories.E, is_catch_trial=True)
    Study.objects.filter(pk=validation.pk).update(catch_trial_share=0.2, is_active=True)
    # An import of each kind of state the imports page lists (a queued one names what it waits for).
    for state in (ImportStatus.DONE, ImportStatus.RUNNING, ImportStatus.QUEUED):
        PremiseImport.objects.create(
            dataset=ds, genre=pairs["A"].premise.genre, source=f"r{copy}-{state}.txt", status=state
        )
    return ds


def first_studies_take_the_others_sessions():
    """The sessions of copies 2 and 3 of each study (with their claims) moved into the same study of
    copy 1, their bonuses earned again there on copy 1's pairs (the ledger is append-only): its
    page reads three times the crowd."""
    for kind in ("writing", "validation"):
        study = Study.objects.get(slug=f"r1-{kind}")
        others = Study.objects.filter(slug__in=[f"r2-{kind}", f"r3-{kind}"])
        StudySession.objects.filter(study__in=others).update(study=study)
        for entry in BonusEntry.objects.filter(study__in=others, kind=BonusKind.EARNED).select_related("pair"):
            BonusEntry.objects.create(
                kind=BonusKind.EARNED,
                worker_id=entry.worker_id,
                study=study,
                study_session_id=entry.study_session_id,
                pair=Pair.objects.get(dataset=study.dataset, hypothesis=present(entry.pair).hypothesis),
                amount=entry.amount,
                currency=entry.currency,
                cause=entry.cause,
                reason=entry.reason,
            )


def pages():
    yield "workers", reverse("dashboard:workers")
    yield "bonuses", reverse("dashboard:bonuses")
    for queue in adjudication.FILTERS:
        name = "flagged queue" if queue.slug == "flagged" else f"{queue.slug} queue"
        yield name, f"{reverse('dashboard:adjudication')}?queue={queue.slug}"
    yield "imports", reverse("dashboard:imports")
    yield "validation study", reverse("dashboard:study", args=["r1-validation"])
    yield "writing study", reverse("dashboard:study", args=["r1-writing"])


def statements(client, url):
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def warm_statements(client, url):
    cache.clear()
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def test_each_region_is_read_once_whatever_the_crowd(client, researcher, settings):
    client.force_login(researcher)
    crowd(1)
    settings.DASHBOARD_CACHE_SECONDS = 600  # the kept worker tables as a first load computed them
    for _, url in pages():
        client.get(url)
    small = {name: statements(client, url) for name, url in pages()}
    small_warm = {name: warm_statements(client, url) for name, url in pages() if name in WARM_STATEMENTS}
    crowd(2)
    crowd(3)
    first_studies_take_the_others_sessions()
    for _, url in pages():
        client.get(url)
    large = {name: statements(client, url) for name, url in pages()}
    large_warm = {name: warm_statements(client, url) for name, url in pages() if name in WARM_STATEMENTS}
    assert small == large, (small, large)
    assert {name: large[name] for name in STATEMENTS} == STATEMENTS, large
    assert small_warm == large_warm == WARM_STATEMENTS, (small_warm, large_warm)


def test_the_quality_rows_mark_the_exclusions_of_the_scope_teams_only(client, researcher, settings):
    client.force_login(researcher)
    ds = crowd(1)
    settings.DASHBOARD_CACHE_SECONDS = 600
    workers = list(Worker.objects.order_by("pk"))
    WorkerExclusion.objects.create(worker=workers[0], team_id=ds.team_id)
    elsewhere = Team.objects.create(slug="elsewhere", name="Elsewhere")
    WorkerExclusion.objects.create(worker=workers[1], team=elsewhere)
    # Every dataset: any team's exclusion marks the worker.
    context = client.get(reverse("dashboard:workers")).context
    shown = {row.worker.pk for row in context["quality"]}
    assert context["excluded"] == {workers[0].pk, workers[1].pk} & shown
    assert context["quality"].paginator.count == 5
    # One dataset: its team's exclusions only.
    context = client.get(f"{reverse('dashboard:workers')}?dataset={ds.slug}").context
    assert context["excluded"] == {workers[0].pk} & {row.worker.pk for row in context["quality"]}
