"""Guessers in every task kind that collects judgments are held.

In an MPE study random clickers got 6 of 6 codes with the hold on: MPE items built from captions
carry no written label, so the sequential test saw none of their answers. Every kind now feeds the
one guesser evidence (`quality.selectors.guesser_evidence_by_worker`): the written label where the
item has one (validation, recast two-way, adversarial verification), else a researcher's reference
label or catch trial, else the other judges' answers (MPE, grammaticality)."""

import itertools
import random

import pytest
from django.test import Client
from django.urls import reverse
from scipy.stats import binom

from corpus.labels import LABELS
from corpus.models import Dataset, GrammaticalityJudgment, LabelScheme
from corpus.services import add_labels
from crowd.arrival import SESSION_KEY
from crowd.models import Study, StudySession, TaskKind
from quality import sequential
from quality.models import ReferenceLabel
from quality.selectors import guesser_evidence_by_worker, quality_evidence
from tests.present import present
from tests.validation.test_mpe_task import make_mpe_items
from tests.validation.test_scheme_tasks import scheme_pairs
from tests.validation.validation_factories import item_field
from validation.models import ValidationClaim
from validation.premise_label_evidence import premise_label_strata
from validation.selectors import BATCH_SIZE

pytestmark = pytest.mark.django_db
CLICKERS = 6
# A bound on codes earned by chance is passed by chance this rarely (tests/validation/test_batch_order.py).
P_FLOOR = 1e-4
# A clicker is held by the chance test or by the quality test (a uniform clicker is
# far below a study's poor accuracy): either reason holds the code.
HELD = ("Labels at chance so far", "below the study's acceptable accuracy")


def study_of(dataset, kind, slug, tasks_per_batch=4, **options):
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=kind,
        tasks_per_batch=tasks_per_batch,
        completion_code=slug.upper(),
        catch_trial_share=options.pop("catch_trial_share", 0),
        hold_code_at_chance=True,
        **options,
    )


def run_session(study, worker, answer, next_url):
    """One study visit through the pages: every batch answered by `answer(pair)`; the session after."""
    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{worker.pk}")
    client = Client()
    client.force_login(worker.user)
    store = client.session
    store[SESSION_KEY] = session.pk
    store.save()
    for _ in range(study.tasks_per_batch):
        url = client.get(reverse(next_url))["Location"]
        batch = url.rstrip("/").rsplit("/", 1)[-1]
        claims = ValidationClaim.objects.filter(batch=batch, worker=worker).select_related("pair")
        data = {item_field(claim.pair_id, worker): answer(claim.pair) for claim in claims}
        assert client.post(url, data).status_code == 302
    session.refresh_from_db()
    assert session.is_complete
    return session


def uniform_clicker_pass_rate(answers: int, kappa: float, chance: float = 1 / 3) -> float:
    """How often a uniform clicker with `answers` answers keeps their code under the hold's rule
    (`sequential.SequentialResult.holds_code`), at `chance` (a third of three labels, a half of two):
    the binomial tail of the agreement counts the hold lets through. Batches are drawn at random,
    so which item gets which answer changes from run to run: the tests bound how many
    clickers keep a code by this rate, passed by chance at most one run in 1/P_FLOOR."""
    ordinary = sequential.ordinary_agreement(chance, kappa)
    held = [
        k
        for k in range(answers + 1)
        if sequential.sequential_guesser_test(k, answers, chance, ordinary).posterior_at_chance
        >= sequential.HOLD_POSTERIOR
    ]
    return float(binom.sf(max(held), answers, chance))


