"""annotation_site.compiled_queries: a queryset compiled once per shape, bound to each call's values."""

import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import NotSupportedError, connection, transaction
from django.db.models import F
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation_site.compiled_queries import CompiledQuery, _positional
from corpus.models import Dataset, Label, Pair
from crowd.models import ClaimStatus
from tests import factories
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def _pairs_of(shape, values):
    pairs = Pair.objects.filter(dataset_id=values["dataset"], created_at__lte=values["until"])
    if shape == "validated":
        pairs = pairs.filter(label_count__gte=2)
    return pairs.order_by("id").values_list("pair_id")


def test_every_bind_returns_what_the_queryset_returns_for_its_own_values():
    first, second = factories.dataset("first"), factories.dataset("second")
    for dataset in (first, second):
        premise = factories.premise(dataset)
        factories.pair(dataset, premise, [Label.ENTAILMENT, Label.NEUTRAL])
        factories.pair(dataset, premise, [Label.NEUTRAL])
    compiled = CompiledQuery(_pairs_of)
    built = []
    counting = CompiledQuery(lambda shape, values: built.append(shape) or _pairs_of(shape, values))
    now = timezone.now()
    for shape in ("all", "validated"):
        for dataset in (first, second, first):
            for until in (now, now - timedelta(days=1)):
                values = {"dataset": dataset.pk, "until": until}
                expected = list(_pairs_of(shape, values))
                assert compiled.fetch(shape, **values) == expected
                assert counting.fetch(shape, **values) == expected
    # Built once per shape whatever the values (twice over: with two sets of stand-ins, whose
    # differing parameters are the slots).
    assert built == ["all", "all", "validated", "validated"]


def test_a_value_the_statement_does_not_carry_as_a_parameter_is_refused():
    # A value written into the SQL's text: binding the first caller's value for everyone after
    # would be wrong, so it is refused when compiled.
    folded = CompiledQuery(
        lambda shape, values: Pair.objects.extra(where=[f"label_count < {values['limit']}"]).values_list("pk")
    )
    with pytest.raises(ImproperlyConfigured, match="does not take limit as parameters"):
        folded.fetch(None, limit=3)
    with pytest.raises(ImproperlyConfigured, match="ints, datetimes, uuids and lists of them only"):
        CompiledQuery(_pairs_of).fetch("all", dataset="first", until=timezone.now())


def test_a_list_binds_item_by_item_and_its_length_is_part_of_the_shape():
    dataset = factories.dataset("first")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, [Label.NEUTRAL]) for _ in range(4)]
    built = []
    compiled = CompiledQuery(
        lambda shape, values: (
            built.append(len(values["pairs"]))
            or Pair.objects.filter(pk__in=values["pairs"], label_count__gte=values["least"])
            .order_by("pk")
            .values_list("pk")
        )
    )
    ids = [pair.pk for pair in pairs]
    for chosen in ([ids[0], ids[2]], [ids[3], ids[1]], ids[1:], [ids[0], ids[0]], (ids[2],)):
        assert compiled.fetch(None, pairs=chosen, least=1) == [(pk,) for pk in sorted(set(chosen))]
        assert compiled.fetch(None, pairs=chosen, least=2) == []
    assert built == [2, 2, 3, 3, 1, 1]  # one (double) build per length
    # An empty list has no `IN ()` to compile: the queryset answers as the ORM does.
    assert compiled.fetch(None, pairs=[], least=1) == []


def test_a_constant_equal_to_a_stand_in_stays_a_constant():
    # The slots are the parameters that differ between two builds with different stand-ins: a
    # constant of the statement that happens to equal one is never one of them.
    from annotation_site import compiled_queries

    dataset = factories.dataset("first")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, [Label.NEUTRAL] * count) for count in (1, 2, 3)]
    constant = compiled_queries._STAND_IN_INT  # the first stand-in of the first build

    def build(shape, values):
        return (
            Pair.objects.filter(label_count__gte=values["least"]).exclude(pk=constant).order_by("pk").values_list("pk")
        )

    compiled = CompiledQuery(build)
    for least in (1, 2, 3):
        expected = list(build(None, {"least": least}))
        assert compiled.fetch(None, least=least) == expected
        assert {pk for (pk,) in expected} >= {pair.pk for pair in pairs[least - 1 :] if pair.pk != constant}


