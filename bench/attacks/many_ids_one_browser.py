"""Many ids from one browser: one person arrives as N Prolific participant ids
in turn, all from one browser (one cookie jar, so one device cookie), and finishes each id's
session, answering as the researchers would (every catch trial earns the study's bonus). Do the
extra ids earn completion codes, and are their bonuses in the Prolific bulk-bonus file?

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 --only many_ids_one_browser

Setup (the judge, Django against the server's DATABASE_URL): a validation study of its own
(`_common.build_validation_study`: 40 premises of three pairs, 10 catch premises, a catch share of
0.2, two batches per code, a bonus per catch match). The browser arrives as each id by the study
link (a browser signed in as the previous id is asked before it switches: it says yes) and answers
every item with the pair's author label (the catch trials' reference label), so the guesser test
holds nothing. After the last id, the judge reads the study's Prolific bulk-bonus file as the
bonus page would download it (`quality.bonuses.prolific_bulk_bonus_csv` of `bonuses.unpaid`).

Succeeded: an id after the first that earned a code. Refused: at most the first id has a code and
at most the first id is in the payment file (the extra ids' codes held, their bonuses waiting).
"""

import html
import re
import urllib.parse

from . import _common

NAME = "many_ids_one_browser"
CLAIM = "One browser arrives as many Prolific ids in turn: every id earns a code and its catch bonuses are paid."
IDS = 15
SWITCH = re.compile(r'id="switch-account"')
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def arrive_as(browser: _common.Participant, slug: str, participant_id: str) -> int:
    """Open the study link as `participant_id` in this browser; answer yes when asked to switch."""
    status, page, _, _ = browser.request(_link(slug, participant_id))
    if status == 200 and SWITCH.search(page):
        fields = {name: html.unescape(value) for name, value in HIDDEN.findall(page)}
        fields["switch"] = "yes"
        status, _, _, _ = browser.request(_link(slug, participant_id), fields)
    return status


def _link(slug: str, participant_id: str) -> str:
    query = urllib.parse.urlencode(
        {"PROLIFIC_PID": participant_id, "STUDY_ID": slug[:24], "SESSION_ID": f"s{participant_id}"}
    )
    return f"/study/{slug}/?{query}"


def finish_session(browser: _common.Participant, *, max_batches: int = 10) -> str | None:
    """Do batches as a careful person would (the author's label everywhere); the code shown at the end."""
    for _ in range(max_batches):
        batch = browser.next_batch()
        if isinstance(batch, str):
            return _common.completion_code(batch)
        truth = _common.batch_truth(batch.batch_id)
        browser.submit(batch, {item.name: truth[item.name].author_label for item in batch.items if item.name in truth})
    return None


def payment_file(slug: str) -> tuple[int, int, str]:
    """(participants in the Prolific bulk-bonus file, bonuses behind them, the file), as downloaded."""
    _common.django_ready()
    from crowd.models import Study
    from quality import bonuses

    study = Study.objects.get(slug=slug)
    entries = list(bonuses.unpaid(study))
    text = bonuses.prolific_bulk_bonus_csv(entries)
    return len(text.splitlines()), len(entries), text


def run(base_url: str, *, seed: int = 0, ids: int = IDS) -> dict:
    slug = _common.build_validation_study(NAME, seed=seed, premises=40, catch_premises=10, share=0.2, tasks_per_batch=2)
    browser = _common.Participant(base_url)
    codes: list[bool] = []
    for number in range(ids):
        arrive_as(browser, slug, f"MANY{slug[-8:]}x{number:02d}")
        codes.append(finish_session(browser) is not None)
    in_file, bonuses_in_file, _ = payment_file(slug)

    from crowd.models import StudySession
    from quality.models import BonusEntry, BonusKind

    sessions = StudySession.objects.filter(study__slug=slug)
    held = sessions.filter(code_holds__isnull=False).distinct().count()
    earned = BonusEntry.objects.filter(study__slug=slug, kind=BonusKind.EARNED).count()
    extra_codes = sum(codes[1:])
    return {
        "attack": NAME,
        "tries": ids - 1,
        "succeeded": extra_codes,
        "measure": "extra ids (after the first) that earned a code",
        "value": extra_codes,
        "interval": None,
        "at_chance_or_refused": extra_codes == 0 and in_file <= 1,
        "detail": (
            f"{sum(codes)} of {ids} ids got a code ({held} held); {earned} catch bonuses earned; "
            f"Prolific bulk-bonus file: {in_file} participant(s), {bonuses_in_file} bonus(es)"
        ),
    }
