"""validation/batch_claims.py at the edges mutmut found unguarded: the room a claim counts under its
locks, the held places a claim leaves behind (a backup batch's, the recount when no pair is free),
an MPE study's claims, a submit's refusals, the order of a batch's candidates and of its page, the
batches a study counts as served, its catch trials (its own dataset's, one ordinary pair kept) and
its pool; a refusal's words, the open batch of the task asked for, a backup batch of one pair, the
page order of a claimed batch, the candidates a claim locks, and its waits for locked pairs (how
long, how often, and only for pairs it may take)."""

import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import LABELS_PER_PAIR, ItemKind, Label, Pair, Worker
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests import factories
from tests.present import present
from validation import batch_claims, selectors, services
from validation.models import SessionServed, ValidationClaim, ValidationPolicy

from .test_batch_order import catch_study, write_premises
from .test_mpe_task import make_mpe_items
from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def a_study(dataset, slug, task_kind=TaskKind.VALIDATION):
    return Study.objects.create(
        slug=slug,
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=task_kind,
        tasks_per_batch=10,
        completion_code=slug.upper(),
        catch_trial_share=0,
    )


def visit(study, worker):
    return StudySession.objects.get_or_create(study=study, worker=worker, external_session_id=f"S{worker.pk}")[0]


def claimed(pair, worker, *, expires_in=timedelta(minutes=10), **fields):
    """A claim row as a claim leaves it, without the claim's recount of the pair's held places."""
    return ValidationClaim.objects.create(
        pair=pair, worker=worker, status=ClaimStatus.OPEN, expires_at=timezone.now() + expires_in, **fields
    )


def held(pair):
    pair.refresh_from_db()
    return pair.held_places


def pairs_of(batch):
    return set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))


def test_the_room_a_claim_counts_under_its_locks_is_the_target_less_labels_and_live_ordinary_claims(
    dataset, make_worker
):
    """The candidate query saw the claims as of its start; under the locks a claim counts again,
    so a pair that claims committed meanwhile have filled is never taken (a sixth label)."""
    filled, one_left, empty = make_pair(dataset), make_pair(dataset), make_pair(dataset)
    for _ in range(LABELS_PER_PAIR - 1):
        claimed(filled, make_worker())
    claimed(one_left, make_worker())
    claimed(one_left, make_worker())
    claimed(one_left, make_worker(), is_catch_trial=True)  # a catch trial holds no place
    claimed(one_left, make_worker(), expires_in=-timedelta(seconds=1))  # ran out: holds none
    Pair.objects.filter(pk=one_left.pk).update(label_count=2)
    now = timezone.now()

    room = {
        pk: (free, scheme) for pk, free, scheme in batch_claims.VALIDATION_CLAIMS.room([filled.pk, one_left.pk], now)
    }

    assert room == {filled.pk: (0, dataset.label_scheme), one_left.pk: (1, dataset.label_scheme)}
    assert empty.pk not in room  # only the locked pairs are read
    with transaction.atomic():
        assert batch_claims._take_candidates(make_worker(), now, [filled.pk], [], 5, None, {}) == []
    assert ValidationClaim.objects.filter(pair=filled).count() == LABELS_PER_PAIR - 1


def test_a_backup_batch_leaves_its_pairs_held_places_counting_its_own_claims(dataset, make_worker):
    study = a_study(dataset, "backup-held")
    pairs = [make_pair(dataset) for _ in range(5)]
    Pair.objects.update(label_count=LABELS_PER_PAIR - 1)  # one place left on each
    holder = make_worker()
    first = present(batch_claims.claim_validation_batch(holder, study_session=visit(study, holder)))
    assert pairs_of(first) == {pair.pk for pair in pairs}
    assert [held(pair) for pair in pairs] == [1] * 5

    arrival = make_worker()
    backup = present(batch_claims.claim_validation_batch(arrival, study_session=visit(study, arrival)))

    assert pairs_of(backup) == {pair.pk for pair in pairs}
    assert [held(pair) for pair in pairs] == [2] * 5


