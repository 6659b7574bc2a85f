"""Tag figures (MultiNLI Tables 6-7) and give-away words (Poliak et al. §6) on planted data."""

import pytest
from django.core.management import CommandError, call_command

from artifacts.models import PairTags
from artifacts.phenomena import PHENOMENON_NAMES
from artifacts.selectors import giveaway_words_for, run_tag_accuracy, tag_figures
from artifacts.services import store_tags, tag_columns
from corpus.giveaways import counted_label
from corpus.labels import LABELS, NO_GOLD
from corpus.models import Dataset, Pair, Split
from corpus.scope import Scope
from corpus.services import add_label
from modeling.models import Snapshot, TrainingRun
from modeling.training.data import example_from_row
from modeling.training.evaluate import majority_baseline, summarize
from tests import factories
from tests.present import present

pytestmark = pytest.mark.django_db


def tagged(ds, genre, gold, tags, hypothesis=None, author=None, split=Split.DEV):
    premise = factories.premise(ds, factories.genre(genre), split=split)
    labels = [gold] * 5 if gold else ["neutral"]
    pair = factories.pair(ds, premise, labels, hypothesis=hypothesis, author=author)
    if tags is not None:
        store_tags([PairTags(pair=pair, tagger="test", **tag_columns(tags))])  # counted in the tag tally
    return pair


def test_shares_per_genre_and_the_most_frequent_gold_label_per_tag():
    ds = factories.dataset("d")
    tagged(ds, "fiction", "contradiction", {"negation"})
    tagged(ds, "fiction", "contradiction", {"negation", "modals"})
    tagged(ds, "fiction", "entailment", {"modals"})
    tagged(ds, "fiction", "neutral", set())
    tagged(ds, "travel", "neutral", {"negation"})
    tagged(ds, "travel", "neutral", None)  # not tagged yet
    tagged(factories.dataset("other"), "travel", "entailment", {"negation"})
    figures = tag_figures(Scope.of_dataset(ds))
    assert figures["tagged"] == 5 and figures["untagged"] == 1
    rows = {row["tag"]: row for row in figures["tags"]}
    assert rows["negation"]["pairs"] == 3 and rows["negation"]["share"] == pytest.approx(3 / 5)
    assert {c["genre"]: c["share"] for c in rows["negation"]["per_genre"]} == {"fiction": 0.5, "travel": 1.0}
    assert rows["negation"]["most_frequent_gold"] == "contradiction"
    assert rows["negation"]["most_frequent_gold_share"] == pytest.approx(2 / 3)
    assert rows["negation"]["gold"] == {"entailment": 0, "neutral": 1, "contradiction": 2, "-": 0}
    assert rows["existentials"]["pairs"] == 0 and rows["existentials"]["most_frequent_gold"] is None
    assert tag_figures()["tagged"] == 6
    assert tag_figures(Scope.of_dataset(ds, Split.TEST))["tagged"] == 0


def fresh_tag_count(dataset=None, split=None):
    """The figures counted pair by pair in Python, from the rows themselves."""
    pairs = Pair.objects.select_related("premise__genre")
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    if split:
        pairs = pairs.filter(premise__split=split)
    tags = {t.pair_id: t for t in PairTags.objects.all()}
    tagged = [pair for pair in pairs if pair.pk in tags]
    per_tag = {}
    for name in PHENOMENON_NAMES:
        having = [pair for pair in tagged if getattr(tags[pair.pk], name)]
        genres: dict[str, list[int]] = {}
        for pair in tagged:
            counts = genres.setdefault(pair.premise.genre.slug, [0, 0])
            counts[0] += getattr(tags[pair.pk], name)
            counts[1] += 1
        per_tag[name] = {
            "pairs": len(having),
            "gold": {label: sum(p.gold_label == label for p in having) for label in (*LABELS, NO_GOLD)},
            "per_genre": {slug: n / total for slug, (n, total) in genres.items()},
        }
    return {"tagged": len(tagged), "untagged": len(pairs) - len(tagged), "tags": per_tag}


def shown(figures):
    return {
        "tagged": figures["tagged"],
        "untagged": figures["untagged"],
        "tags": {
            row["tag"]: {
                "pairs": row["pairs"],
                "gold": row["gold"],
                "per_genre": {cell["genre"]: cell["share"] for cell in row["per_genre"]},
            }
            for row in figures["tags"]
        },
    }


def test_the_corpus_pages_tag_figures_equal_a_fresh_count_as_pairs_are_tagged_and_validated():
    """The one grouped read (and the maintained pair count) give exactly what counting
    every pair gives, in every scope, and still after labels move gold labels."""
    ds = factories.dataset("d")
    for index, (genre, gold, tags, split) in enumerate(
        [
            ("fiction", "contradiction", {"negation"}, Split.DEV),
            ("fiction", "contradiction", {"negation", "modals"}, Split.TEST),
            ("fiction", "entailment", {"modals", "pronouns"}, Split.DEV),
            ("fiction", None, {"quantifiers"}, Split.TRAIN),
            ("travel", "neutral", {"negation"}, Split.DEV),
            ("travel", "neutral", None, Split.DEV),
            ("letters", None, None, Split.TRAIN),
        ]
    ):
        tagged(ds, genre, gold, tags, hypothesis=f"h{index}", split=split)
    tagged(factories.dataset("other"), "travel", "entailment", {"negation"})
    scopes: list[tuple[Dataset | None, Split | None]] = [
        (None, None),
        (ds, None),
        (ds, Split.DEV),
        (ds, Split.TRAIN),
        (ds, Split.TEST),
    ]
    for dataset, scope_split in scopes:
        assert shown(tag_figures(Scope.of_dataset(dataset, scope_split))) == fresh_tag_count(dataset, scope_split), (
            dataset,
            scope_split,
        )
    # Validation gives the train pair a gold label; a new pair arrives untagged.
    train_pair = Pair.objects.get(hypothesis="h3")
    for label in ["entailment"] * 4:
        add_label(train_pair, label)
    tagged(ds, "letters", None, None, hypothesis="h-new", split=Split.TRAIN)
    for dataset, scope_split in scopes:
        assert shown(tag_figures(Scope.of_dataset(dataset, scope_split))) == fresh_tag_count(dataset, scope_split), (
            dataset,
            scope_split,
        )
    assert (
        tag_figures(Scope.of_dataset(ds, Split.TRAIN))["tags"][PHENOMENON_NAMES.index("quantifiers")]["gold"][
            "entailment"
        ]
        == 1
    )


