"""Qualification learnt by throwaway ids: one person arrives at a qualified study as forty participant
ids in turn, learns the test's answers from the pass-or-fail of their tries, then arrives as the
attacker's "real" id, answers what it learnt and hopes to be trusted (the pool that trusted-only
datasets are open to).

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 \\
        --only qualification_throwaway_ids

The judge (Django against the server's database) builds, per round, a qualified writing study whose
test holds a pool of POOL researcher-labelled pairs, asked TRY_SIZE at a time where the platform
draws items per try (the whole pool where it does not), pass mark 2/3 and two tries per participant.
The attacker speaks HTTP only and sees what a browser sees: the test page's sentences and radio
fields, and where each submit sends it (on to the task: passed; back to the test or a refusal:
failed). It keeps what it saw by the sentences' text, not by field names, and guesses like a
Mastermind player: each try answers a labelling of the pool that agrees with every pass and fail so
far; a passing try's answers are replayed where its sentences come again. Each try draws items
its id and its browser were not shown before, and says pass or fail only. A round succeeds when the
real id passes at its first try and becomes trusted: in one browser (the device's try budget), or
with a fresh browser (cookie jar) for every id, real id included, which no device count can stop:
there the study's ids are unverified (no market connection, no signed links), so a pass admits the
id to this study and trusts it nowhere (`quality.qualification.grants_trust`).
"""

import html
import itertools
import random
import re
import time

from bench.attacks._participant import Participant, django_ready, radio_fields, wilson

NAME = "qualification_throwaway_ids"
CLAIM = (
    "Throwaway ids (one browser, or a fresh browser each) learn the qualification answers; the real id then "
    "passes at its first try and is trusted."
)
ROUNDS = 3
THROWAWAY_IDS = 40
POOL = 6
TRY_SIZE = 3
PASS_MARK = 2 / 3
MAX_ATTEMPTS = 2
LABELS = ("entailment", "neutral", "contradiction")
_FIELDSET = re.compile(
    r'<fieldset class="card validation-pair.*?<p class="premise">(.*?)</p>.*?<p class="hypothesis">(.*?)</p>'
    r'.*?<input type="radio"[^>]*name="([^"]+)"',
    re.S,
)
_NEEDED = re.compile(r"if at least (\d+) of your (\d+) answers match")


def _setup(nonce: str) -> str:
    """A qualified writing study with a test of POOL reference items; its slug."""
    from django.db import transaction

    from corpus.models import Dataset, Genre, Pair, Premise, PromptFamily, Split
    from corpus.services import create_pairs
    from crowd.models import Study, StudyAccess, TaskKind
    from quality.models import QualificationTest, ReferenceLabel

    rng = random.Random(nonce)
    with transaction.atomic():
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
        dataset = Dataset.objects.create(slug=f"atk-qual-{nonce}", name="attack qualification")
        for number in range(3):
            Premise.objects.create(
                dataset=dataset, genre=genre, prompt_id=f"{nonce}-w{number}", split=Split.TRAIN, text="A dog runs."
            )
        reference = Dataset.objects.create(slug=f"atk-qual-ref-{nonce}", name="attack qualification items")
        study = Study.objects.create(
            slug=f"atk-qual-{nonce}",
            name="qualified writing",
            dataset=dataset,
            task_kind=TaskKind.WRITING,
            completion_code=f"QUAL{nonce}",
            access=StudyAccess.QUALIFIED,
        )
        test = QualificationTest(study=study, pass_mark=PASS_MARK, max_attempts=MAX_ATTEMPTS)
        if hasattr(test, "items_per_try"):  # the platform that draws a try from a pool
            test.items_per_try = TRY_SIZE
        test.save()
        for number in range(POOL):
            premise = Premise.objects.create(
                dataset=reference,
                genre=genre,
                prompt_id=f"{nonce}-q{number}",
                split=Split.DEV,
                text=f"Item {number}: a man in a {rng.choice(['red', 'blue', 'green'])} coat waits.",
            )
            label = rng.choice(LABELS)
            (pair,) = create_pairs(
                reference,
                Split.DEV,
                [Pair(premise=premise, pair_id=f"{nonce}-q{number}", hypothesis=f"Someone waits ({number}).")],
                [[label]],
            )
            test.items.add(ReferenceLabel.objects.create(pair=pair, label=label))
    return study.slug


