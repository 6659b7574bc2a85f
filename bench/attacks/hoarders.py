"""Hoarders: twenty ids keep the last open pairs of a validation study from honest
arrivals by asking "More time" in every warning minute and "Get these pairs back" the moment a hold
runs out.

Setup: a validation study of its own, 24 premises of three pairs, each pair one label short of its
five (70 open pairs, one place each: the tail of a study), no catch trials. The 20 hoarding ids
arrive first and claim (14 batches of five hold every place; the six others find nothing). Then
the run goes step by step, `STEPS_PER_PERIOD` steps a claim period, for `PERIODS` claim periods:

- the clock moves one step: the judge moves every time the server keeps for this study (its claims'
  `created_at` and `expires_at`, its sessions' "no task" times) back by one step, which is to the
  server what the same time passing is (it compares them with its own now), so a run of ten claim
  periods of the shipped 20 minutes takes a minute or two, not three hours;
- each hoarder first (they poll; a person arriving comes later) reads its batch page: once the hold
  has run out it posts "Get these pairs back"; in the warning minutes, "More time" (the page's own
  forms, their CSRF token);
- an honest arrival comes with `ARRIVAL_CHANCE` (a new id by the study link): it labels every batch
  it is given and sends it at once, until the study answers "no task".

Scored (the judge, after each step): the tail is blocked while some pair still needs a label,
every such pair is held by a hoarder's live claim, and none has a place an arrival could take as a
backup claim (`validation.backup_claims`; on a server without backups, held is blocked). The row:
the longest run of blocked steps, in claim periods (refused when it is at most one: the hoarders'
first claim, which nothing can refuse), and the detail the honest arrivals answered "no task" while
pairs still needed labels.

`run(..., reclaim=True)` (not the suite's row) measures a further hoarder: refused, it claims a new
batch at once from /validate/next/, with any of its twenty ids. Figures: docs/holds.md.
"""

import random
import re
from dataclasses import dataclass
from datetime import timedelta

from . import _common, _participant

NAME = "hoarders"
CLAIM = (
    "Twenty ids hold the last open pairs of a study past their claim period by More time and Get these pairs "
    "back, while honest arrivals are told there is no task."
)

HOARDERS = 20
PREMISES = 24  # 72 pairs; two are complete from the start, so 70 stay open
PERIODS = 10
STEPS_PER_PERIOD = 10
ARRIVAL_CHANCE = 0.5
_EXPIRES_IN = re.compile(r'data-hold-expires-in="(\d+)"')
_WARN_BEFORE = re.compile(r'data-hold-warn-before="(\d+)"')
_RENEW = re.compile(r'action="([^"]*/renew/)"')


@dataclass
class Hoarder:
    participant: _participant.Participant
    batch_url: str = ""
    extended: int = 0
    taken_back: int = 0
    refused: int = 0
    reclaimed: int = 0


def _tail(slug: str) -> tuple[object, list[int]]:
    """The study's dataset, each pair one label short of its five (two complete): its pair pks."""
    from corpus.models import LABELS_PER_PAIR, Pair
    from crowd.models import Study

    study = Study.objects.select_related("dataset").get(slug=slug)
    pairs = list(Pair.objects.filter(premise__dataset=study.dataset).order_by("pk").values_list("pk", flat=True))
    Pair.objects.filter(pk__in=pairs).update(label_count=LABELS_PER_PAIR - 1)
    Pair.objects.filter(pk__in=pairs[:2]).update(label_count=LABELS_PER_PAIR, needs_validation=False)
    return study, pairs


def _advance_clock(study, step: timedelta) -> None:
    """The server's clock for this study moves `step` on: every time it keeps of it, `step` earlier."""
    from django.db.models import F

    from crowd.models import StudySession
    from validation.models import ValidationClaim

    ValidationClaim.objects.filter(pair__premise__dataset=study.dataset).update(
        created_at=F("created_at") - step, expires_at=F("expires_at") - step
    )
    if any(field.name == "no_task_at" for field in StudySession._meta.get_fields()):  # the waiting record, if any
        StudySession.objects.filter(study=study, no_task_at__isnull=False).update(no_task_at=F("no_task_at") - step)


def _blocked(study, hoarder_pids: set[str]) -> tuple[bool, int]:
    """(whether the tail is closed to an arrival, how many pairs need a label). Closed: every pair
    still needing a label is held by a hoarder's live claim and, where the server serves backups
    (`validation.backup_claims`), none of them has a place an arrival could take as one."""
    from django.utils import timezone

    from corpus.models import LABELS_PER_PAIR, Pair
    from crowd.models import ClaimStatus
    from validation.models import ValidationClaim

    pairs = Pair.objects.filter(premise__dataset=study.dataset, needs_validation=True, label_count__lt=LABELS_PER_PAIR)
    needing = set(pairs.values_list("pk", flat=True))
    try:
        from django.db.models import F

        from validation.backup_claims import BACKUP_PLACES, places_held_against_arrivals
    except ImportError:  # a server without backups: held is closed
        open_to_arrivals = False
    else:
        open_to_arrivals = (
            pairs.alias(holding=places_held_against_arrivals(study.pk, timezone.now()))
            .filter(label_count__lt=LABELS_PER_PAIR + BACKUP_PLACES - F("holding"))
            .exists()
        )
    held = set(
        ValidationClaim.objects.filter(
            pair_id__in=needing,
            status=ClaimStatus.OPEN,
            expires_at__gt=timezone.now(),
            worker__external_id__in=hoarder_pids,
        ).values_list("pair_id", flat=True)
    )
    return bool(needing) and needing <= held and not open_to_arrivals, len(needing)


