"""The researcher pages a lab cleans a collection with (workers, bonuses, imports, each adjudication
queue, a validation and a writing study's page) read as many statements on a corpus several times
larger: more premises (with and without a split), more pairs written and labelled by the same
crowd, more pairs marked for validation and more imports. Nothing is read once per pair, premise,
label, import or dataset row shown.

The crowd is `cost_factories.build` (two studies, five workers, six pairs, claims, bonuses) with
a catch trial served by its validation study; the corpus then grows in the same dataset."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Pair, Split
from corpus.validation_flags import set_validation_flags
from crowd.models import Study
from dashboard.models import WorkerTableScope
from importers.models import CorpusImport
from quality.models import ReferenceLabel, WorkerFlagScope
from validation import adjudication

from . import cost_factories, factories

pytestmark = pytest.mark.django_db


def statements(client, url):
    """The statements of a cold request (the figure cache emptied), and the SQL of each."""
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return [query["sql"] for query in captured.captured_queries]


def pages(writing, validation):
    yield reverse("dashboard:workers")
    yield reverse("dashboard:bonuses")
    yield reverse("dashboard:imports")
    yield reverse("dashboard:study", args=[validation.slug])
    yield reverse("dashboard:study", args=[writing.slug])
    for queue in adjudication.FILTERS:
        yield f"{reverse('dashboard:adjudication')}?queue={queue.slug}"


def grow(ds, copy, workers):
    """More of the corpus in `ds`: premises in train and without a split, pairs written and
    labelled by the crowd's workers (some marked for validation), and a finished import."""
    fiction = factories.genre("fiction")
    for index in range(4):
        premise = factories.premise(ds, fiction, Split.TRAIN, f"Grown premise {copy}-{index}.")
        factories.premise(ds, fiction, "", f"Unassigned premise {copy}-{index}.")
        written = factories.pair(
            ds, premise, f"Grown hypothesis {copy}-{index}.", [factories.E, factories.N, factories.E],
            author=workers[0], validators=workers[1:],
        )  # fmt: skip
        set_validation_flags(Pair.objects.filter(pk=written.pk), needs_validation=True)
    CorpusImport.objects.create(dataset=ds, source=f"grown-{copy}.jsonl", status="done")


@pytest.fixture
def crowd():
    ds, writing, validation, pairs = cost_factories.build("page-statements")
    ReferenceLabel.objects.create(pair=pairs["A"], label=cost_factories.E, is_catch_trial=True)
    Study.objects.filter(pk=validation.pk).update(catch_trial_share=0.2, is_active=True)
    return ds, writing, validation, pairs


def test_each_page_reads_as_many_statements_on_a_larger_corpus(client, researcher, crowd, settings):
    ds, writing, validation, pairs = crowd
    client.force_login(researcher)
    # The maintained worker-flag rows computed once (a first load computes them), then read as kept:
    # the pages read the rows they show (`test_the_first_load_computes_the_flag_rows_once` below).
    settings.DASHBOARD_CACHE_SECONDS = 600
    for url in pages(writing, validation):
        client.get(url)
    small = {url: statements(client, url) for url in pages(writing, validation)}
    workers = [
        pairs["A"].author,
        *(label.worker for label in pairs["A"].labels.filter(position__gt=1).order_by("position")),
    ]
    for copy in range(3):
        grow(ds, copy, workers)
    large = {url: statements(client, url) for url in pages(writing, validation)}
    grew = {url: (len(small[url]), len(large[url])) for url in small if len(small[url]) != len(large[url])}
    assert not grew, grew


def test_the_imports_page_counts_no_pair_or_premise_of_the_dataset(client, researcher, crowd):
    """The imports page's counts (premises without a split, pairs marked for validation) are the
    maintained tally's and a count of the premises waiting: no statement groups the pairs or counts
    a dataset's premises by joining them all."""
    ds, *_ = crowd
    grow(ds, 0, [None])
    client.force_login(researcher)
    read = statements(client, reverse("dashboard:imports"))
    assert not [sql for sql in read if 'FROM "collection_pair"' in sql], read
    assert not [sql for sql in read if 'LEFT OUTER JOIN "collection_premise"' in sql], read
    assert any("corpus_pairtally" in sql for sql in read), read
    page = client.get(reverse("dashboard:imports")).content.decode()
    row = page.split(f'<tr data-dataset="{ds.slug}">', 1)[1].split("</tr>", 1)[0]
    pairs = Pair.objects.filter(dataset=ds)
    train = pairs.filter(premise__split=Split.TRAIN)
    dev_test = pairs.filter(premise__split__in=[Split.DEV, Split.TEST])
    assert f"{train.filter(needs_validation=True).count()} of {train.count()}" in row, row
    assert f"{dev_test.filter(needs_validation=True).count()} of {dev_test.count()}" in row, row
    assert train.count() == 4 and dev_test.count() == 6
    assert f"{ds.slug} (4 without a split)" in page


def test_the_bonus_page_reads_the_flags_the_workers_page_computed(client, researcher, crowd, settings):
    """The bonus page marks flagged workers from the worker-quality rows in the figure cache, the
    ones the workers and adjudication pages share: once the workers page has computed them, the
    bonus page sums no worker tally (figures and seconds) of its own."""
    settings.DASHBOARD_CACHE_SECONDS = 600  # the figures as the workers page left them
    client.force_login(researcher)
    cache.clear()
    assert client.get(reverse("dashboard:workers")).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dashboard:bonuses"))
    assert response.status_code == 200 and response.context["totals"], "a study with bonuses and workers"
    read = [query["sql"] for query in captured.captured_queries]
    assert not [sql for sql in read if "corpus_workersecondstally" in sql], read


def test_the_first_load_computes_the_flag_rows_once(client, researcher, crowd, settings):
    """A scope whose worker-flag rows were never computed computes them on its first page (as many
    statements on a larger corpus); the next cold page reads the kept rows and groups no worker
    tally and no flagged worker's labels, and each page says when the flags were computed."""
    ds, _writing, _validation, pairs = crowd
    settings.DASHBOARD_CACHE_SECONDS = 600
    client.force_login(researcher)
    flagged_pages = [
        reverse("dashboard:workers"),
        reverse("dashboard:bonuses"),
        f"{reverse('dashboard:adjudication')}?queue=flagged",
    ]

    def first_load(url):
        WorkerFlagScope.objects.all().delete()
        WorkerTableScope.objects.all().delete()  # the workers table's rows are computed on a first load too
        return statements(client, url)

    small = {url: first_load(url) for url in flagged_pages}
    for url in flagged_pages:
        assert [sql for sql in small[url] if "corpus_workersecondstally" in sql], (url, small[url])
        kept = statements(client, url)
        assert not [sql for sql in kept if "corpus_workersecondstally" in sql], (url, kept)
        # The flagged queue's count is the one kept with the flags (counted by the first adjudication
        # page), not a grouping of their labels on each page; the workers page never counts it.
        counting = [sql for sql in small[url] if "count(DISTINCT pair_id)" in sql]
        assert bool(counting) == ("adjudication" in url), (url, small[url])
        assert not [sql for sql in kept if "count(DISTINCT pair_id)" in sql], kept
        assert 'id="flags-as-of"' in client.get(url).content.decode(), url
    grown = [pairs["A"].author, *(label.worker for label in pairs["A"].labels.filter(position__gt=1))]
    for copy in range(3):
        grow(ds, copy, grown)
    large = {url: first_load(url) for url in flagged_pages}
    grew = {url: (len(small[url]), len(large[url])) for url in small if len(small[url]) != len(large[url])}
    assert not grew, grew