def test_random_mpe_clickers_are_held_and_honest_judges_are_not(make_worker):
    """MPE items in progress: two judges before them, no written label, no reference.

    Against two judges who agree a uniform clicker's answers are weighed with an ordinary agreement
    of 0.70 (`AGREEING_OTHERS_KAPPA`), so at 20 answers about one clicker in five keeps the code (9
    agreements or more: binomial tail 0.19), and "at most one of six" failed about one run in four
    once batches were drawn at random. Eight batches (40 answers) bring that to about one in fifty;
    the bound on codes is the binomial one that six such clickers pass by chance at most one run in
    ten thousand, and the old code (the hold saw no MPE answer: six codes of six) fails it."""
    dataset, items = make_mpe_items(120, slug="mpe-guessers")
    truth = {item.pk: LABELS[number % 3] for number, item in enumerate(items)}
    earlier = [make_worker(username=f"earlier-{n}") for n in range(2)]
    add_labels([(item, truth[item.pk]) for item in items], worker=earlier[0])
    add_labels([(item, truth[item.pk]) for item in items], worker=earlier[1])
    study = study_of(dataset, TaskKind.MPE_JUDGMENT, "mpe-held", tasks_per_batch=8)
    answers = study.tasks_per_batch * BATCH_SIZE
    pass_rate = uniform_clicker_pass_rate(answers, sequential.AGREEING_OTHERS_KAPPA)
    bound = next(b for b in range(CLICKERS + 1) if binom.sf(b, CLICKERS, pass_rate) <= P_FLOOR)
    rng = random.Random(39)
    held = [
        run_session(study, make_worker(username=f"clicker-{n}"), lambda pair: rng.choice(LABELS), "validation:mpe-next")
        for n in range(CLICKERS)
    ]
    honest = run_session(study, make_worker(username="honest"), lambda pair: truth[pair.pk], "validation:mpe-next")
    codes = sum(bool(session.completion_code) for session in held)
    print(
        f"\nMPE random clickers: {codes} of {CLICKERS} codes earned (each passes with p {pass_rate:.3f}; bound {bound})"
    )
    assert bound < CLICKERS  # every clicker keeping the code (the old code) always fails
    assert codes <= bound
    assert sum(any(reason in session.code_held_reason for reason in HELD) for session in held) == CLICKERS - codes
    assert honest.completion_code and not honest.code_held_reason


def test_random_mpe_clickers_are_held_by_catch_trials_on_fresh_items(make_worker):
    """Fresh items nobody has judged: the researchers' references (catch trials) are the evidence.

    All the items are of one scene (one premise): the claim left a catch trial's premise out of the
    batch and so said "no pairs" with 240 fresh items. One clicker: 18 batches (90 answers) bring
    the chance that a uniform clicker keeps the code under P_FLOOR (at 25 answers it was 0.04)."""
    dataset, items = make_mpe_items(240, slug="mpe-fresh")
    truth = {item.pk: LABELS[number % 3] for number, item in enumerate(items)}
    for item in items[:120]:
        ReferenceLabel.objects.create(pair=item, label=truth[item.pk], is_catch_trial=True)
    study = study_of(dataset, TaskKind.MPE_JUDGMENT, "mpe-fresh", tasks_per_batch=18, catch_trial_share=0.5)
    assert uniform_clicker_pass_rate(study.tasks_per_batch * BATCH_SIZE, sequential.ORDINARY_KAPPA) <= P_FLOOR
    rng = random.Random(40)
    clicker = make_worker(username="fresh-clicker")
    session = run_session(study, clicker, lambda pair: rng.choice(LABELS), "validation:mpe-next")
    assert not session.completion_code and "Labels at chance so far" in session.code_held_reason
    honest = run_session(
        study, make_worker(username="fresh-honest"), lambda pair: truth[pair.pk], "validation:mpe-next"
    )
    assert honest.completion_code and not honest.code_held_reason


