"""What the validation attacks share: a study to attack, a participant who speaks HTTP only, and the
statistics that say whether an attack beat chance.

The attacker's side (`Participant`) uses the standard library only and sees what a browser sees: the
study link, `/validate/next/`, the batch page's HTML, the submit and the completion page. The judge's
side (`build_validation_study`, `batch_truth`) runs Django against the server's own database
(DATABASE_URL as the server has it): it builds the study before the attack and reads, after each
batch, which item was which (its author label, whether it was a catch trial), to score the attack.
Nothing the judge reads is shown to the attacker.

The study's pairs are written the way the writing task writes them (one premise, three hypotheses:
entailment, neutral, contradiction, saved in that order) with hypotheses drawn from one vocabulary
whatever their label, so that a classifier that beats chance learned it from the platform (order,
repetition, timing, identifiers), not from annotation artifacts in the text. The catch-trial pool is
made of whole premises too (three researcher-labelled pairs each), as a researcher would mark them.
"""

import html
import http.cookiejar
import math
import os
import random
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
LABELS = ("entailment", "neutral", "contradiction")

# --- the judge: Django against the server's database -------------------------------------------


def django_ready() -> None:
    """Django set up against the database named by DATABASE_URL (the server's)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("SECRET_KEY", "attack-suite-judge")
    import django

    django.setup()


WORDS = [
    "man",
    "woman",
    "child",
    "dog",
    "cat",
    "car",
    "street",
    "park",
    "house",
    "table",
    "river",
    "bridge",
    "market",
    "crowd",
    "band",
    "song",
    "chair",
    "window",
    "garden",
    "kitchen",
    "train",
    "station",
    "letter",
    "phone",
    "book",
    "shop",
    "road",
    "field",
    "boat",
    "hill",
    "tree",
    "door",
    "lamp",
    "walks",
    "sits",
    "holds",
    "reads",
    "paints",
    "carries",
    "watches",
    "opens",
    "closes",
    "buys",
    "sells",
    "plays",
    "waits",
    "runs",
    "sleeps",
    "red",
    "old",
    "small",
    "busy",
    "quiet",
    "bright",
    "open",
    "tall",
    "wet",
    "green",
    "slow",
    "early",
    "late",
    "near",
    "behind",
    "under",
    "over",
]


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def build_validation_study(
    tag: str, *, seed: int, premises: int, catch_premises: int, share: float, tasks_per_batch: int
) -> str:
    """A validation study of its own (dataset, queue, catch pool) for one attack run; its slug.

    `premises` premises with three pairs each (written E, N, C in that order, dev split, so every pair
    wants four validation labels), `catch_premises` more whose three pairs are catch trials; the
    study holds codes at chance, pays a bonus per catch match, takes unsigned links and `share` of
    each batch's places as catch trials.
    """
    django_ready()
    from django.db import transaction

    from corpus.models import Dataset, Genre, Pair, Premise, PromptFamily, Split
    from corpus.services import create_pairs
    from crowd.models import Study, TaskKind
    from quality.services import set_reference_label

    rng = random.Random(seed)
    slug = f"attack-{tag}-{seed}-{time.time_ns() % 10**10}"
    with transaction.atomic():
        family, _ = PromptFamily.objects.get_or_create(slug="attack-family", defaults={"name": "Attack family"})
        genre, _ = Genre.objects.get_or_create(
            slug="attack-fiction", defaults={"name": "Attack fiction", "family": family, "is_training": True}
        )
        dataset = Dataset.objects.create(slug=slug, name=slug)
        for number in range(premises + catch_premises):
            is_catch = number >= premises
            premise = Premise.objects.create(
                dataset=dataset,
                genre=genre,
                split=Split.DEV,
                prompt_id=f"{slug}-p{number}",
                text=_sentence(rng, 10, 18),
            )
            pairs = [
                Pair(
                    premise=premise,
                    pair_id=f"{slug}-{number}{label[0]}",
                    hypothesis=_sentence(rng, 5, 9),
                    author_label=label,
                )
                for label in LABELS
            ]
            made = create_pairs(dataset, Split.DEV, pairs, [[label] for label in LABELS], needs_validation=not is_catch)
            if is_catch:
                for pair in made:
                    set_reference_label(pair, pair.author_label, is_catch_trial=True)
        Study.objects.create(
            slug=slug,
            name=slug,
            dataset=dataset,
            task_kind=TaskKind.VALIDATION,
            tasks_per_batch=tasks_per_batch,
            completion_code=f"CODE-{tag.upper()}",
            catch_trial_share=share,
            bonus_per_catch_match=Decimal("0.10"),
            # No market here: a paid study opens only as an unverified link (crowd.arrival.launch_refusal).
            open_link_unverified=True,
            hold_code_at_chance=True,
        )
    return slug


@dataclass
class Truth:
    """The judge's view of one served item."""

    author_label: str
    is_catch: bool
    premise_id: int


def batch_truth(batch: str) -> dict[str, Truth]:
    """{the item's field name on the page: what it really is}, for one batch."""
    django_ready()
    from validation.forms import claim_field_name
    from validation.models import ValidationClaim

    claims = ValidationClaim.objects.filter(batch=batch).select_related("pair")
    return {
        claim_field_name(claim): Truth(claim.pair.author_label, claim.is_catch_trial, claim.pair.premise_id)
        for claim in claims
    }


# --- the attacker: a participant over HTTP -----------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