def _hoarder_step(hoarder: Hoarder, *, reclaim: bool) -> None:
    """Read the batch page; take it back once it ran out, ask for more time in its warning minutes.
    `reclaim`: a hoarder without a batch asks for a new one (/validate/next/), as an arrival does."""
    if not hoarder.batch_url:
        if reclaim:
            claimed = hoarder.participant.get("/validate/next/")
            hoarder.batch_url = claimed.url if "/batch/" in claimed.url else ""
            hoarder.reclaimed += bool(hoarder.batch_url)
        return
    page = hoarder.participant.get(hoarder.batch_url).text
    left, warn, renew = _EXPIRES_IN.search(page), _WARN_BEFORE.search(page), _RENEW.search(page)
    expired = 'id="hold-expired" data-hold-expired role="alert" hidden' not in page
    if left is None or warn is None:
        hoarder.batch_url = ""  # the batch is gone (sent, given back): nothing more to hold
        return
    if not expired and int(left.group(1)) > int(warn.group(1)):
        return
    if renew is None:  # the page offers no renewal (no more time, or the pairs cannot come back)
        if expired:
            hoarder.batch_url = ""
        return
    answer = hoarder.participant.post(renew.group(1), {})
    if answer.status_code >= 400:
        hoarder.refused += 1
        return
    after = answer.text
    if "/batch/" not in answer.url:
        hoarder.refused += 1
        hoarder.batch_url = ""
    elif expired:
        if 'id="hold-expired" data-hold-expired role="alert" hidden' in after:
            hoarder.taken_back += 1
        else:
            hoarder.refused += 1
            hoarder.batch_url = ""
    elif int((_EXPIRES_IN.search(after) or left).group(1)) > int(left.group(1)):
        hoarder.extended += 1
    else:
        hoarder.refused += 1


def _honest_arrival(base_url: str, slug: str, pid: str, rng: random.Random, pairs_needing: int) -> tuple[int, int]:
    """One honest id: every batch it is given, labelled and sent at once. (batches sent, 1 if it was
    answered "no task" while pairs still needed labels)."""
    participant = _participant.Participant(base_url, pid)
    page = participant.arrive(slug)
    sent = 0
    for _ in range(30):
        fields = _participant.radio_fields(page.text)
        if "/batch/" not in page.url or not fields:
            break
        participant.post(page.url, {name: rng.choice(values) for name, values in fields.items()})
        sent += 1
        page = participant.get("/validate/next/")
    no_task = "No pairs to validate right now" in page.text
    return sent, int(no_task and pairs_needing > 0 and sent == 0)


def run(base_url: str, *, seed: int = 0, periods: int = PERIODS, reclaim: bool = False) -> dict:
    """The suite's row. `reclaim=True` measures a further hoarder: one that, refused, claims a new
    batch at once (a fresh claim, not a renewal: see docs/holds.md)."""
    _common.django_ready()
    from django.conf import settings

    slug = _common.build_validation_study(
        NAME, seed=seed, premises=PREMISES, catch_premises=0, share=0.0, tasks_per_batch=100
    )
    study, _ = _tail(slug)
    rng = random.Random(seed)
    period = timedelta(minutes=settings.NLI["VALIDATION_CLAIM_MINUTES"])
    step = period / STEPS_PER_PERIOD
    tag = slug[-8:]
    hoarders = [Hoarder(_participant.Participant(base_url, f"HOARD{tag}x{n}")) for n in range(HOARDERS)]
    for hoarder in hoarders:
        page = hoarder.participant.arrive(slug)
        hoarder.batch_url = page.url if "/batch/" in page.url else ""
    pids = {hoarder.participant.pid for hoarder in hoarders}
    blocked_run = longest = 0
    arrivals = no_task = sent = 0
    for number in range(periods * STEPS_PER_PERIOD):
        _advance_clock(study, step)
        for hoarder in hoarders:
            _hoarder_step(hoarder, reclaim=reclaim)
        if rng.random() < ARRIVAL_CHANCE:
            arrivals += 1
            _, needing = _blocked(study, pids)
            batches, refused = _honest_arrival(base_url, slug, f"HONEST{tag}x{number}", rng, needing)
            sent += batches
            no_task += refused
        blocked, needing = _blocked(study, pids)
        blocked_run = blocked_run + 1 if blocked else 0
        longest = max(longest, blocked_run)
        if not needing:
            break
    # The first step's block is the claim's own period: counted from the claim, not from step one.
    longest_periods = round(longest / STEPS_PER_PERIOD, 2)
    _, left = _blocked(study, pids)
    return {
        "attack": NAME,
        "tries": arrivals,
        "succeeded": no_task,
        "measure": "longest block of the tail, claim periods",
        "value": longest_periods,
        "interval": None,
        "at_chance_or_refused": longest_periods <= 1.0,
        "detail": (
            f"{HOARDERS} hoarders over {periods} claim periods ({STEPS_PER_PERIOD} steps each, claim "
            f"{period.total_seconds() / 60:g} min): tail blocked at most {longest_periods} periods"
            f"{' (the whole run)' if longest >= periods * STEPS_PER_PERIOD else ''}; honest arrivals "
            f"{arrivals}, answered 'no task' while pairs needed labels {no_task}, batches they sent {sent}; "
            f"hoarders' More time given {sum(h.extended for h in hoarders)}, taken back "
            f"{sum(h.taken_back for h in hoarders)}, refused {sum(h.refused for h in hoarders)}, new batches claimed "
            f"{sum(h.reclaimed for h in hoarders)}{' (reclaiming)' if reclaim else ''}; "
            f"pairs still needing a label at the end {left}"
        ),
    }