def test_random_recast_clickers_are_held_and_honest_judges_are_not(make_worker):
    """Recast two-way, 90 answers a visit: coin flippers, and clickers who always answer "not-entailed"
    where three pairs in four are (75% agreement, all of it habit: the fixed 0.75 took it for ordinary).

    At 30 answers a coin flipper kept the code one time in ten, so "at most one code" failed about
    one run in thirty once batches were drawn at random; at 90 it is one in five hundred, and the
    bound is the binomial one (habit clickers are held whatever the draw)."""
    dataset, pairs = scheme_pairs("recast-guessers", LabelScheme.TWO_WAY, n=200, author_label="neutral")
    for pair in pairs[::4]:  # a quarter entailed
        type(pair).objects.filter(pk=pair.pk).update(author_label="entailment")
    study = study_of(dataset, TaskKind.VALIDATION, "recast-held", tasks_per_batch=18)
    coins = CLICKERS // 2
    pass_rate = uniform_clicker_pass_rate(study.tasks_per_batch * BATCH_SIZE, sequential.ORDINARY_KAPPA, chance=1 / 2)
    bound = next(b for b in range(coins + 1) if binom.sf(b, coins, pass_rate) <= P_FLOOR)
    rng = random.Random(41)
    word = {"entailment": "entailed", "neutral": "not-entailed"}
    sessions = [
        run_session(
            study, make_worker(username=f"coin-{n}"), lambda pair: rng.choice(list(word.values())), "validation:next"
        )
        for n in range(coins)
    ] + [
        run_session(study, make_worker(username=f"habit-{n}"), lambda pair: "not-entailed", "validation:next")
        for n in range(CLICKERS // 2)
    ]
    honest = run_session(
        study, make_worker(username="recast-honest"), lambda pair: word[pair.author_label], "validation:next"
    )
    codes = sum(bool(session.completion_code) for session in sessions)
    print(
        f"\nrecast random and habit clickers: {codes} of {CLICKERS} codes earned "
        f"(a coin flipper passes with p {pass_rate:.4f}; bound {bound})"
    )
    assert bound <= 1
    assert codes <= bound
    assert honest.completion_code and not honest.code_held_reason


def test_grammaticality_judgments_feed_the_evidence_against_the_other_judges(make_worker):
    dataset, pairs = scheme_pairs("gram-evidence", LabelScheme.TWO_WAY, n=40)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=5)
    judges = [make_worker(username=f"judge-{n}") for n in range(2)]
    for judge in judges:
        GrammaticalityJudgment.objects.bulk_create(
            GrammaticalityJudgment(pair=pair, worker=judge, judgment="none" if n % 4 else "major")
            for n, pair in enumerate(pairs)
        )
    rng = random.Random(42)
    clicker = make_worker(username="gram-clicker")
    GrammaticalityJudgment.objects.bulk_create(
        GrammaticalityJudgment(pair=pair, worker=clicker, judgment=rng.choice(["none", "minor", "major"]))
        for pair in pairs
    )
    evidence = guesser_evidence_by_worker([clicker.pk, judges[0].pk])
    assert evidence[clicker.pk].holds_code and evidence[clicker.pk].items == 40
    assert not evidence[judges[0].pk].holds_code


def test_per_premise_clickers_are_held_and_honest_judges_are_not(make_worker):
    """MPE's per-premise labels (§5.2) are evidence too. Before, a per-premise
    study handed every clicker a code (no hold was asked); now each label is weighed against the
    other judges' labels of its premise pair (`validation.premise_label_evidence`), and a uniform
    clicker (a third right) is far below the study's poor accuracy."""
    from tests.validation.premise_helpers import make_items
    from validation.models import PremiseLabelClaim, PremisePair
    from validation.premise_labels import add_premise_labels, claim_premise_batch, submit_premise_batch

    dataset, _ = make_items(24, slug="spe-guessers")
    pairs = list(PremisePair.objects.filter(item__dataset=dataset))
    truth = {pair.pk: LABELS[(pair.pk * 7) % 3] for pair in pairs}
    for n in range(2):
        add_premise_labels(make_worker(username=f"spe-earlier-{n}"), truth)
    study = study_of(dataset, TaskKind.PREMISE_LABELS, "spe-held", tasks_per_batch=4)

    def session_of(worker, answer):
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{worker.pk}")
        for _ in range(study.tasks_per_batch):
            batch = present(claim_premise_batch(worker, study_session=session))
            claims = PremiseLabelClaim.objects.filter(batch=batch, worker=worker)
            submit_premise_batch(
                worker, batch, {claim.premise_pair_id: answer(claim.premise_pair_id) for claim in claims}
            )
        session.refresh_from_db()
        assert session.is_complete
        return session

    # Right every third answer, whatever order the batches come in: a uniform clicker's share.
    turn = itertools.count()

    def at_chance(pk):
        right = LABELS.index(truth[pk])
        return LABELS[right if next(turn) % 3 == 0 else (right + 1) % 3]

    clicker = session_of(make_worker(username="spe-clicker"), at_chance)
    honest = session_of(make_worker(username="spe-honest"), lambda pk: truth[pk])
    assert not clicker.completion_code and "below the study's acceptable accuracy" in clicker.code_held_reason
    assert not quality_evidence(clicker.worker).holds_code  # without the per-premise labels: no evidence
    assert quality_evidence(clicker.worker, more=premise_label_strata(clicker.worker)).holds_code
    assert honest.completion_code and not honest.code_held_reason
