"""The live artifact monitor: cross-validated hypothesis-only accuracy, a planted writer flagged,
refreshes stored with their model, triggered after N new pairs, and drafts scored."""

import random

import pytest
from django.core.management import CommandError, call_command

from artifacts.models import MonitorRefresh
from artifacts.monitor import ScoringModel, monitor, wilson
from artifacts.monitoring import refresh_if_due, refresh_monitor, scoring_model
from base.long_tasks import JobStatus
from corpus.models import Pair, Split
from corpus.services import create_pairs
from tests import factories
from tests.conftest import wait_for
from tests.present import present

NOUNS = ["man", "woman", "dog", "child", "girl", "boy", "cat", "crowd", "worker", "player", "singer", "cook"]
VERBS = ["walks", "runs", "sits", "eats", "plays", "sings", "waits", "reads", "jumps", "smiles", "works", "talks"]
PLACES = ["outside", "inside", "at home", "in a park", "on a street", "by the sea", "in town", "at work"]
LABELS = ["entailment", "neutral", "contradiction"]


def sentence(rng, giveaway=None):
    words = ["The", rng.choice(NOUNS), rng.choice(VERBS), rng.choice(PLACES)]
    if giveaway:
        words.insert(2, giveaway)
    return " ".join(words) + "."


def planted_corpus(make_worker, writers=8, per_writer=60, seed=3, dataset=None, genre=None):
    """Writers whose hypotheses say nothing of the label, and one whose contradictions all say "not"."""
    rng = random.Random(seed)
    ds = dataset or factories.dataset("collected")
    fiction = genre or factories.genre("fiction")
    premises = [factories.premise(ds, fiction, split=Split.TRAIN) for _ in range(per_writer // 3)]
    crowd = [make_worker() for _ in range(writers)]
    planted = make_worker(username="planted")
    pairs, labels = [], []
    for writer in [*crowd, planted]:
        for i in range(per_writer):
            label = LABELS[i % 3]
            text = sentence(rng, "not" if writer is planted and label == "contradiction" else None)
            pairs.append(
                Pair(
                    premise=premises[i // 3],
                    pair_id=f"{writer.pk}-{i}",
                    hypothesis=text,
                    author_label=label,
                    author=writer,
                )
            )
            labels.append([label])
    create_pairs(ds, Split.TRAIN, pairs, labels)
    return ds, planted


def test_wilson_interval():
    low, high = wilson(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)
    assert wilson(0, 0) == (None, None)


@pytest.mark.django_db
def test_the_monitor_flags_the_planted_writer_with_the_evidence(make_worker):
    ds, planted = planted_corpus(make_worker)
    refresh = refresh_monitor(ds)
    assert refresh.status == JobStatus.DONE and refresh.pairs == 540 and refresh.folds == 5
    overall = refresh.overall
    assert overall["majority"] == pytest.approx(1 / 3)
    assert overall["ci_low"] < overall["accuracy"] < overall["ci_high"]
    writers = {w["writer"]: w for w in refresh.writers}
    flagged = [w["writer"] for w in refresh.writers if w["flagged"]]
    assert flagged == [planted.pk] and refresh.flagged == 1
    evidence = writers[planted.pk]
    assert evidence["accuracy"] >= evidence["crowd_accuracy"] + 0.15
    assert evidence["giveaway_words"]["contradiction"][0] == {"word": "not", "p": 1.0, "count": 20}
    assert evidence["examples"] and all("not" in e["hypothesis"] for e in evidence["examples"])
    # The crowd's hypotheses carry no signal: about the majority class, within its interval.
    others = [w for w in refresh.writers if w["writer"] != planted.pk]
    assert all(not w["flagged"] for w in others)
    assert set(refresh.per_genre) == {"fiction"}


@pytest.mark.django_db
def test_the_stored_model_scores_drafts_and_stays_in_memory(make_worker):
    ds, _ = planted_corpus(make_worker)
    refresh = refresh_monitor(ds)
    loaded_refresh, model = scoring_model(ds)
    assert loaded_refresh is not None and loaded_refresh.pk == refresh.pk and isinstance(model, ScoringModel)
    assert scoring_model(ds)[1] is model  # kept per process
    scored = model.score("The man does not walk outside.")
    assert scored["predicted"] == "contradiction" and scored["probabilities"]["contradiction"] > 0.6
    assert scored["words"]["contradiction"][0] == "not"
    plain = model.score("The dog runs at home.")
    assert max(plain["probabilities"].values()) < 0.6
    newer = refresh_monitor(ds)
    assert present(scoring_model(ds)[0]).pk == newer.pk


@pytest.mark.django_db
def test_a_refresh_without_labels_to_learn_from_fails_with_the_reason():
    ds = factories.dataset("empty")
    refresh = refresh_monitor(ds)
    assert refresh.status == JobStatus.FAILED and "at least two labels" in refresh.error
    with pytest.raises(CommandError, match="at least two labels"):
        call_command("refresh_monitor", "--dataset", "empty")


@pytest.mark.django_db(transaction=True)
def test_a_refresh_is_due_after_every_n_new_pairs(make_worker, celery_worker_process):
    """Embedded mode: the queued refresh runs in-process; with a broker: a real worker runs it."""
    ds, _ = planted_corpus(make_worker, writers=2, per_writer=30)
    assert refresh_if_due(ds, every=50)  # 90 pairs, none refreshed yet
    refresh = wait_for(
        lambda: MonitorRefresh.objects.filter(status=JobStatus.DONE).first(), timeout=120, message="the monitor refresh"
    )
    assert refresh.trigger == "new pairs" and refresh.pairs_total == 90
    assert not refresh_if_due(ds, every=50)


def test_the_pure_monitor_on_plain_rows():
    rng = random.Random(1)
    rows = [
        {
            "hypothesis": sentence(rng, "nobody" if i % 3 == 2 else None),
            "label": LABELS[i % 3],
            "genre": "g",
            "writer": None,
        }
        for i in range(300)
    ]
    figures, found = monitor(rows, folds=3)
    model = present(found)
    assert figures["overall"]["accuracy"] > 0.5 and figures["writers"] == []
    assert model.score("nobody sits")["predicted"] == "contradiction"


def test_with_two_labels_the_scores_are_the_binary_models_probabilities():
    rng = random.Random(2)
    rows = [
        {
            "hypothesis": sentence(rng, "not" if i % 2 else None),
            "label": LABELS[2 * (i % 2)],
            "genre": "g",
            "writer": None,
        }
        for i in range(200)
    ]
    model = present(monitor(rows, folds=3)[1])
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    from artifacts.monitor import TOKEN_PATTERN

    vectorizer = CountVectorizer(token_pattern=TOKEN_PATTERN, binary=True, min_df=2)
    X = vectorizer.fit_transform([r["hypothesis"] for r in rows])
    reference = LogisticRegression(C=1.0, max_iter=100, tol=1e-3).fit(X, [r["label"] for r in rows])
    text = "The man not sits at home."
    expected = reference.predict_proba(vectorizer.transform([text]))[0]
    scored = model.score(text)["probabilities"]
    assert scored["neutral"] == 0.0
    assert scored["contradiction"] == pytest.approx(expected[list(reference.classes_).index("contradiction")], abs=1e-3)


@pytest.mark.django_db
def test_the_workers_page_shows_the_flagged_writer_with_the_evidence(client, researcher, make_worker):
    ds, planted = planted_corpus(make_worker)
    refresh_monitor(ds)
    refresh_monitor(ds)
    client.force_login(researcher)
    page = client.get("/dashboard/workers/", {"dataset": "collected"}).content.decode()
    assert 'id="table-flagged-writers"' in page and f'data-worker="{planted.pk}"' in page
    assert "planted" in page and "<strong>not</strong>" in page
    assert 'id="table-monitor-trend"' in page
    other = client.get("/dashboard/workers/").content.decode()
    assert 'id="monitor-empty"' in other  # all datasets together: not refreshed
