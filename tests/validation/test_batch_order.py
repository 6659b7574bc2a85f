"""Nothing a participant sees or measures in a batch tells labels or catch
trials apart.

The writing task saves one premise's three pairs entailment, neutral, contradiction, one after the
other. Served side by side in that order, the positions gave the labels away (an order bot matched
the author's label on 97% of pairs without reading a hypothesis) and a catch trial was the lone
premise among them; a batch holding a catch trial was claimed by a slower path (the timing bot told
them apart with balanced accuracy 0.70). The attacks themselves run over HTTP in bench/attacks/.
"""

import itertools
import re
from collections import Counter, defaultdict
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy.stats import chi2_contingency, chisquare

from corpus.models import Label, Pair
from crowd.arrival import SESSION_KEY
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from quality.services import set_reference_label
from tests import factories
from tests.present import present
from validation import batch_claims
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db

THREE = [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION]
# A chance result this unlikely fails the test: about one run in ten thousand, where the old code
# failed every time by tens of orders of magnitude.
P_FLOOR = 1e-4


def normalised(queries):
    """The statements a block ran, their values left out: quoted values, numbers and lists of them
    (a batch's pks, uuids, times) become `?`; savepoints (the test's transaction) are dropped."""
    statements = []
    for query in queries.captured_queries:
        sql = query["sql"]
        if "SAVEPOINT" in sql:
            continue
        sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
        sql = re.sub(r"(?<![\w.\"])-?\d+(?:\.\d+)?(?![\w\"])", "?", sql)
        sql = re.sub(r"\(\s*\?(?:\s*,\s*\?)*\s*\)", "(?)", sql)
        sql = re.sub(r"ARRAY\[[^\]]*\]", "?", sql)  # an empty list is written as the string {}
        statements.append(sql)
    return statements


def write_premises(dataset, count, *, needs_validation=True):
    """`count` premises with three pairs each, saved entailment, neutral, contradiction, as the writing task saves them."""
    pairs = []
    for _ in range(count):
        premise = factories.premise(dataset)
        pairs += [factories.pair(dataset, premise, [label], needs_validation=needs_validation) for label in THREE]
    return pairs


def batches(batch_ids):
    """[[claim, ...] in page order (claim id), ...] for these batches."""
    claims = ValidationClaim.objects.filter(batch__in=batch_ids).select_related("pair").order_by("id")
    by_batch = defaultdict(list)
    for claim in claims:
        by_batch[claim.batch].append(claim)
    return list(by_batch.values())


def claim_many(dataset, make_worker, count, **kwargs):
    return [batch_claims.claim_validation_batch(make_worker(), dataset=dataset, **kwargs) for _ in range(count)]


def test_a_batch_never_shows_two_pairs_of_one_premise(dataset, make_worker):
    write_premises(dataset, 30)
    served = batches(claim_many(dataset, make_worker, 12))
    assert len(served) == 12 and all(len(batch) == 5 for batch in served)
    for batch in served:
        premises = [claim.pair.premise_id for claim in batch]
        assert len(set(premises)) == len(premises), premises


def test_a_pairs_author_label_tells_nothing_of_its_position_or_its_neighbours(dataset, make_worker):
    write_premises(dataset, 40)
    served = batches(claim_many(dataset, make_worker, 36))
    by_position = [[0] * len(THREE) for _ in range(5)]
    # The label of each item against the label of the item after it: written E, N, C and served in
    # that order, entailment was always followed by neutral.
    next_to = [[0] * len(THREE) for _ in range(len(THREE))]
    for batch in served:
        labels = [THREE.index(claim.pair.author_label) for claim in batch]
        for position, label in enumerate(labels):
            by_position[position][label] += 1
        for label, following in itertools.pairwise(labels):
            next_to[label][following] += 1
    p_position, p_neighbour = chi2_contingency(by_position).pvalue, chi2_contingency(next_to).pvalue
    print(
        f"\nposition x label {by_position}, p = {p_position:.3g}; label x next label {next_to}, p = {p_neighbour:.3g}"
    )
    assert p_position > P_FLOOR, by_position
    assert p_neighbour > P_FLOOR, next_to
    # Nor does a batch hold one label in every place (taking each premise's first pair would).
    uniform = sum(len({claim.pair.author_label for claim in batch}) == 1 for batch in served)
    assert uniform <= len(served) // 5, f"{uniform} of {len(served)} batches hold one label only"


def catch_study(dataset, share, *, catch_premises=12):
    for pair in write_premises(dataset, catch_premises, needs_validation=False):
        set_reference_label(pair, pair.author_label, is_catch_trial=True)
    return Study.objects.create(
        slug=f"order-{dataset.slug}",
        name="Order",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=5,
        completion_code="ORDER",
        catch_trial_share=share,
        bonus_per_catch_match=Decimal("0.10"),
    )


def session_for(study, worker):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")