def test_an_mpe_studys_claim_takes_its_items_for_its_session(make_worker):
    dataset, items = make_mpe_items(2, slug="mpe-study")
    make_pair(make_dataset("single-pairs"))  # a MultiNLI pair: never in an MPE batch
    study = a_study(dataset, "mpe-study", task_kind=TaskKind.MPE_JUDGMENT)
    worker = make_worker()
    session = visit(study, worker)

    batch = present(batch_claims.claim_mpe_batch(worker, study_session=session))

    claims = ValidationClaim.objects.filter(batch=batch)
    assert {claim.pair_id for claim in claims} == {item.pk for item in items}
    assert {claim.worker_id for claim in claims} == {worker.pk}
    assert {claim.study_session_id for claim in claims} == {session.pk}
    assert all(claim.pair.dataset.item_kind == ItemKind.MULTI_PREMISE for claim in claims)


@pytest.mark.django_db(transaction=True)
def test_the_recount_when_no_pair_is_free_locks_only_the_pairs_whose_held_count_is_stale(make_worker):
    """A claim that finds no free pair recounts the pairs marked held; it locks only those whose
    count differs from their live claims, so another claimer meanwhile still takes a held pair
    with room."""
    dataset = make_dataset("recount-locks")
    counted, stale = make_pair(dataset), make_pair(dataset)
    claimed(counted, make_worker())
    claimed(stale, make_worker())
    Pair.objects.filter(pk=counted.pk).update(held_places=1)  # its one live claim
    Pair.objects.filter(pk=stale.pk).update(held_places=3)  # two of its claims were released
    other = connections.create_connection("default")
    try:
        with transaction.atomic():
            assert batch_claims._recount_every_held_pair(timezone.now()) == 1
            with other.cursor() as cursor:
                cursor.execute(
                    "SELECT id FROM collection_pair WHERE id IN (%s, %s) FOR UPDATE SKIP LOCKED",
                    [counted.pk, stale.pk],
                )
                free_to_lock = {pk for (pk,) in cursor.fetchall()}
        assert free_to_lock == {counted.pk}
    finally:
        other.close()
    assert held(counted) == 1 and held(stale) == 1
    assert connection.get_autocommit()


def test_a_submit_is_refused_in_the_workers_words_when_the_batch_is_not_theirs_saved_or_run_out(dataset, make_worker):
    pair = make_pair(dataset)
    worker, other = make_worker(), make_worker()
    batch = present(batch_claims.claim_validation_batch(worker, dataset=dataset))
    answers = {pair.pk: Label.NEUTRAL}

    keys: list[tuple[Worker, uuid.UUID | str]] = [(other, batch), (worker, "not-a-batch"), (worker, uuid.uuid4())]
    for who, key in keys:
        with pytest.raises(batch_claims.BatchNotFound) as refused:
            services.submit_validation_batch(who, key, answers)
        assert refused.value.messages == ["This batch does not exist or is not yours."]

    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(batch_claims.BatchExpired) as ran_out:
        services.submit_validation_batch(worker, batch, answers)
    assert ran_out.value.messages == [
        "This batch expired before it was submitted, so its pairs went back to other validators "
        "and nothing was saved. Please take a new batch."
    ]

    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() + timedelta(minutes=10))
    services.submit_validation_batch(worker, batch, answers)
    with pytest.raises(batch_claims.BatchAlreadySubmitted) as saved:
        services.submit_validation_batch(worker, batch, answers)
    assert saved.value.messages == ["These labels are already saved. Thank you!"]


def test_a_batch_takes_one_pair_a_premise_closest_to_complete_then_the_others_then_the_catch_premises():
    # pk: (premise, labels)
    facts = {1: (10, 3), 2: (10, 1), 3: (20, 2), 4: (20, 2), 5: (30, 1), 6: (40, 1), 7: (40, 2)}

    order = batch_claims.spread_over_premises([1, 2, 3, 4, 5, 6, 7], facts, leave_out=[30])

    assert order[0] == 1 and order[1] in {3, 4} and order[2] == 7
    assert order[3:5] == [2, ({3, 4} - {order[1]}).pop()]
    assert order[5:] == [6, 5]


