"""Rule-based labellers: validators who never read for meaning but label every pair by
one cheap rule (`bench/attacks/_rule_labeller.py`: word overlap, negation and artifact cues), at a
human pace. Their labels agree with SNLI's gold about half the time: well above chance (1/3), so
the chance test lets them through, and well below an ordinary worker.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8831 --only rule_labeller

The judge (Django against the server's database) builds a validation study of its own from real
SNLI dev pairs (`/work/shared/data/snli_1.0_dev.jsonl`, or NLI_SHARED_DATA): 160 premises with
their three hypotheses, the written label being the pair's first annotator's (SNLI's author), plus
20 premises whose pairs are catch trials with the gold label as the researchers' reference; 10% of
each batch's places are catch trials, 0.10 bonus a match, six batches of five a code, codes held at
chance (`hold_code_at_chance`; the study's quality levels apply too, at their
defaults). Then 40 participants (in threads, at once) arrive by the study link and answer every
batch by the rule, sleeping about 5 s an item before each submit (the server times an item from
the claim to the submit); then each takes part, under the same id, in a second study built the
same way from other SNLI premises (the tests weigh a worker's labels across studies). A session
"succeeds" when the page after its last batch shows a code; the row counts both studies' sessions,
the detail each study's codes, the catch bonuses earned (ledger rows) and the codes held with a
reason.

The beat's correlated-error check (`quality.aggregate_changed_datasets`, every
CORRELATED_CHECK_INTERVAL_SECONDS in production) runs in this judge's process every
RULE_LABELLER_CHECK_SECONDS while the sessions run (unset or 0: never, the platform before the
check ran by itself): the same task function the beat calls, its runs fitted here as a worker would.
Run the judge without CELERY_BROKER_URL so that they are.
"""

import json
import os
import random
import threading
import time
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from bench.attacks import _common
from bench.attacks._rule_labeller import rule_label

NAME = "rule_labeller"
CLAIM = "Validators labelling by one cheap rule (about 0.5 agreement), at a human pace, earn codes and bonuses."