def test_a_catch_trial_is_placed_like_any_other_pair(dataset, make_worker):
    write_premises(dataset, 40)
    # Catch trials come in runs of a premise (a new one opened now and then): a share of 0.5 serves
    # enough of them in forty batches to judge their places.
    study = catch_study(dataset, 0.5, catch_premises=25)
    served = []
    for _ in range(40):
        worker = make_worker()
        served.append(batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker)))
    positions: Counter[int] = Counter()
    for batch in batches(served):
        premises = Counter(claim.pair.premise_id for claim in batch)
        for position, claim in enumerate(batch):
            # Alone with its premise, as every other item is: no lone premise among runs.
            assert premises[claim.pair.premise_id] == 1
            if claim.is_catch_trial and len(batch) == 5:
                positions[position] += 1
    observed = [positions[position] for position in range(5)]
    print(f"\ncatch trials by position: {observed}")
    assert sum(observed) >= 20, "too few catch trials were served to judge their places"
    assert chisquare(observed).pvalue > P_FLOOR, observed


def _claim_statements(study, worker, catch_count, monkeypatch):
    # No catch premise left open by an earlier claim: the draw alone decides whether this batch opens
    # one (a draw of 0 always does, 1 never).
    ValidationClaim.objects.filter(is_catch_trial=True).delete()
    monkeypatch.setattr(batch_claims, "catch_draw", lambda: 0.0 if catch_count else 1.0)
    session = session_for(study, worker)
    with CaptureQueriesContext(connection) as queries:
        batch = present(batch_claims.claim_validation_batch(worker, study_session=session))
    claims = ValidationClaim.objects.filter(batch=batch)
    assert claims.filter(is_catch_trial=True).count() == catch_count
    return normalised(queries), session


def _page_statements(client, worker, session, batch):
    client.force_login(worker.user)
    store = client.session
    store[SESSION_KEY] = session.pk
    store.save()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("validation:batch", args=[batch])).status_code == 200
    return normalised(queries)


def test_a_batch_with_a_catch_trial_takes_the_same_statements_as_one_without(dataset, make_worker, monkeypatch, client):
    write_premises(dataset, 20)
    study = catch_study(dataset, 0.2)
    _claim_statements(study, make_worker(), 1, monkeypatch)  # compiled and prepared statements warm
    _claim_statements(study, make_worker(), 0, monkeypatch)
    plain_worker, catch_worker = make_worker(), make_worker()
    plain, plain_session = _claim_statements(study, plain_worker, 0, monkeypatch)
    with_catch, catch_session = _claim_statements(study, catch_worker, 1, monkeypatch)
    assert with_catch == plain

    plain_batch = ValidationClaim.objects.filter(worker=plain_worker).values_list("batch", flat=True)[0]
    catch_batch = ValidationClaim.objects.filter(worker=catch_worker).values_list("batch", flat=True)[0]
    plain_page = _page_statements(client, plain_worker, plain_session, plain_batch)
    catch_page = _page_statements(client, catch_worker, catch_session, catch_batch)
    assert catch_page == plain_page


def test_a_worker_meets_a_premise_again_only_when_no_other_is_left(dataset, make_worker):
    """A premise seen again in a later batch was one more sign: ordinary pairs came back to their
    premise, catch trials did not (and which pair came back hinted at its label)."""
    write_premises(dataset, 6)
    study = catch_study(dataset, 0.5, catch_premises=6)
    worker = make_worker()
    session = session_for(study, worker)
    seen: list[set[int]] = []
    while batch := batch_claims.claim_validation_batch(worker, study_session=session):
        claims = list(ValidationClaim.objects.filter(batch=batch).select_related("pair"))
        premises = {claim.pair.premise_id for claim in claims}
        ordinary = {claim.pair.premise_id for claim in claims if not claim.is_catch_trial}
        catch = premises - ordinary
        earlier = set().union(*seen)
        assert not catch & earlier, "a catch trial of a premise served before"
        fresh_left = {pair.premise_id for pair in Pair.objects.filter(needs_validation=True)} - earlier
        if fresh_left:
            assert not ordinary & earlier, "a premise served again while fresh ones were left"
        seen.append(premises)
        ValidationClaim.objects.filter(batch=batch).update(status=ClaimStatus.SUBMITTED)
    # Six premises of three pairs: the worker got all eighteen pairs in the end (nothing starves).
    served = ValidationClaim.objects.filter(worker=worker, is_catch_trial=False).count()
    assert served == 18


def test_a_catch_premise_with_pairs_still_in_validation_waits_and_never_empties_the_batch(dataset, make_worker):
    """Every pair left shares the catch pairs' premise (MPE items of one scene, a dataset near its
    end): the premise still has pairs in the validation queue, so its catch pairs wait (served both
    ways, the premise would show more servings than any other), and the batch takes the
    premise's ordinary pairs, never nothing."""
    premise = factories.premise(dataset)
    ordinary = [factories.pair(dataset, premise, [label], needs_validation=True) for label in THREE * 4]
    catch = [factories.pair(dataset, premise, [label], needs_validation=False) for label in THREE]
    for pair in catch:
        set_reference_label(pair, pair.author_label, is_catch_trial=True)
    study = catch_study(dataset, 0.5, catch_premises=0)
    worker = make_worker()
    batch = batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker))
    assert batch is not None, "no pairs, though twelve fresh pairs had room"
    claims = ValidationClaim.objects.filter(batch=batch)
    assert set(claims.values_list("pair_id", flat=True)) <= {p.pk for p in ordinary}
    assert claims.count() == 5 and not claims.filter(is_catch_trial=True).exists()