def test_a_page_never_puts_two_pairs_of_one_premise_side_by_side_where_another_order_exists():
    # Two pairs of premise 10 and one of premise 20: only the orders with pair 3 between them.
    for _ in range(30):
        assert batch_claims.page_order([1, 2, 3], {1: 10, 2: 10, 3: 20}) in ([1, 3, 2], [2, 3, 1])


def test_a_study_counts_the_batches_served_only_while_it_keeps_a_catch_share_and_never_a_previews(dataset, make_worker):
    """What a study was served decides the catch trials it still owes: batches served while it kept
    no share owe none, and a preview's are not the study's."""
    for _ in range(3):
        make_pair(dataset)
    study = a_study(dataset, "served-counts")
    worker = make_worker()
    session = visit(study, worker)
    present(batch_claims.claim_validation_batch(worker, study_session=session))
    assert not SessionServed.objects.exists()

    Study.objects.filter(pk=study.pk).update(catch_trial_share=0.2)  # no catch pair to serve yet
    study.refresh_from_db()
    previewer = make_worker()
    preview = StudySession.objects.create(study=study, worker=previewer, external_session_id="P", is_preview=True)
    present(batch_claims.claim_validation_batch(previewer, study_session=preview))
    assert not SessionServed.objects.exists()

    for _ in range(2):
        arrival = make_worker()
        present(batch_claims.claim_validation_batch(arrival, study_session=visit(study, arrival)))
    assert selectors.study_served(study.pk) == (2, 0)


def test_a_batch_of_a_study_serving_every_place_as_a_catch_trial_keeps_one_ordinary_pair(
    dataset, make_worker, monkeypatch
):
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)  # every chance to open a catch premise taken
    monkeypatch.setattr(batch_claims, "catch_keep_draw", lambda: 0.0)
    write_premises(dataset, 10)
    study = catch_study(dataset, 1.0, catch_premises=12)
    # The study owes the catch trials of a hundred batches served without one.
    SessionServed.objects.create(study_session=visit(study, make_worker()), batches=100, catch_trials=0)
    catch_counts = []
    for _ in range(4):
        worker = make_worker()
        batch = present(batch_claims.claim_validation_batch(worker, study_session=visit(study, worker)))
        kinds = list(ValidationClaim.objects.filter(batch=batch).values_list("is_catch_trial", flat=True))
        assert len(kinds) == selectors.BATCH_SIZE and not all(kinds)
        catch_counts.append(sum(kinds))
    assert max(catch_counts) == selectors.BATCH_SIZE - 1


def test_a_studys_catch_trials_come_from_its_own_dataset_only(dataset, make_worker, monkeypatch):
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0)
    monkeypatch.setattr(batch_claims, "catch_keep_draw", lambda: 0.0)
    catch_study(make_dataset("elsewhere"), 1.0)  # another dataset's pairs marked as catch trials
    write_premises(dataset, 5)
    study = a_study(dataset, "own-catch")
    Study.objects.filter(pk=study.pk).update(catch_trial_share=1.0)
    study.refresh_from_db()

    for _ in range(3):
        worker = make_worker()
        batch = present(batch_claims.claim_validation_batch(worker, study_session=visit(study, worker)))
        claims = ValidationClaim.objects.filter(batch=batch)
        assert {claim.pair.dataset_id for claim in claims} == {dataset.pk}
        assert not any(claim.is_catch_trial for claim in claims)


def test_a_studys_validation_batch_takes_only_pairs_of_its_pool(dataset, make_worker):
    fiction, telephone = factories.genre("fiction"), factories.genre("telephone")
    in_pool = make_pair(dataset, premise=factories.premise(dataset, fiction))
    make_pair(dataset, premise=factories.premise(dataset, telephone))
    study = a_study(dataset, "fiction-only")
    study.pool_genres.set([fiction])
    worker = make_worker()

    batch = present(batch_claims.claim_validation_batch(worker, study_session=visit(study, worker)))

    assert pairs_of(batch) == {in_pool.pk}