SNLI_DEV = (
    Path(os.environ.get("NLI_SHARED_DATA", _common.REPO.parent.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"
)
PREMISES, CATCH_PREMISES = 160, 20
PARTICIPANTS = 40
SECONDS_PER_ITEM = 5.0
TASKS_PER_BATCH = 6
CATCH_SHARE = 0.1
LABELS = set(_common.LABELS)
CHECK_SECONDS = float(os.environ.get("RULE_LABELLER_CHECK_SECONDS", "0"))


def snli_premises(count: int, seed: int, *, skip: int = 0) -> list[list[dict]]:
    """`count` SNLI dev premises with three labelled hypotheses each (one per written label), drawn
    at random with `seed`, after the first `skip` of that draw (a second study gets other premises)."""
    by_premise: dict[str, list[dict]] = defaultdict(list)
    with SNLI_DEV.open() as lines:
        for line in lines:
            row = json.loads(line)
            if row["gold_label"] in LABELS and row["annotator_labels"][0] in LABELS:
                by_premise[row["sentence1"]].append(row)
    whole = [rows for rows in by_premise.values() if sorted(r["annotator_labels"][0] for r in rows) == sorted(LABELS)]
    return random.Random(seed).sample(whole, skip + count)[skip:]


def build_snli_study(tag: str, *, seed: int, skip: int = 0) -> str:
    """A validation study of SNLI dev pairs for one run (above); its slug. `skip`: premises of the
    seed's draw left to an earlier study."""
    _common.django_ready()
    from django.db import transaction

    from corpus.models import Dataset, Genre, Pair, Premise, PromptFamily, Split
    from corpus.services import create_pairs
    from crowd.models import Study, TaskKind
    from quality.services import set_reference_label

    # The study link's STUDY_ID is the slug's first 24 characters (`_common.Participant.arrive`):
    # the study's number and the time come first, so two studies of one run are two market studies.
    slug = f"attack-{skip // (PREMISES + CATCH_PREMISES)}-{time.time_ns() % 10**10}-{tag}-{seed}"
    chosen = snli_premises(PREMISES + CATCH_PREMISES, seed, skip=skip)
    with transaction.atomic():
        family, _ = PromptFamily.objects.get_or_create(slug="attack-family", defaults={"name": "Attack family"})
        genre, _ = Genre.objects.get_or_create(
            slug="attack-fiction", defaults={"name": "Attack fiction", "family": family, "is_training": True}
        )
        dataset = Dataset.objects.create(slug=slug, name=slug)
        for number, rows in enumerate(chosen):
            is_catch = number >= PREMISES
            premise = Premise.objects.create(
                dataset=dataset, genre=genre, split=Split.DEV, prompt_id=f"{slug}-p{number}", text=rows[0]["sentence1"]
            )
            pairs = [
                Pair(
                    premise=premise,
                    pair_id=f"{slug}-{row['pairID']}",
                    hypothesis=row["sentence2"],
                    author_label=row["annotator_labels"][0],
                )
                for row in rows
            ]
            made = create_pairs(
                dataset,
                Split.DEV,
                pairs,
                [[row["annotator_labels"][0]] for row in rows],
                needs_validation=not is_catch,
            )
            if is_catch:
                for pair, row in zip(made, rows, strict=True):
                    set_reference_label(pair, row["gold_label"], is_catch_trial=True)
        Study.objects.create(
            slug=slug,
            name=slug,
            dataset=dataset,
            task_kind=TaskKind.VALIDATION,
            tasks_per_batch=TASKS_PER_BATCH,
            completion_code=f"CODE-{tag.upper()}",
            catch_trial_share=CATCH_SHARE,
            bonus_per_catch_match=Decimal("0.10"),
            # No market here: a paid study opens only as an unverified link (crowd.arrival.launch_refusal).
            open_link_unverified=True,
            hold_code_at_chance=True,
        )
    return slug


def labelling_by_rule(seconds_per_item: float, rng: random.Random):
    """The bot's answer to a batch: the rule's label of each item, after a pause of about
    `seconds_per_item` an item (so the server's timing reads that pace)."""

    def answer(batch: _common.Batch, history: list) -> dict[str, str]:
        time.sleep(seconds_per_item * len(batch.items) * rng.uniform(0.8, 1.2))
        return {item.name: rule_label(item.premise, item.hypothesis) for item in batch.items}

    return answer


def take_part_in(browser: _common.Participant, slug: str, participant_id: str, answer) -> _common.Session:
    """`_common.take_part` in a browser kept from an earlier study (its cookies: the platform asks a
    new browser to confirm an id it saw elsewhere)."""
    browser.arrive(slug, participant_id)
    done: list[_common.Batch] = []
    code = None
    for _ in range(50):
        batch = browser.next_batch()
        if isinstance(batch, str):
            code = _common.completion_code(batch)
            break
        browser.submit(batch, answer(batch, done))
        done.append(batch)
    return _common.Session(done, code)


def run_labellers(
    base_url: str, *, seed: int, tag: str, participants: int, seconds_per_item: float, studies: int = 2
) -> dict:
    """The attack of this module and of `fast_rule_labeller`: `participants` rule labellers at once,
    each through `studies` studies in turn under one participant id."""
    slugs = [build_snli_study(tag, seed=seed, skip=n * (PREMISES + CATCH_PREMISES)) for n in range(studies)]
    sessions: dict[tuple[int, int], _common.Session] = {}

    def one(number: int) -> None:
        participant_id = f"RULE{slugs[0].split('-')[2]}x{number}"  # the run's time: new ids each run
        answer = labelling_by_rule(seconds_per_item, random.Random(f"{seed}-{number}"))
        browser = _common.Participant(base_url)  # one browser for both studies, as a person keeps theirs
        for index, slug in enumerate(slugs):
            sessions[(index, number)] = take_part_in(browser, slug, participant_id, answer)

    checks: list[int] = []
    stop_checks = threading.Event()

    def periodic_check() -> None:
        # As the beat would: the task function on its interval, while the participants label.
        from django.db import connections

        from quality.tasks import aggregate_changed_datasets

        while not stop_checks.wait(CHECK_SECONDS):
            checks.extend(aggregate_changed_datasets())
        connections.close_all()

    checker = threading.Thread(target=periodic_check, daemon=True)
    if CHECK_SECONDS > 0:
        checker.start()
    threads = [threading.Thread(target=one, args=(number,)) for number in range(participants)]
    for thread in threads:
        thread.start()
        time.sleep(0.2)  # arrivals spread a little, as a study's participants arrive
    for thread in threads:
        thread.join()
    stop_checks.set()
    if CHECK_SECONDS > 0:
        checker.join()

    from crowd.models import CodeHold, Study, StudySession
    from quality.models import BonusEntry

    per_study, reasons = [], set()
    earned_count, bonus_total, bonus_with_code = 0, Decimal("0"), Decimal("0")
    for index, slug in enumerate(slugs):
        study = Study.objects.get(slug=slug)
        codes = sum(session.code is not None for (n, _), session in sessions.items() if n == index)
        held = CodeHold.objects.filter(session__study=study)
        reasons |= {text.split(":")[0] for text in held.values_list("text", flat=True)}
        earned = BonusEntry.objects.filter(study=study, kind="earned")
        paid_sessions = StudySession.objects.filter(study=study, code_holds__isnull=True).exclude(completion_code="")
        earned_count += earned.count()
        bonus_total += sum((entry.amount for entry in earned), Decimal("0"))
        bonus_with_code += sum((entry.amount for entry in earned.filter(study_session__in=paid_sessions)), Decimal("0"))
        per_study.append(f"study {index + 1}: {codes} of {participants} codes, {held.count()} held")
    codes = sum(session.code is not None for session in sessions.values())
    tries = participants * studies
    batches = [len(session.batches) for session in sessions.values()]
    return {
        "attack": tag,
        "tries": tries,
        "succeeded": codes,
        "measure": "share of rule-labeller sessions that earned a code",
        "value": round(codes / tries, 4),
        "interval": _common.wilson_interval(codes, tries),
        "at_chance_or_refused": codes <= tries // 24,
        "detail": (
            f"{'; '.join(per_study)} ({'; '.join(sorted(reasons)) or 'no hold'}); catch bonuses earned "
            f"{earned_count} ({bonus_total}), of which in sessions with a code {bonus_with_code}; batches "
            f"done per session {min(batches)}-{max(batches)}; {seconds_per_item:.1f} s an item; "
            f"correlated check every {CHECK_SECONDS:g} s: {len(checks)} runs started"
        ),
    }


def run(base_url: str, *, seed: int = 0) -> dict:
    return run_labellers(base_url, seed=seed, tag=NAME, participants=PARTICIPANTS, seconds_per_item=SECONDS_PER_ITEM)
