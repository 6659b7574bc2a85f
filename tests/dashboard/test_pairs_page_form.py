"""The Pairs page's form (genres, writing studies) and bulk history come from one statement, kept in
the cache until a writer of those rows changes one; the model writing checks are read only when a
study of the page's datasets turned them on; the guesser flag reads the kept flagged workers and
never counts their pairs; a large genre with a pattern an index holds is found from the pattern's
pairs."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Pair, Premise
from corpus.scope import EVERYTHING, Scope
from crowd.models import Study, TaskKind
from dashboard.queries import pairs as queries
from dashboard.queries.pair_page import pair_rows
from dashboard.queries.pairs import PATTERNS, PairFilters, matching_pairs
from model_annotators import services as annotator_services
from model_annotators.models import AnnotatorKind, ModelAnnotator, Outcome, Verdict, WritingCheck
from quality import flag_rows
from quality.models import WorkerFlagScope
from tests import factories as shared_factories

from . import factories
from .test_pairs_filters_scale import grow

pytestmark = pytest.mark.django_db

# A page of pairs without filters, cold (the cache emptied): the session, the user, the datasets,
# the form and bulk history, the page's rows. Warm, the session and the form and history come from
# the cache.
COLD = 5
WARM = 3
# Unanimous five-label pairs beside the pattern's few: a crowd's corpus is mostly these.
UNANIMOUS = 4_000


def page(client, query=None):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dashboard:pairs"), query or {})
    assert response.status_code == 200
    return response.content.decode(), [entry["sql"] for entry in captured.captured_queries]


def test_the_form_and_history_are_read_once_and_kept_until_a_writer_changes_them(client, researcher):
    ds, _ = factories.worker_corpus()
    client.force_login(researcher)
    cache.clear()
    html, cold = page(client)
    assert len(cold) == COLD, cold
    html, warm = page(client)
    assert len(warm) == WARM, warm
    assert not any("collection_study" in sql or "dashboard_pairbulkaction" in sql for sql in warm), warm
    # A genre and a writing study written since are offered at once, from the kept form's next read.
    shared_factories.genre("speeches")
    Study.objects.create(slug="w-new", name="New writing", dataset=ds, task_kind=TaskKind.WRITING, completion_code="C")
    html, _ = page(client)
    assert 'value="speeches"' in html and 'value="w-new"' in html
    # A bulk action and its undo are in the history the moment they are done.
    query = {"writer": "alice"}
    expected = Pair.objects.filter(author__user__username="alice").count()
    response = client.post(
        reverse("dashboard:pairs_bulk"), {**query, "action": "exclude", "expected": expected, "reason": "test"}
    )
    assert response.status_code == 302
    html, _ = page(client, query)
    assert "of writer alice: kept out of the next snapshots" in html and "data-undo=" in html
    token = html.split('data-undo="', 1)[1].split('"', 1)[0]
    client.post(reverse("dashboard:pairs_bulk_undo"), {"token": token})
    html, _ = page(client, query)
    assert f'data-undo="{token}"' not in html and f"({expected} pairs)" in html


def test_each_team_is_offered_its_own_studies_and_history_from_the_kept_form(client, django_user_model):
    """The kept form is per set of research teams: a researcher of another team never sees a team's
    writing studies or bulk actions, whichever of them read the form first."""
    from base.permissions import ensure_researcher_group
    from dashboard.models import PairBulkAction
    from teams.models import Membership, Role, Team

    cache.clear()
    researchers = {}
    for slug in ("team-a", "team-b"):
        team = Team.objects.create(slug=slug, name=slug)
        user = django_user_model.objects.create_user(f"researcher-{slug}", is_staff=True)
        user.groups.add(ensure_researcher_group())
        Membership.objects.create(team=team, user=user, role=Role.RESEARCHER)
        ds = shared_factories.dataset(f"data-{slug}")
        ds.team = team
        ds.save()
        Study.objects.create(
            slug=f"w-{slug}", name=slug, dataset=ds, task_kind=TaskKind.WRITING, completion_code="C", team=team
        )
        researchers[slug] = (user, team)
    client.force_login(researchers["team-b"][0])
    page(client)  # team B's form kept first
    done = PairBulkAction.objects.create(
        token="tok-a", kind="exclude", actor=researchers["team-a"][0], described="a's", reason="r", changed=1
    )
    done.teams.set([researchers["team-a"][1]])
    html, _ = page(client)
    assert 'value="w-team-b"' in html and 'value="w-team-a"' not in html and 'data-bulk="tok-a"' not in html
    client.force_login(researchers["team-a"][0])
    html, _ = page(client)
    assert 'value="w-team-a"' in html and 'value="w-team-b"' not in html and 'data-bulk="tok-a"' in html


def test_the_writing_checks_are_read_only_when_a_study_of_the_page_turned_them_on(client, researcher):
    ds, _ = factories.worker_corpus()
    client.force_login(researcher)
    cache.clear()
    html, off = page(client)
    assert len(off) == COLD and not any("model_annotators_writingcheck" in sql for sql in off), off
    annotator = ModelAnnotator.objects.create(
        name="checker", dataset=ds, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    pair = Pair.objects.filter(dataset=ds).order_by("pk").first()
    assert pair is not None
    WritingCheck.objects.create(
        annotator=annotator,
        pair=pair,
        asked_with="v1",
        outcome=Outcome.LABELLED,
        verdict=Verdict.NONSENSE,
        intended_label=pair.author_label,
    )
    study = Study.objects.create(slug="checked", name="c", dataset=ds, task_kind=TaskKind.WRITING, completion_code="C")
    annotator_services.set_model_use(study, writing_checks_annotator=annotator)
    html, on = page(client)
    assert any("model_annotators_writingcheck" in sql for sql in on), on
    assert 'data-stat="writing-check"' in html and "model checker:" in html


def test_the_guesser_flag_reads_the_kept_flagged_workers_without_counting_their_pairs(client, researcher):
    factories.worker_corpus()
    client.force_login(researcher)
    flag_rows.recompute(EVERYTHING)
    _, sqls = page(client, {"flag": "guesser"})
    assert not any("count(DISTINCT" in sql for sql in sqls), sqls
    assert WorkerFlagScope.objects.get(key=EVERYTHING.datasets_key).flagged_pairs is None


def test_a_large_genre_with_a_pattern_selects_what_its_premises_would(corpus_of_genres, monkeypatch):
    """A genre too large to be found from its premises, with a pattern an index holds, is found from
    the pattern's pairs: the same pairs, page by page, at every split and gold label."""
    ds = corpus_of_genres
    scope = Scope.of_dataset(ds)
    for genre in ("fiction", "letters"):
        for split in ("", "dev", "train"):
            for gold in ("", "entailment", "-"):
                for pattern in PATTERNS:
                    filters = PairFilters(genre=genre, split=split, gold=gold, pattern=pattern)
                    monkeypatch.setattr(queries, "GENRE_WALK_FROM", 10**9)
                    found = matching_pairs(scope, filters, read_ids=True)
                    from_premises = list(found.order_by("pk").values_list("pk", flat=True))
                    rows = [row["pk"] for row in pair_rows(found, page_size=2)[0]]
                    monkeypatch.setattr(queries, "GENRE_WALK_FROM", 0)
                    walked = matching_pairs(scope, filters, read_ids=True)
                    assert list(walked.order_by("pk").values_list("pk", flat=True)) == from_premises, filters
                    assert [row["pk"] for row in pair_rows(walked, page_size=2)[0]] == rows, filters


