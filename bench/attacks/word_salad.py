"""Word salad on the writing tasks: do shuffled common words ("Banana water
purple under city simply chair.") reach the adversarial model, get saved as hypotheses and earn
completion codes?

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 --only word_salad

Every salad is English words in one sentence with a full stop, so it passes the rules on length,
words and sentences; only a check of the sentence's shape (collection/sentence_shape.py) stops it.
The salads are drawn as bench/sentence_check.py draws its "attack words" set (five to eight of
`SALAD_WORDS` (bench/sentence_check.py) in random order; about three in four refused there).

The judge (Django against the server's database) builds two studies on premises of their own:
- adversarial (as adversarial_junk: two tasks a visit, three tries a task) with round 1 on a
  scripted model this attack serves on 127.0.0.1 that answers "entailment" for anything, so every
  task whose target is another label is fooled by whatever reaches it. `IDS` participant ids send
  a salad on each try and, when fooled, a plain reason; a try "reaches the model" when the page
  answers with the model's label.
- ordinary writing (two pages a visit, the study's typing evidence only recorded, so the sentence
  check is all that stands in the way): `IDS` ids post three salads a page, one retry of three new
  salads when refused, then give up the visit.
Codes are read from the page after each visit; the judge also counts the codes the server held
for researchers (collection/shape_holds.py: a session refused for shape again and again) and the
fooled examples queued for verification. Bounded: at most IDS x TASKS x 3 tries on the
adversarial page (a fooled task ends sooner) and IDS x TASKS pages of three salads on the writing
page (a refused page is sent once more with new salads); at IDS=3, 24 to 36 salads when nothing is
refused.
"""

import random
import re
import time

from bench.attacks._participant import Participant, django_ready, wilson
from bench.attacks.adversarial_junk import _EntailingModel

# The salads bench/sentence_check.py measures the check against: one list of the attack's words.
from bench.sentence_check import salad

NAME = "word_salad"
CLAIM = (
    "Shuffled common words pass the writing rules, reach the adversarial model and earn codes on both writing tasks."
)
IDS = 3
TASKS = 2
TRIES = 3
_WRITE_TOKEN = re.compile(r"/write/([0-9a-f-]{36})/")
_ADV_TOKEN = re.compile(r"/adversarial/([0-9a-f-]{36})/")


def _setup(nonce: str, endpoint: str):
    from adversarial.models import AdversarialStudy, Round
    from corpus.models import Dataset, Genre, Premise, PromptFamily, Split
    from crowd.models import Study, TaskKind

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
    studies = {}
    for kind, split in ((TaskKind.ADVERSARIAL, Split.DEV), (TaskKind.WRITING, Split.TRAIN)):
        slug = f"atk-salad-{kind}-{nonce}"
        dataset = Dataset.objects.create(slug=slug, name=f"attack word salad {kind}")
        Premise.objects.bulk_create(
            Premise(
                dataset=dataset,
                genre=genre,
                prompt_id=f"{nonce}-{kind}-{n}",
                split=split,
                text=f"A man in a blue coat rides bike number {n} past the market while a band plays.",
            )
            for n in range(2 * IDS * TASKS + 6)
        )
        studies[kind] = Study.objects.create(
            slug=slug,
            name=slug,
            dataset=dataset,
            task_kind=kind,
            tasks_per_batch=TASKS,
            completion_code=f"SALAD{str(kind)[:3].upper()}{nonce.replace('-', '')}"[:20],
        )
    adversarial = studies[TaskKind.ADVERSARIAL]
    AdversarialStudy.objects.create(
        study=adversarial, max_tries=TRIES, tries_per_minute=60, bonus_per_verified_fooled="0.50"
    )
    Round.objects.create(study=adversarial, number=1, dataset=adversarial.dataset, target_endpoint=endpoint)
    return adversarial, studies[TaskKind.WRITING]


