"""Fresh browsers on a study whose ids nobody verifies: one person types IDS Prolific participant ids
into a paid study's link, each in a fresh browser (its own cookie jar, so its own device cookie),
finishes each id's session answering as the researchers would (every catch trial earns the study's
bonus) and collects the codes and the bonuses.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 \\
        --only open_link_fresh_browsers

The judge (Django against the server's DATABASE_URL) builds two paid validation studies of their own
(`_common.build_validation_study`: a payment per task and a bonus per catch match, no market
connection, unsigned links): one as a researcher leaves it, one with the explicit open-link choice
(`Study.open_link_unverified`: "ids are unverified, no bonuses"). Each id arrives in a fresh
browser, as one person with many browsers (or a cleared cookie jar) would, so the device-cookie
checks see a stranger each time. After the last id the judge reads what is owed: the payable bonuses
(`quality.bonuses.unpaid`) and the Prolific bulk-bonus file as the bonus page would download it.

Succeeded: an id that got a task on the unverified study, or any bonus owed on the open-link one.
Refused: the unverified study takes nobody (its link answers "not open yet"), and the open-link
study owes no bonus (its rows are recorded with the reason they are never paid).
"""

from typing import Any

from . import _common
from .many_ids_one_browser import finish_session

NAME = "open_link_fresh_browsers"
CLAIM = (
    "A fresh browser per typed participant id on a paid study without a market connection: every id "
    "earns a code and its catch bonuses are paid."
)
IDS = 15


def _study(tag: str, *, seed: int, open_link: bool, share: float) -> str:
    slug = _common.build_validation_study(
        tag, seed=seed, premises=40, catch_premises=10, share=share, tasks_per_batch=2
    )
    from decimal import Decimal

    from crowd.models import Study

    Study.objects.filter(slug=slug).update(
        payment_per_task=Decimal("0.40"), bonus_currency="GBP", open_link_unverified=open_link
    )
    return slug


def owed(slug: str) -> tuple[int, int, int]:
    """(bonuses earned, bonuses owed now, participants in the Prolific bulk-bonus file)."""
    from crowd.models import Study
    from quality import bonuses
    from quality.models import BonusEntry, BonusKind

    study = Study.objects.get(slug=slug)
    payable = list(bonuses.unpaid(study))
    in_file = len(bonuses.prolific_bulk_bonus_csv(payable).splitlines())
    earned = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED).count()
    return earned, len(payable), in_file


def run(base_url: str, *, seed: int = 0, ids: int = IDS, share: float = 0.2) -> dict[str, Any]:
    """`share`: the studies' catch-trial share; catch trials are drawn at random, so a run of few
    ids needs a high share for any of them to meet one."""
    _common.django_ready()
    refused_slug = _study("olfb-shut", seed=seed, open_link=False, share=share)
    open_slug = _study("olfb-open", seed=seed, open_link=True, share=share)
    admitted = 0
    for number in range(ids):
        browser = _common.Participant(base_url)
        status = browser.arrive(refused_slug, f"FRESH{refused_slug[-6:]}x{number:02d}")
        admitted += status not in (403, 410)
    codes = 0
    for number in range(ids):
        browser = _common.Participant(base_url)
        browser.arrive(open_slug, f"OPEN{open_slug[-6:]}x{number:02d}")
        codes += finish_session(browser) is not None

    from crowd.models import StudySession

    earned, payable, in_file = owed(open_slug)
    succeeded = admitted + payable
    return {
        "attack": NAME,
        "tries": ids,
        "succeeded": succeeded,
        "measure": "ids admitted to the unverified paid study, plus bonuses owed on the open-link one",
        "value": succeeded,
        "interval": None,
        "at_chance_or_refused": admitted == 0 and payable == 0 and in_file == 0,
        "detail": (
            f"unverified paid study: {admitted} of {ids} fresh-browser ids admitted "
            f"({StudySession.objects.filter(study__slug=refused_slug).count()} sessions); open-link study: "
            f"{codes} of {ids} ids got a code, {earned} catch bonuses earned, {payable} owed, "
            f"Prolific bulk-bonus file: {in_file} participant(s)"
        ),
    }