ITEM = re.compile(
    r'<fieldset class="card validation-pair[^"]*" data-item="([^"]+)".*?'
    r'<p class="premise">(.*?)</p>.*?<p class="hypothesis">(.*?)</p>',
    re.S,
)
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
CODE = re.compile(r'id="completion-code">([^<]*)<')


@dataclass
class Item:
    """One item as the participant sees it."""

    name: str  # the form field (an opaque token on the fixed platform)
    premise: str
    hypothesis: str
    position: int
    batch_size: int


@dataclass
class Batch:
    url: str
    items: list[Item]
    next_ms: float  # how long /validate/next/ took to answer
    page_ms: float  # how long the batch page took
    csrf: str
    truth: dict[str, Truth] = field(default_factory=dict)

    @property
    def batch_id(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


class Participant:
    """One crowdworker's browser: a cookie jar, no redirects followed unasked."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect())

    def request(self, path: str, data: dict[str, str] | None = None) -> tuple[int, str, str, float]:
        """(status, body, Location, milliseconds) of one request, redirects not followed."""
        url = path if path.startswith("http") else self.base + path
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(url, data=body, headers={"Referer": url})
        start = time.perf_counter()
        try:
            with self.opener.open(req, timeout=60) as response:
                text = response.read().decode()
                status, location = response.status, response.headers.get("Location", "")
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            status, location = error.code, error.headers.get("Location", "")
        return status, text, location, (time.perf_counter() - start) * 1000

    def arrive(self, slug: str, participant_id: str) -> int:
        query = urllib.parse.urlencode(
            {"PROLIFIC_PID": participant_id, "STUDY_ID": slug[:24], "SESSION_ID": f"s{participant_id}"}
        )
        status, _, _, _ = self.request(f"/study/{slug}/?{query}")
        return status

    def next_batch(self) -> Batch | str:
        """The next batch, or the page shown instead (the completion page, no work, a refusal)."""
        status, text, location, next_ms = self.request("/validate/next/")
        if status != 302 or "/batch/" not in location:
            return text
        _, page, _, page_ms = self.request(location)
        found = ITEM.findall(page)
        items = [
            Item(name, html.unescape(premise).strip(), html.unescape(hypothesis).strip(), number, len(found))
            for number, (name, premise, hypothesis) in enumerate(found)
        ]
        csrf = CSRF.search(page)
        return Batch(location, items, next_ms, page_ms, csrf.group(1) if csrf else "")

    def submit(self, batch: Batch, answers: dict[str, str]) -> int:
        status, _, _, _ = self.request(batch.url, {"csrfmiddlewaretoken": batch.csrf, **answers})
        return status


def completion_code(page: str) -> str | None:
    """The code on a completion page; None when it is held or absent."""
    found = CODE.search(page)
    return found.group(1).strip() or None if found else None


@dataclass
class Session:
    """What one participant went through."""

    batches: list[Batch]
    code: str | None


def take_part(base_url: str, slug: str, participant_id: str, answer, *, max_batches: int = 50) -> Session:
    """Arrive by the study link and do batches until the study ends; `answer(batch, history)` gives
    {field name: label}. The judge's truth is attached to each batch after it is answered.
    Give every run new participant ids: the guesser test weighs all of a worker's labels, so an id
    reused from an earlier run carries that run's agreement into this one."""
    participant = Participant(base_url)
    participant.arrive(slug, participant_id)
    done: list[Batch] = []
    code = None
    for _ in range(max_batches):
        batch = participant.next_batch()
        if isinstance(batch, str):
            code = completion_code(batch)
            break
        answers = answer(batch, done)
        participant.submit(batch, answers)
        batch.truth = batch_truth(batch.batch_id)
        done.append(batch)
    return Session(done, code)


# --- statistics --------------------------------------------------------------------------------


def balanced_accuracy(predicted: list, actual: list) -> float:
    """Mean recall over the classes present in `actual`."""
    classes = sorted(set(actual))
    recalls = []
    for cls in classes:
        members = [p for p, a in zip(predicted, actual, strict=True) if a == cls]
        recalls.append(sum(p == cls for p in members) / len(members))
    return sum(recalls) / len(recalls) if recalls else float("nan")


def bootstrap_interval(
    predicted: list, actual: list, *, seed: int = 0, rounds: int = 1000, level: float = 0.95
) -> list[float]:
    """A percentile bootstrap interval of the balanced accuracy (items resampled)."""
    rng = random.Random(seed)
    count = len(actual)
    values = []
    for _ in range(rounds):
        picks = [rng.randrange(count) for _ in range(count)]
        sample_actual = [actual[i] for i in picks]
        if len(set(sample_actual)) < len(set(actual)):
            continue
        values.append(balanced_accuracy([predicted[i] for i in picks], sample_actual))
    values.sort()
    low = values[int((1 - level) / 2 * len(values))]
    high = values[min(len(values) - 1, int((1 + level) / 2 * len(values)))]
    return [round(low, 3), round(high, 3)]


def wilson_interval(successes: int, tries: int, z: float = 1.96) -> list[float]:
    if tries == 0:
        return [0.0, 1.0]
    share = successes / tries
    centre = (share + z * z / (2 * tries)) / (1 + z * z / tries)
    half = z * math.sqrt(share * (1 - share) / tries + z * z / (4 * tries * tries)) / (1 + z * z / tries)
    return [round(centre - half, 3), round(centre + half, 3)]


def covers(interval: list[float] | None, chance: float) -> bool:
    return interval is not None and interval[0] <= chance <= interval[1]
