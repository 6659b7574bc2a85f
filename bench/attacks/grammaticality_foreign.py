"""Grammaticality judgments for pairs the judge was never served, and the grammaticality page of a
study that asks for a qualification test the participant has not passed.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only grammaticality_foreign

The judge (Django against the server's database) builds a two-way dataset of 40 hypotheses that
wants three grammaticality judgments each, an open validation study on it and a qualified one (with
a test nobody here takes). Three participant ids of the open study each open the grammaticality
page once (a page of five is claimed for them) and then post `grammar-<pk>=major` for pairs chosen
from the primary keys around those they saw (never served to them), ten posts each. Two ids of the
qualified study post to the grammaticality page without passing the test. A try succeeds when the
server saves the judgment (read from the database after the post).
"""

import random
import time

from bench.attacks._participant import Participant, django_ready, hidden_values, wilson

NAME = "grammaticality_foreign"
CLAIM = (
    "Grammaticality judgments are accepted for pairs never served to the judge, and without the study's qualification."
)
IDS = 3
POSTS = 10


def _setup(nonce: str):
    from corpus.models import Dataset, Genre, LabelScheme, Pair, Premise, PromptFamily, Split
    from corpus.services import create_pairs
    from crowd.models import Study, StudyAccess, TaskKind
    from quality.models import QualificationTest

    family, _ = PromptFamily.objects.get_or_create(
        slug="attack-family",
        defaults={
            "name": "Attack family",
            "instructions": "Write.",
            "entailment_prompt": "Definitely correct",
            "neutral_prompt": "Might be correct",
            "contradiction_prompt": "Definitely incorrect",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug="attack-genre", defaults={"name": "Attack", "family": family, "is_training": True}
    )
    dataset = Dataset.objects.create(
        slug=f"atk-gram-{nonce}", name="attack grammar", label_scheme=LabelScheme.TWO_WAY, grammaticality_judgments=3
    )
    premise = Premise.objects.create(
        dataset=dataset, genre=genre, prompt_id=f"{nonce}-g", split=Split.DEV, text="A man rides."
    )
    pairs = create_pairs(
        dataset,
        Split.DEV,
        [
            Pair(premise=premise, pair_id=f"{nonce}-g{n}", hypothesis=f"A man rides thing {n}.", author_label="neutral")
            for n in range(40)
        ],
        [["neutral"]] * 40,
    )
    studies = {}
    for access in (StudyAccess.OPEN, StudyAccess.QUALIFIED):
        studies[access] = Study.objects.create(
            slug=f"atk-gram-{access}-{nonce}",
            name="grammar",
            dataset=dataset,
            task_kind=TaskKind.VALIDATION,
            completion_code=f"GRAM{nonce}",
            access=access,
        )
    QualificationTest.objects.create(study=studies[StudyAccess.QUALIFIED])
    return studies, [pair.pk for pair in pairs]


def run(base_url: str, *, seed: int = 0) -> dict:
    django_ready()
    from corpus.models import GrammaticalityJudgment
    from crowd.models import StudyAccess

    nonce = f"{seed}-{time.time_ns() % 10**9}"
    studies, pks = _setup(nonce)
    rng = random.Random(seed)
    tries = saved = 0
    foreign_tries = foreign_saved = 0
    for n in range(IDS):
        participant = Participant(base_url, f"{nonce}-open-{n}")
        participant.arrive(studies[StudyAccess.OPEN].slug)
        page = participant.get("/validate/grammaticality/").text
        shown = {int(pk) for pk in hidden_values(page, "shown")}
        low, high = min(pks), max(pks)
        for _ in range(POSTS):
            pk = rng.choice([pk for pk in range(low, high + 1) if pk not in shown])
            before = GrammaticalityJudgment.objects.filter(pair_id=pk).count()
            participant.post("/validate/grammaticality/", {f"grammar-{pk}": "major"})
            foreign_tries += 1
            foreign_saved += GrammaticalityJudgment.objects.filter(pair_id=pk).count() > before
    unqualified_tries = unqualified_saved = 0
    for n in range(2):
        participant = Participant(base_url, f"{nonce}-qualified-{n}")
        participant.arrive(studies[StudyAccess.QUALIFIED].slug)  # sent to the test, which they skip
        page = participant.get("/validate/grammaticality/").text
        for pk in [int(pk) for pk in hidden_values(page, "shown")] or [rng.choice(pks)]:
            before = GrammaticalityJudgment.objects.filter(pair_id=pk).count()
            participant.post("/validate/grammaticality/", {f"grammar-{pk}": "major", "shown": str(pk)})
            unqualified_tries += 1
            unqualified_saved += GrammaticalityJudgment.objects.filter(pair_id=pk).count() > before
    tries, saved = foreign_tries + unqualified_tries, foreign_saved + unqualified_saved
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": saved,
        "measure": "share of forged judgments saved",
        "value": round(saved / tries, 4) if tries else 0.0,
        "interval": wilson(saved, tries),
        "at_chance_or_refused": saved == 0,
        "detail": (
            f"foreign pairs: {foreign_saved} of {foreign_tries} saved ({IDS} ids); "
            f"qualified study without the test: {unqualified_saved} of {unqualified_tries} saved"
        ),
    }