def test_a_recount_of_held_places_says_how_many_pairs_it_changed(dataset, make_worker):
    counted, stale = make_pair(dataset), make_pair(dataset)
    claimed(counted, make_worker())
    Pair.objects.filter(pk=counted.pk).update(held_places=1)
    Pair.objects.filter(pk=stale.pk).update(held_places=2)
    now = timezone.now()

    assert batch_claims.recount_held([], now) == 0
    assert batch_claims.recount_held([counted.pk, stale.pk], now) == 1
    assert held(counted) == 1 and held(stale) == 0


def test_a_refused_worker_reads_the_whole_reason(dataset, make_worker):
    make_pair(dataset)
    with pytest.raises(batch_claims.NotAllowedToValidate) as excluded:
        batch_claims.claim_validation_batch(make_worker(is_excluded=True), dataset=dataset)
    assert excluded.value.messages == [
        "Your account is not taking part in validation at the moment. "
        "If you think this is a mistake, please contact the researchers."
    ]

    ValidationPolicy.objects.create(dataset=dataset, trusted_only=True)
    with pytest.raises(batch_claims.NotAllowedToValidate) as untrusted:
        batch_claims.claim_validation_batch(make_worker(), dataset=dataset)
    assert untrusted.value.messages == [
        "Validation of this data set is open only to our pool of trusted validators, and your account is not in it yet."
    ]


def test_a_worker_gets_back_the_open_batch_of_the_task_they_ask_for_never_another_tasks(make_worker):
    """A validation batch and an MPE batch open side by side: a reload of either page gives its own
    batch back, and asking for one task never hands over the other's batch."""
    _, items = make_mpe_items(2, slug="mpe-open")
    single = make_pair(make_dataset("single-open"))
    worker = make_worker()

    validating = present(batch_claims.claim_validation_batch(worker))
    judging = present(batch_claims.claim_mpe_batch(worker))

    assert pairs_of(validating) == {single.pk}
    assert pairs_of(judging) == {item.pk for item in items}
    assert batch_claims.claim_mpe_batch(worker) == judging
    assert batch_claims.claim_validation_batch(worker) == validating


def test_an_arrival_is_served_a_backup_batch_of_the_one_pair_left_held(dataset, make_worker):
    study = a_study(dataset, "one-backup")
    pair = make_pair(dataset)
    Pair.objects.update(label_count=LABELS_PER_PAIR - 1)
    holder = make_worker()
    present(batch_claims.claim_validation_batch(holder, study_session=visit(study, holder)))

    arrival = make_worker()
    backup = present(batch_claims.claim_validation_batch(arrival, study_session=visit(study, arrival)))

    assert pairs_of(backup) == {pair.pk}


def test_a_claimed_page_never_puts_two_pairs_of_one_premise_side_by_side(make_worker):
    """Two pairs of one premise and one of another, all alike in labels: the lone premise's pair
    goes between the twins (a chance order would leave them side by side one time in three)."""
    for n in range(12):
        dataset = make_dataset(f"twins-{n}")
        premise = factories.premise(dataset)
        make_pair(dataset, premise=premise)
        make_pair(dataset, premise=premise)
        lone = make_pair(dataset)

        batch = present(batch_claims.claim_validation_batch(make_worker(), dataset=dataset))

        page = list(ValidationClaim.objects.filter(batch=batch).order_by("id").values_list("pair_id", flat=True))
        assert len(page) == 3 and page[1] == lone.pk


@pytest.mark.django_db(transaction=True)
def test_a_claim_locks_three_batches_of_candidates_and_leaves_the_rest_to_other_claimers(make_worker):
    dataset = make_dataset("over-fetch")
    pks = [make_pair(dataset).pk for _ in range(4 * selectors.BATCH_SIZE)]
    other = connections.create_connection("default")
    try:
        with transaction.atomic():
            present(batch_claims.claim_validation_batch(make_worker(), dataset=dataset))
            with other.cursor() as cursor:
                cursor.execute(
                    f"SELECT id FROM collection_pair WHERE id IN ({', '.join(['%s'] * len(pks))})"
                    " FOR UPDATE SKIP LOCKED",
                    pks,
                )
                free_to_lock = len(cursor.fetchall())
    finally:
        other.close()
    assert free_to_lock == len(pks) - 3 * selectors.BATCH_SIZE