def _claims_of(shape, values):
    claims = ValidationClaim.objects.filter(worker_id=values["worker"], batch=values["batch"])
    if shape == "locked":
        claims = claims.select_for_update(of=("self",))
    return claims.select_related("pair__dataset", "pair__premise__genre", "study_session__study").order_by("id")


def _claims(dataset, worker, pairs, batch):
    return [
        ValidationClaim.objects.create(
            worker=worker,
            pair=pair,
            batch=batch,
            status=ClaimStatus.OPEN,
            expires_at=timezone.now() + timedelta(hours=1),
        )
        for pair in pairs
    ]


def test_objects_are_the_instances_the_queryset_gives_with_their_related_rows_and_no_further_query(make_worker):
    dataset = factories.dataset("first")
    premise = factories.premise(dataset)
    pairs = [
        factories.pair(dataset, premise, [label]) for label in (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION)
    ]
    first, second = make_worker("first"), make_worker("second")
    batches = {first: uuid.uuid4(), second: uuid.uuid4()}
    _claims(dataset, first, pairs[:2], batches[first])
    _claims(dataset, second, pairs[1:], batches[second])
    compiled = CompiledQuery(_claims_of)
    for worker in (first, second, first):
        values = {"worker": worker.pk, "batch": batches[worker]}
        expected = list(_claims_of("plain", values))
        with CaptureQueriesContext(connection) as queries:
            got = compiled.objects("plain", **values)
            seen = [
                (c.pk, c.batch, c.status, c.pair.pair_id, c.pair.dataset.slug, c.pair.premise.genre.pk, c.study_session)
                for c in got
            ]
        assert len(queries) == 1  # the related rows came with the claims, as select_related's do
        assert seen == [
            (c.pk, c.batch, c.status, c.pair.pair_id, c.pair.dataset.slug, c.pair.premise.genre.pk, c.study_session)
            for c in expected
        ]
        assert all(not claim._state.adding for claim in got)
    # Another worker's batch, or a batch nobody has: nothing.
    assert compiled.objects("plain", worker=second.pk, batch=batches[first]) == []
    assert compiled.objects("plain", worker=first.pk, batch=uuid.uuid4()) == []


def _refusal(read):
    try:
        read()
    except TransactionManagementError as refused:
        return str(refused)
    return None


@pytest.mark.django_db(transaction=True)
def test_a_compiled_locking_read_is_refused_outside_a_transaction_as_the_orm_refuses_it(make_worker):
    dataset = factories.dataset("first")
    worker = make_worker("first")
    batch = uuid.uuid4()
    _claims(dataset, worker, [factories.pair(dataset, factories.premise(dataset), [Label.NEUTRAL])], batch)
    compiled = CompiledQuery(_claims_of)
    values = {"worker": worker.pk, "batch": batch}
    with transaction.atomic():
        assert len(compiled.objects("locked", **values)) == 1
    # PostgreSQL refuses a lock outside a transaction; SQLite, which takes no row locks, does not.
    refused = _refusal(lambda: compiled.objects("locked", **values))
    assert refused == _refusal(lambda: list(_claims_of("locked", values)))
    assert (refused is not None) == connection.features.has_select_for_update


def test_objects_of_a_query_that_gives_other_rows_than_instances_are_refused():
    with pytest.raises(ImproperlyConfigured, match="reads model instances"):
        CompiledQuery(_pairs_of).objects("all", dataset=1, until=timezone.now())
    prefetching = CompiledQuery(lambda shape, values: Pair.objects.filter(pk=values["pair"]).prefetch_related("labels"))
    with pytest.raises(ImproperlyConfigured, match="does not prefetch"):
        prefetching.objects(None, pair=1)


def _prepared_statements():
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement, custom_plans + generic_plans FROM pg_prepared_statements")
        return {name: (statement, runs) for name, statement, runs in cursor.fetchall()}