def test_accuracy_per_tag_joins_a_runs_predictions_to_the_tags():
    ds = factories.dataset("d")
    negated = [tagged(ds, "fiction", "contradiction", {"negation"}) for _ in range(4)]
    plain = [tagged(ds, "fiction", "entailment", set()) for _ in range(2)]
    untagged = tagged(ds, "fiction", "entailment", None)
    rows = [
        {"pairID": p.pair_id, "gold_label": p.gold_label, "sentence1": "a", "sentence2": "b"}
        for p in [*negated, *plain, untagged]
    ]
    examples = [example_from_row(row, "test") for row in rows]
    # Right on 3 of the 4 negated pairs and on both plain ones.
    predicted = [2, 2, 2, 0, 0, 0, 0]
    results = summarize({"test": (examples, predicted), "dev": (examples, [1] * 7)})
    snapshot = Snapshot.objects.create(datasets=["d"])
    run = TrainingRun.objects.create(snapshot=snapshot, model="cbow", status="done", results=results)
    figures = present(run_tag_accuracy(run))
    assert figures["splits"] == ["test"] and figures["scored"] == 7 and figures["tagged"] == 6
    by_tag = {row["tag"]: row for row in figures["tags"]}
    assert by_tag["negation"] == {
        "tag": "negation",
        "label": "Negation (PTB)",
        "pairs": 4,
        "share": pytest.approx(4 / 6),
        "accuracy": 0.75,
    }
    assert by_tag["modals"]["accuracy"] is None
    assert figures["accuracy"] == pytest.approx(5 / 6)
    assert present(run_tag_accuracy(run, split="dev"))["accuracy"] == 0
    assert run_tag_accuracy(TrainingRun.objects.create(snapshot=snapshot, model="cbow", results={})) is None


def test_a_hypothesis_only_run_reports_the_majority_class_on_the_same_files():
    rows = [{"gold_label": g, "sentence2": "x"} for g in ["neutral", "neutral", "entailment", "-"]]
    examples = [example_from_row(row) for row in rows]
    baseline = majority_baseline([1, 1, 0, 2, -1], {"test": (examples, [0, 0, 0, 0])})
    assert baseline == {"label": "neutral", "accuracy": {"test": pytest.approx(2 / 3, abs=1e-6)}}


def test_the_label_a_hypothesis_counts_under():
    assert counted_label("neutral", "entailment", 5) == "neutral"
    assert counted_label("-", "entailment", 1) == "entailment"  # written, not validated yet
    assert counted_label("-", "entailment", 5) == "-"  # validated without a majority


def plant(ds, author, n, word, label, genre="fiction"):
    for i in range(n):
        tagged(ds, genre, label, None, hypothesis=f"The person {word} thing {i}.", author=author)


def test_giveaway_words_on_a_planted_corpus_per_dataset_genre_and_worker(make_worker):
    ds = factories.dataset("d")
    liar, honest = make_worker(), make_worker()
    plant(ds, liar, 6, "not", "contradiction")
    plant(ds, honest, 3, "outside", "entailment", genre="travel")
    plant(ds, honest, 3, "outside", "neutral", genre="travel")
    plant(ds, honest, 4, "maybe", "neutral", genre="travel")
    listing = giveaway_words_for(Scope.of_dataset(ds))
    assert listing["hypotheses"] == 16 and listing["per_label"] == {"entailment": 3, "neutral": 7, "contradiction": 6}
    top = listing["words"]["contradiction"][0]
    assert top == {"word": "not", "p": 1.0, "count": 6, "label_count": 6}
    neutral = {w["word"]: w for w in listing["words"]["neutral"]}
    assert "maybe" not in neutral  # seen 4 times: under the paper's minimum of 5
    assert neutral["outside"]["p"] == 0.5
    assert giveaway_words_for(Scope.of_dataset(ds), min_count=4)["words"]["neutral"][0]["word"] == "maybe"
    assert giveaway_words_for(Scope.of_dataset(ds), worker=honest)["words"]["contradiction"] == []
    assert giveaway_words_for(Scope.of_dataset(ds), genre=factories.genre("fiction"))["hypotheses"] == 6
    assert len(giveaway_words_for(Scope.of_dataset(ds), top=1)["words"]["neutral"]) == 1


def test_the_giveaway_command(make_worker, capsys):
    ds = factories.dataset("d")
    plant(ds, make_worker(), 5, "nobody", "contradiction")
    call_command("giveaway_words", "--dataset", "d")
    out = capsys.readouterr().out
    assert "5 hypotheses" in out and "nobody" in out
    with pytest.raises(CommandError, match="unknown genre 'nope'"):
        call_command("giveaway_words", "--genre", "nope")
    with pytest.raises(CommandError, match="at least 1"):
        call_command("giveaway_words", "--min-count", "0")