def pause_log(monkeypatch, on_pause=lambda: None):
    """The pauses a claim asks for while it waits for locked pairs (none slept); `on_pause` runs at each."""
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        on_pause()

    monkeypatch.setattr(time, "sleep", pause)
    return pauses


def locking(pair):
    """Another connection holding `pair`'s row lock, as a claim or a submit in flight does."""
    other = connections.create_connection("default")
    other.set_autocommit(False)
    with other.cursor() as cursor:
        cursor.execute("SELECT id FROM collection_pair WHERE id = %s FOR UPDATE", [pair.pk])
    return other


@pytest.mark.django_db(transaction=True)
def test_a_claim_pauses_eight_growing_waits_while_its_only_claimable_pair_stays_locked_then_gives_up(
    make_worker, monkeypatch
):
    dataset = make_dataset("locked-pair")
    pair = make_pair(dataset)
    pauses = pause_log(monkeypatch)
    other = locking(pair)
    try:
        with CaptureQueriesContext(connection) as statements:
            assert batch_claims.claim_validation_batch(make_worker(), dataset=dataset) is None
    finally:
        other.rollback()
        other.close()
    waits = range(1, batch_claims.CLAIM_WAITS + 1)
    assert pauses == [batch_claims.CLAIM_WAIT_SECONDS * n for n in waits]
    # Its looks for pairs to lock: the first, one more past the premises it met, one after each
    # wait; then it gives up rather than look on. The held places are recounted once, not at every
    # look: the recount reads every held pair.
    locking_reads = [query["sql"] for query in statements.captured_queries if "SKIP LOCKED" in query["sql"]]
    looks = [sql for sql in locking_reads if "needs_validation" in sql]
    assert len(looks) == batch_claims.CLAIM_WAITS + 2
    assert len(locking_reads) - len(looks) == 1


@pytest.mark.django_db(transaction=True)
def test_a_claim_that_waits_takes_the_pair_once_the_claim_in_flight_lets_it_go(make_worker, monkeypatch):
    dataset = make_dataset("released-pair")
    pair = make_pair(dataset)
    other = locking(pair)
    pauses = pause_log(monkeypatch, on_pause=other.rollback)
    try:
        batch = present(batch_claims.claim_validation_batch(make_worker(), dataset=dataset))
    finally:
        other.close()
    assert pauses == [batch_claims.CLAIM_WAIT_SECONDS]
    assert pairs_of(batch) == {pair.pk}


def test_a_claim_never_waits_for_pairs_outside_its_study_pool_dataset_or_task(make_worker, monkeypatch):
    """Free pairs a claim may not take are no reason to wait and look again: only a claimable pair
    that someone else has locked is."""
    pauses = pause_log(monkeypatch)
    fiction, telephone = factories.genre("fiction"), factories.genre("telephone")
    author, judge = make_worker(), make_worker()
    dataset = make_dataset("outside-pool")
    make_pair(dataset, premise=factories.premise(dataset, telephone), author=author)
    study = a_study(dataset, "fiction-pool")
    study.pool_genres.set([fiction])
    in_study = make_worker()
    assert batch_claims.claim_validation_batch(in_study, study_session=visit(study, in_study)) is None

    assert batch_claims.claim_validation_batch(make_worker(), dataset=make_dataset("nothing-left")) is None

    # The author's MultiNLI pair is free for the judge, the judge's MPE item for the author.
    _, items = make_mpe_items(1, slug="mpe-own")
    Pair.objects.filter(pk=items[0].pk).update(author=judge)
    assert batch_claims.claim_validation_batch(author) is None
    assert batch_claims.claim_validation_batch(judge, item_kind=ItemKind.MULTI_PREMISE) is None

    assert pauses == []