@pytest.mark.postgres
def test_a_prepared_read_is_prepared_once_per_session_and_gives_the_querysets_rows(make_worker):
    dataset = factories.dataset("first")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, [label]) for label in (Label.ENTAILMENT, Label.NEUTRAL)]
    worker = make_worker("first")
    batch = uuid.uuid4()
    _claims(dataset, worker, pairs, batch)
    prepared = CompiledQuery(_claims_of, prepare=True)
    values = {"worker": worker.pk, "batch": batch}
    expected = [(c.pk, c.pair.pair_id, c.pair.premise.genre.pk) for c in _claims_of("plain", values)]
    before = set(_prepared_statements())
    for _ in range(7):  # past PostgreSQL's five custom plans, onto its generic one
        with CaptureQueriesContext(connection) as queries:
            got = prepared.objects("plain", **values)
        assert [(c.pk, c.pair.pair_id, c.pair.premise.genre.pk) for c in got] == expected
        assert len(queries) == 1 and queries[0]["sql"].startswith("EXECUTE nli_compiled_")
    new = {name: kept for name, kept in _prepared_statements().items() if name not in before}
    assert len(new) == 1  # one PREPARE for seven reads
    ((statement, runs),) = new.values()
    assert runs == 7 and '"validation_validationclaim"."worker_id" = $' in statement
    # Another worker's batch through the same prepared statement: nothing.
    assert prepared.objects("plain", worker=worker.pk, batch=uuid.uuid4()) == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_new_database_session_prepares_the_read_again():
    dataset = factories.dataset("first")
    factories.pair(dataset, factories.premise(dataset), [Label.NEUTRAL])
    prepared = CompiledQuery(_pairs_of, prepare=True)
    values = {"dataset": dataset.pk, "until": timezone.now()}
    expected = list(_pairs_of("all", values))
    assert prepared.fetch("all", **values) == expected
    connection.close()  # as CONN_MAX_AGE or a lost connection ends a session: its statements go with it
    assert prepared.fetch("all", **values) == expected
    assert len(_prepared_statements()) == 1


def test_a_read_runs_as_plain_sql_where_prepared_statements_are_off_or_not_asked_for(settings):
    dataset = factories.dataset("first")
    factories.pair(dataset, factories.premise(dataset), [Label.NEUTRAL])
    values = {"dataset": dataset.pk, "until": timezone.now()}
    settings.DATABASE_PREPARED_STATEMENTS = False
    for compiled in (CompiledQuery(_pairs_of, prepare=True), CompiledQuery(_pairs_of)):
        with CaptureQueriesContext(connection) as queries:
            assert compiled.fetch("all", **values) == list(_pairs_of("all", values))
        assert queries[0]["sql"].startswith("SELECT")
    settings.DATABASE_PREPARED_STATEMENTS = True
    with CaptureQueriesContext(connection) as queries:
        CompiledQuery(_pairs_of).fetch("all", **values)
    assert queries[0]["sql"].startswith("SELECT")  # not asked for: never prepared


def test_a_literal_percent_survives_preparing():
    dataset = factories.dataset("first")
    premise = factories.premise(dataset)
    for label in (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION):
        factories.pair(dataset, premise, [label])

    def odd_pairs(shape, values):
        # `%` is the modulo operator in the SQL, `%%` in Django's compiled text.
        return (
            Pair.objects.filter(dataset_id=values["dataset"])
            .alias(odd=F("id") % 2)
            .filter(odd=1)
            .order_by("id")
            .values_list("pk")
        )

    values = {"dataset": dataset.pk}
    assert CompiledQuery(odd_pairs, prepare=True).fetch(None, **values) == list(odd_pairs(None, values))
    assert (
        _positional('SELECT 5 %% "x" FROM t WHERE a = %s AND b = %s') == 'SELECT 5 % "x" FROM t WHERE a = $1 AND b = $2'
    )


@pytest.mark.postgres
def test_a_read_whose_column_type_changed_under_it_is_prepared_again():
    # A migration altering a selected column (a varchar's length) while a server runs: PostgreSQL
    # refuses the statement PREPAREd before it. That transaction is lost; the next use works.
    dataset = factories.dataset("first")
    prepared = CompiledQuery(
        lambda _, values: Dataset.objects.filter(pk=values["dataset"]).values_list("name"), prepare=True
    )
    expected = [(dataset.name,)]
    assert prepared.fetch(None, dataset=dataset.pk) == expected
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's inserts' deferred checks, done
        cursor.execute("ALTER TABLE collection_dataset ALTER COLUMN name TYPE varchar(301)")
    with pytest.raises(NotSupportedError, match="cached plan must not change result type"), transaction.atomic():
        prepared.fetch(None, dataset=dataset.pk)
    assert prepared.fetch(None, dataset=dataset.pk) == expected
    assert prepared.fetch(None, dataset=dataset.pk) == expected