def _adversarial_visit(base_url: str, study, pid: str, rng: random.Random) -> tuple[int, int, int, bool]:
    """(salads sent, salads the model was asked about, fooled, code shown) for one id's visit."""
    participant = Participant(base_url, pid)
    participant.arrive(study.slug)
    sent = reached = fooled = 0
    for _ in range(TASKS):
        match = _ADV_TOKEN.search(participant.get("/adversarial/next/").url)
        if not match:
            break
        token, task_reached = match.group(1), 0
        for _ in range(TRIES):
            response = participant.post(
                f"/adversarial/{token}/try/", {"hypothesis": salad(rng)}, headers={"Accept": "application/json"}
            )
            sent += 1
            if response.status_code != 200:
                continue  # refused: the model was not asked
            reached += 1
            task_reached += 1
            answer = response.json()
            if answer.get("model_fooled"):
                fooled += 1
                participant.post(f"/adversarial/{token}/reason/", {"reason": "It is what the line says."})
                break
            if answer.get("task_done"):
                break
        else:
            if not task_reached:
                break  # every try refused: a participant moves on only by finishing
    return sent, reached, fooled, study.completion_code in participant.get("/adversarial/next/").text


def _writing_visit(base_url: str, study, pid: str, rng: random.Random) -> tuple[int, int, bool]:
    """(salads sent, pages saved, code shown) for one id's visit to the ordinary writing task."""
    participant = Participant(base_url, pid)
    participant.arrive(study.slug)
    sent = saved = 0
    for _ in range(TASKS):
        match = _WRITE_TOKEN.search(participant.get("/write/next/").url)
        if not match:
            break
        for _attempt in range(2):
            data = {"entailment": salad(rng), "neutral": salad(rng), "contradiction": salad(rng)}
            response = participant.post(f"/write/{match.group(1)}/", data)
            sent += 3
            if match.group(1) not in response.url:  # saved: on to the next task or the end
                saved += 1
                break
        else:
            break  # refused twice: the visit is given up
    return sent, saved, study.completion_code in participant.get("/write/next/").text


def run(base_url: str, *, seed: int = 0) -> dict:
    django_ready()
    from adversarial.models import AdversarialTry
    from corpus.models import Pair
    from crowd.models import StudySession

    nonce = f"{seed}-{time.time_ns() % 10**9}"
    model = _EntailingModel()
    rng = random.Random(seed)
    adv_sent = adv_reached = fooled = adv_codes = 0
    write_sent = pages = write_codes = 0
    try:
        adversarial, writing = _setup(nonce, model.url)
        for n in range(IDS):
            sent, reached, won, code = _adversarial_visit(base_url, adversarial, f"salad-{nonce}-adv-{n}", rng)
            adv_sent, adv_reached, fooled, adv_codes = (
                adv_sent + sent,
                adv_reached + reached,
                fooled + won,
                adv_codes + code,
            )
        for n in range(IDS):
            sent, saved, code = _writing_visit(base_url, writing, f"salad-{nonce}-write-{n}", rng)
            write_sent, pages, write_codes = write_sent + sent, pages + saved, write_codes + code
    finally:
        model.close()
    adv_saved = AdversarialTry.objects.filter(round__study=adversarial).count()
    write_saved = Pair.objects.filter(premise__dataset=writing.dataset).count()
    # What the server made of the ids that got through (collection/shape_holds.py): codes held for
    # researchers, and fooled examples queued for verifiers (dev) all the same.
    held = StudySession.objects.filter(study__in=[adversarial, writing], code_holds__isnull=False).distinct().count()
    queued = Pair.objects.filter(premise__dataset=adversarial.dataset, needs_validation=True).count()
    sent, passed, codes = adv_sent + write_sent, adv_reached + write_saved, adv_codes + write_codes
    return {
        "attack": NAME,
        "tries": sent,
        "succeeded": passed,
        "measure": "share of salads the model was asked about or saved as hypotheses",
        "value": round(passed / sent, 4) if sent else 0.0,
        "interval": wilson(passed, sent),
        "at_chance_or_refused": passed == 0 and codes == 0,
        "detail": (
            f"adversarial: {adv_reached} of {adv_sent} salads reached the model (asked {model.asked} times, "
            f"{adv_saved} tries stored), {fooled} fooled it, {adv_codes} of {IDS} ids earned a code; "
            f"writing: {write_saved} of {write_sent} salads saved as hypotheses ({pages} pages), "
            f"{write_codes} of {IDS} ids earned a code; {held} codes held for researchers; "
            f"{queued} fooled examples queued for verification"
        ),
    }