def test_the_pairs_whose_gold_differs_from_their_authors_are_read_from_their_index(corpus_of_genres):
    """The pattern's pairs, read for a large genre, come from `pair_gold_ne_author` (a few hundred
    in a corpus), not from every pair."""
    own = Pair.objects.filter(PATTERNS["gold_ne_author"][1]).values("pk")
    sql, params = own.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "pair_gold_ne_author" in plan, plan


@pytest.fixture
def corpus_of_genres():
    ds, workers = factories.worker_corpus()
    grow(ds, workers, 1)
    return ds


@pytest.mark.parametrize("genre", ["", "fiction"])
def test_the_pairs_split_two_two_one_are_read_from_their_index(corpus_of_genres, monkeypatch, genre):
    """The pattern's first page, alone and with a genre walked in id order, reads `pair_split_221`
    (a few in a corpus), not every five-label pair's votes. The corpus holds as many unanimous pairs
    as a crowd's (on a hundred pairs the five-label index is a page as the pattern's is), and its
    statistics are taken: another test's, with other datasets, price this dataset's pairs at one row,
    and the dataset's own five-label index then looks cheapest at any size."""
    monkeypatch.setattr(queries, "GENRE_WALK_FROM", 0)
    premise = Premise.objects.filter(dataset=corpus_of_genres, genre__slug="fiction").first()
    Pair.objects.bulk_create(
        Pair(dataset=corpus_of_genres, premise=premise, pair_id=f"unanimous-{number}", hypothesis="All agree.",
             author_label="entailment", label_count=5, entailment_votes=5, gold_label="entailment")
        for number in range(UNANIMOUS)
    )  # fmt: skip
    page = matching_pairs(Scope.of_dataset(corpus_of_genres), PairFilters(genre=genre, pattern="split_221"))
    sql, params = page.order_by("pk").values("pk")[:51].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE collection_pair, collection_premise, collection_genre")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "pair_split_221" in plan, plan
    assert sorted(page.values_list("pk", flat=True)) == sorted(
        pair.pk
        for pair in Pair.objects.filter(dataset=corpus_of_genres, label_count=5)
        if sorted((pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes)) == [1, 2, 2]
        and (not genre or pair.premise.genre.slug == genre)
    )
