"""The pair browser (find and read pairs with who labelled them) and the reported-premise queue."""

import pytest
from django.urls import reverse

from collection.models import PremiseReport
from corpus.models import Premise, PremiseStatus
from corpus.scope import Scope
from dashboard.queries.pair_page import pair_rows
from dashboard.queries.pairs import PairFilters, matching_pairs
from tests.present import present

from . import factories
from .factories import C, E

pytestmark = pytest.mark.django_db


@pytest.fixture
def browsed():
    ds, workers = factories.worker_corpus()  # alice wrote h1 [E E E N E], h2 [N C C C N], h3 [C E N C E]
    fiction = factories.genre("fiction")
    extra = factories.premise(ds, fiction, "train", "A grey cat sleeps on a warm windowsill.")
    factories.pair(ds, extra, "An animal rests.", [E])
    return ds, workers


def page_of(ds, filters, page_size=50):
    """The Pairs page's rows for these filters, as the page reads them."""
    return pair_rows(matching_pairs(Scope.of_dataset(ds), filters), after=filters.after, page_size=page_size)


def found(ds, **query):
    page, _ = page_of(ds, PairFilters.from_query(query))
    return sorted(row["hypothesis"] for row in page)


def test_each_filter_finds_exactly_its_pairs(browsed):
    ds, _workers = browsed
    assert found(ds) == ["An animal rests.", "h1", "h2", "h3"]
    assert found(ds, text="windowsill") == ["An animal rests."]  # premise text
    assert found(ds, text="h2") == ["h2"]  # hypothesis text
    assert found(ds, split="train") == ["An animal rests."]
    assert (
        found(ds, gold=E) == ["h1"]
        and found(ds, gold=C) == ["h2"]
        and found(ds, gold="-") == ["An animal rests.", "h3"]
    )
    assert found(ds, pattern="split_221") == ["h3"]  # C E N C E: 2-2-1
    assert found(ds, pattern="gold_ne_author") == ["h2"]  # author N, gold C
    assert found(ds, worker="alice") == ["h1", "h2", "h3"]  # as the author
    assert found(ds, worker="erin") == ["h1", "h2", "h3"]  # as a validator
    assert found(ds, worker="nobody") == []


def test_the_ids_the_page_reads_first_find_what_the_subqueries_find(browsed):
    """The page reads a worker's (or a flag's, a study's) pairs once, as the server's array literal:
    the same pairs as the subquery a bulk action takes, none for nobody."""
    ds, _ = browsed
    for query in ({"worker": "alice"}, {"worker": "erin"}, {"worker": "nobody"}, {"worker": "erin", "gold": C}):
        filters = PairFilters.from_query(query)
        read = matching_pairs(Scope.of_dataset(ds), filters, read_ids=True)
        assert "unnest" in str(read.query)  # the ids went in as a literal
        assert sorted(read.values_list("hypothesis", flat=True)) == found(ds, **query), query
    assert found(ds, worker="erin", gold=C) == ["h2"]


def test_pages_go_by_pair_id(browsed):
    ds, _ = browsed
    first, after = page_of(ds, PairFilters(), page_size=3)
    rest, end = page_of(ds, PairFilters(after=present(after)), page_size=3)
    assert len(first) == 3 and len(rest) == 1 and end is None
    assert {row["pk"] for row in first}.isdisjoint({row["pk"] for row in rest})


def test_the_page_shows_every_label_with_who_gave_it(client, researcher, browsed, django_assert_max_num_queries):
    _ds, _workers = browsed
    client.force_login(researcher)
    with django_assert_max_num_queries(12):
        response = client.get(reverse("dashboard:pairs"), {"pattern": "split_221"})
    html = response.content.decode()
    assert response.status_code == 200 and "h3" in html and "h1</td>" not in html
    row = html[html.index('data-pair="') :]
    for name in ("alice", "bob", "carol", "dan", "erin"):
        assert name in row
    assert row.count('data-position="') == 5