class Learner:
    """What the attacker knows: every try's answers (by the items' text) and whether it passed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.items: list[str] = []
        self.tries: list[tuple[dict[str, str], int, bool]] = []  # (answers, matches needed, passed)

    def _consistent(self) -> list[dict[str, str]]:
        found = []
        for labels in itertools.product(LABELS, repeat=len(self.items)):
            candidate = dict(zip(self.items, labels, strict=True))
            if all(
                (sum(candidate[item] == label for item, label in answers.items()) >= needed) == passed
                for answers, needed, passed in self.tries
            ):
                found.append(candidate)
        return found

    def answer(self, shown: list[str]) -> dict[str, str]:
        for item in shown:
            if item not in self.items:
                self.items.append(item)
        for answers, _, passed in self.tries:
            if passed and set(shown) <= set(answers):
                return {item: answers[item] for item in shown}
        candidates = self._consistent()
        chosen = self.rng.choice(candidates) if candidates else {}
        return {item: chosen.get(item, self.rng.choice(LABELS)) for item in shown}

    def learnt(self, answers: dict[str, str], needed: int, passed: bool) -> None:
        self.tries.append((answers, needed, passed))


class Browser(Participant):
    """One browser (one cookie jar) that may arrive as several participant ids."""

    def arrive_as(self, slug: str, pid: str) -> None:
        self.pid = pid
        page = self.arrive(slug)
        if 'name="switch"' in page.text:  # another id was signed in here: the platform asks first
            params = {"PROLIFIC_PID": pid, "STUDY_ID": f"attack-{slug}", "SESSION_ID": pid, "switch": "yes"}
            self.post(f"/study/{slug}/", params)

    def take_try(self, slug: str, learner: Learner) -> bool | None:
        """One try at the test: passed, failed, or None where no try was offered."""
        page = self.get(f"/qualify/{slug}/").text
        shown = {
            name: f"{html.unescape(premise).strip()} | {html.unescape(hypothesis).strip()}"
            for premise, hypothesis, name in _FIELDSET.findall(page)
        }
        fields = radio_fields(page)
        needed = _NEEDED.search(page)
        if not shown or not fields or needed is None:
            return None
        answers = learner.answer(list(shown.values()))
        data = {name: answers[text] for name, text in shown.items()}
        data.update({name: value for name, value in _hidden(page).items() if name != "csrfmiddlewaretoken"})
        response = self.post(f"/qualify/{slug}/", data, allow_redirects=False)
        passed = response.status_code == 302 and "/qualify/" not in response.headers.get("Location", "")
        learner.learnt(answers, int(needed.group(1)), passed)
        return passed


def _hidden(page: str) -> dict[str, str]:
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
    }


def _trusted(pid: str) -> bool:
    from corpus.models import Worker

    return Worker.objects.filter(external_id=pid, is_trusted=True).exists()


def _round(
    base_url: str, nonce: str, rng: random.Random, *, one_browser: bool, ids: int = THROWAWAY_IDS
) -> tuple[bool, int, int, bool]:
    """(the real id passed at its first try, throwaway tries taken, throwaway ids that passed, the real id is trusted)."""
    slug = _setup(nonce)
    learner = Learner(rng)
    shared = Browser(base_url, "")
    tries = passes = 0
    for number in range(ids):
        browser = shared if one_browser else Browser(base_url, "")
        browser.arrive_as(slug, f"{nonce}-throwaway-{number}")
        for _ in range(MAX_ATTEMPTS):
            result = browser.take_try(slug, learner)
            if result is None:
                break
            tries += 1
            passes += result
            if result:
                break
    real = shared if one_browser else Browser(base_url, "")
    real.arrive_as(slug, f"{nonce}-real")
    passed = real.take_try(slug, learner) is True
    return passed, tries, passes, _trusted(f"{nonce}-real")


def run(base_url: str, *, seed: int = 0, ids: int = THROWAWAY_IDS, rounds: int = ROUNDS) -> dict:
    django_ready()
    rng = random.Random(seed)
    nonce = f"{seed}-{time.time_ns() % 10**9}"
    one_browser = [_round(base_url, f"{nonce}-b{n}", rng, one_browser=True, ids=ids) for n in range(rounds)]
    fresh = [_round(base_url, f"{nonce}-f{n}", rng, one_browser=False, ids=ids) for n in range(rounds)]
    tried = one_browser + fresh
    succeeded = sum(passed and trusted for passed, _, _, trusted in tried)
    return {
        "attack": NAME,
        "tries": len(tried),
        "succeeded": succeeded,
        "measure": "real ids passing at their first try and trusted, after throwaway ids (one browser or fresh ones)",
        "value": round(succeeded / len(tried), 4),
        "interval": wilson(succeeded, len(tried)),
        "at_chance_or_refused": succeeded == 0,
        "detail": (
            f"one browser: throwaway tries taken {[r[1] for r in one_browser]} (passes {[r[2] for r in one_browser]}), "
            f"real id passed at first try {sum(r[0] for r in one_browser)} of {rounds}, trusted "
            f"{sum(r[3] for r in one_browser)}; a fresh browser per id (what device counting cannot stop): "
            f"throwaway tries {[r[1] for r in fresh]} (passes {[r[2] for r in fresh]}), real id passed "
            f"{sum(r[0] for r in fresh)} of {rounds}, trusted {sum(r[3] for r in fresh)}"
        ),
    }
