"""The gold rule (>= 3 of the 5 labels, else '-') in Python and in SQL, against a brute force."""

from collections import Counter

from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus.gold import gold_expression, gold_from_votes
from corpus.models import NO_GOLD, Pair, Premise
from tests.importers.helpers import C, E, N, ensure_genres, make_dataset

LABELS = [E, N, C]
label_lists = st.lists(st.sampled_from(LABELS), min_size=1, max_size=5)


def brute_force_gold(labels):
    label, votes = Counter(labels).most_common(1)[0]
    return label if votes >= 3 else NO_GOLD


@given(label_lists)
def test_gold_from_votes_is_the_majority_of_at_least_three(labels):
    votes = Counter(labels)
    assert gold_from_votes(votes[E], votes[N], votes[C]) == brute_force_gold(labels)


def test_the_rule_on_the_cases_people_argue_about():
    assert gold_from_votes(3, 2, 0) == E
    assert gold_from_votes(2, 2, 1) == NO_GOLD
    assert gold_from_votes(0, 1, 3) == C
    assert gold_from_votes(2, 0, 0) == NO_GOLD  # an unvalidated pair has no gold yet


vote_tables = st.lists(st.lists(st.sampled_from(LABELS), min_size=0, max_size=5), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(vote_tables)
def test_gold_expression_in_sql_equals_gold_from_votes(db, table):
    with transaction.atomic():
        dataset = make_dataset("gold-rule")
        genre = ensure_genres("captions")["captions"]
        premise = Premise.objects.create(dataset=dataset, genre=genre, prompt_id="g", text="A premise.", split="dev")
        pairs = []
        for i, labels in enumerate(table):
            votes = Counter(labels)
            pairs.append(
                Pair(
                    dataset=dataset,
                    premise=premise,
                    pair_id=f"g{i}",
                    hypothesis="h",
                    author_label=E,
                    label_count=len(labels),
                    entailment_votes=votes[E],
                    neutral_votes=votes[N],
                    contradiction_votes=votes[C],
                )
            )
        Pair.objects.bulk_create(pairs)
        in_sql = dict(
            Pair.objects.filter(dataset=dataset).annotate(sql_gold=gold_expression()).values_list("pair_id", "sql_gold")
        )
        expected = {f"g{i}": brute_force_gold(labels) if labels else NO_GOLD for i, labels in enumerate(table)}
        assert in_sql == expected
        transaction.set_rollback(True)