def test_unknown_filter_values_are_said_not_applied(client, researcher, browsed):
    client.force_login(researcher)
    html = client.get(reverse("dashboard:pairs"), {"gold": "maybe", "pattern": "nope"}).content.decode()
    assert "Unknown filter value(s) ignored: maybe, nope" in html
    assert html.count('<tr data-pair="') == 4


def test_a_known_split_is_applied_and_not_called_unknown(client, researcher, browsed):
    client.force_login(researcher)
    html = client.get(reverse("dashboard:pairs"), {"split": "test"}).content.decode()
    assert "Unknown filter value" not in html
    html = client.get(reverse("dashboard:pairs"), {"split": "someday"}).content.decode()
    assert "Unknown filter value(s) ignored: someday." in html


@pytest.fixture
def reported(make_worker):
    ds = factories.dataset()
    premise = factories.premise(ds, factories.genre("fiction"), "dev", "Teh sentnce is garbled beyond reading.")
    Premise.objects.filter(pk=premise.pk).update(status=PremiseStatus.HELD)
    PremiseReport.objects.create(premise=premise, worker=make_worker(), message="Typos everywhere")
    return premise


def act(client, premise, **data):
    return client.post(reverse("dashboard:report_action", args=[premise.pk]), data)


def test_reports_are_listed_with_their_reasons(client, researcher, reported):
    client.force_login(researcher)
    html = client.get(reverse("dashboard:reports")).content.decode()
    assert "Typos everywhere" in html and "Teh sentnce" in html


@pytest.mark.parametrize("action, status", [("release", PremiseStatus.AVAILABLE), ("retire", PremiseStatus.RETIRED)])
def test_release_and_retire_resolve_the_reports(client, researcher, reported, action, status):
    client.force_login(researcher)
    act(client, reported, action=action)
    reported.refresh_from_db()
    assert reported.status == status
    assert not PremiseReport.objects.filter(resolved=False).exists()
    assert "Typos everywhere" not in client.get(reverse("dashboard:reports")).content.decode()


def test_editing_corrects_the_text_unless_pairs_were_written_on_it(client, researcher, reported):
    client.force_login(researcher)
    act(client, reported, action="edit", text="  The sentence is  readable now. ")
    reported.refresh_from_db()
    assert (reported.text, reported.status) == ("The sentence is readable now.", PremiseStatus.AVAILABLE)
    factories.pair(reported.dataset, reported, "Something is readable.", [E])
    response = act(client, reported, action="edit", text="Another text.")
    reported.refresh_from_db()
    assert reported.text == "The sentence is readable now."
    assert "1 pair(s) were written against the old text" in client.get(response.url).content.decode()


def test_only_researchers_act_on_reports(client, reported, make_worker):
    response = act(client, reported, action="retire")
    assert response.status_code == 302 and "/accounts/login/" in response.url
    client.force_login(make_worker().user)
    assert act(client, reported, action="retire").status_code == 403
    assert client.get(reverse("dashboard:pairs")).status_code == 403
    reported.refresh_from_db()
    assert reported.status == PremiseStatus.HELD


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_dataset_and_typed_filters_go_together_in_one_find(live_server, page, make_researcher, browsed):
    import re

    ds, _ = browsed
    make_researcher(username="lin", password="research-pass-1")
    page.goto(f"{live_server.url}/dashboard/pairs/")
    page.fill("#id_username", "lin")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/pairs/$"))
    assert page.locator("form.scope").count() == 0  # one form: a second would send only its own fields
    page.fill("#f-text", "animal")
    page.select_option("#scope-dataset", ds.slug)
    page.click("#pair-filters button[type=submit]")
    page.wait_for_url(re.compile(r".*text=animal.*"))
    assert f"dataset={ds.slug}" in page.url
    assert page.locator("#table-pairs tbody tr").all_inner_texts() and all(
        "An animal rests." in row for row in page.locator("#table-pairs tbody tr").all_inner_texts()
    )
