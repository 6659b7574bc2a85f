"""A program typing in a real browser at an even pace with a uniform jitter: Playwright
types template sentences key by key into the real writing page, each gap 240 ms +-60% or
100 ms +-60% (a coefficient of variation of 0.35, as wide as many people's), then submits.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 \\
        --only typing_jittered

Headless Chromium (CHROMIUM_PATH, default /usr/bin/chromium) on the live server, real time (no held
clock): one id per pace in a study that holds codes and one in a study that refuses pasted text,
three tasks each (bench/attacks/_typing.py builds them). Succeeds when the completion page shows
the code.
"""

import os
import random
import time

from bench.attacks import _typing
from bench.attacks._participant import wilson

NAME = "typing_jittered"
CLAIM = "A browser bot typing at 240 ms or 100 ms +-60% (uniform jitter) earns codes unflagged."
PACES = {"240 ms +-60%": (240.0, 0.6), "100 ms +-60%": (100.0, 0.6)}
IDS_PER_STUDY = 1
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
FIELDS = ("entailment", "neutral", "contradiction")


def type_visit(browser, base_url: str, study: _typing.Study, pid: str, pace: tuple[float, float], rng) -> bool:
    """One id's visit, typed key by key; whether the completion page showed the code."""
    base = base_url.rstrip("/")
    delay_ms, jitter = pace
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{base}/study/{study.slug}/?PROLIFIC_PID={pid}&STUDY_ID=attack-{study.slug}&SESSION_ID={pid}")
        for _ in range(_typing.TASKS):
            page.goto(f"{base}/write/next/")
            if not page.locator("#submit-hypotheses").count():
                break
            for field in FIELDS:
                page.locator(f"#id_{field}").focus()
                for char in _typing.canned(rng):
                    time.sleep(delay_ms * (1 + rng.uniform(-jitter, jitter)) / 1000)
                    page.keyboard.type(char)
            with page.expect_navigation():
                page.click("#submit-hypotheses")
        page.goto(f"{base}/write/next/")
        return study.code in page.content()
    finally:
        context.close()


def judged(study: _typing.Study, pid: str, code: bool) -> _typing.Visit:
    """The server's flags on the visit (read after the browser is closed: the ORM runs outside its loop)."""
    from authorship.models import WritingEvidence
    from crowd.models import StudySession

    session = StudySession.objects.filter(study__slug=study.slug, external_session_id=pid).first()
    rows = list(WritingEvidence.objects.filter(study_session=session)) if session else []
    flags: dict[str, int] = {}
    for row in rows:
        for flag in row.flags:
            flags[flag] = flags.get(flag, 0) + 1
    return _typing.Visit(code, len(rows), sum(row.flagged for row in rows), 0, flags)


def run(base_url: str, *, seed: int = 0) -> dict:
    from playwright.sync_api import sync_playwright

    studies = _typing.setup(NAME, seed, premises=len(PACES) * IDS_PER_STUDY * 2 * _typing.TASKS + 10)
    rng = random.Random(seed)
    typed = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for label, pace in PACES.items():
                for study in studies:
                    for n in range(IDS_PER_STUDY):
                        pid = f"jit{seed}{int(pace[0])}{study.action}{n}{time.time_ns() % 10**6}"
                        typed.append((label, study, pid, type_visit(browser, base_url, study, pid, pace, rng)))
        finally:
            browser.close()
    visits = [(label, judged(study, pid, code)) for label, study, pid, code in typed]
    codes = sum(visit.code for _, visit in visits)
    details = []
    for label in PACES:
        mine = [visit for name, visit in visits if name == label]
        seen: dict[str, int] = {}
        for visit in mine:
            for flag, count in visit.flags.items():
                seen[flag] = seen.get(flag, 0) + count
        details.append(
            f"{label}: {sum(v.code for v in mine)} of {len(mine)} codes, "
            f"{sum(v.flagged for v in mine)} of {sum(v.written for v in mine)} saved hypotheses flagged, flags {seen or '-'}"
        )
    return {
        "attack": NAME,
        "tries": len(visits),
        "succeeded": codes,
        "measure": "share of writing visits that earned a code",
        "value": round(codes / len(visits), 4) if visits else 0.0,
        "interval": wilson(codes, len(visits)),
        "at_chance_or_refused": codes == 0,
        "detail": f"{codes} of {len(visits)} codes. " + "; ".join(details),
    }
