"""Typing evidence: false flags on typed text, detection of every other way in.

    .venv/bin/python bench/typing_evidence.py [--hypotheses 200] [--concurrency 8] [--seed 0] [--clock virtual]

Replays SNLI dev hypotheses (../shared/data/snli_1.0_dev.jsonl, or NLI_SHARED_DATA; read, never
copied), three to a page as on the writing page, in headless Chromium (Debian's /usr/bin/chromium, CHROMIUM_PATH) into a form that runs
static/js/typing_evidence.js, the module every writing page loads, and judges the posted
evidence with the server's own code (authorship.evidence.read_evidence, then
authorship.judgements.page_field_flags, the page's fields together). Each hypothesis goes in every way:

- typed: real key events (Playwright's keyboard), the typist's mean inter-key interval drawn from
  150-300 ms (measured honest writers; Dhakal et al. 2018, "Observations on Typing from 136
  Million Keystrokes", CHI '18: 239 ms on average over 168,000 typists); each interval ~ lognormal
  around that mean with a coefficient of variation drawn from 0.35-0.7 (an assumption: the paper
  gives intervals per letter pair, not this spread), x1.2-2 before a word's first letter;
  3% of characters mistyped and corrected with Backspace, 2% of gaps a pause of 0.5-3 s; 5-20 s of
  reading before the page's first sentence and 2-10 s of thinking before each;
- pasted (a trusted Ctrl+V from the clipboard), set by script (value = text), set by script
  with a synthetic input event, dropped (a trusted drag-and-drop of text), and typed by a program
  at an even pace (one key every 100 ms, every 30 ms) or with its gaps spread uniformly by
  +-30% or 60% around 100 ms or 240 ms (a program that adds jitter, as Playwright bots do).
With --clock virtual (the default) the page's clock is held (Playwright's clock) and moved by each
drawn gap, so the intervals are the drawn ones however loaded the machine; --clock real sleeps.
A typed hypothesis with any flag is a false flag; any other way is detected when it gets a flag.
Prints the table of rates (the figures go in docs/quality.md, "How hypotheses were written").
"""

import argparse
import asyncio
import html
import json
import math
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from authorship.evidence import read_evidence  # noqa: E402  (pure modules: no Django needed)
from authorship.judgements import page_field_flags  # noqa: E402

SHARED_DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SCRIPT = REPO / "static" / "js" / "typing_evidence.js"
PAGE = """<!doctype html><html><body><p id="source">{text}</p>
<form data-typing-evidence="record"><input type="hidden" name="typing_evidence">
<textarea name="entailment" rows="2" cols="60"></textarea>
<textarea name="neutral" rows="2" cols="60"></textarea>
<textarea name="contradiction" rows="2" cols="60"></textarea></form>
<script src="/static/js/typing_evidence.js"></script></body></html>"""
URL, SCRIPT_URL = "http://localhost/write/", "http://localhost/static/js/typing_evidence.js"
FIELDS = ("entailment", "neutral", "contradiction")  # a writing page's three sentences
# The honest writers: a typist's mean interval 150-300 ms (Dhakal et al. 2018: 239 ms on average).
HUMAN_MEAN_IKI_MS = (150.0, 300.0)
TYPO_RATE, PAUSE_RATE = 0.03, 0.02
# Realistic pauses: reading the premise before the first sentence (5-20 s), thinking before each
# sentence (2-10 s), and a longer gap before a word than inside it (x1.2-2).
READING_MS, THINKING_MS, WORD_START = (5000, 20000), (2000, 10000), (1.2, 2.0)
NEIGHBOURS = "qwertyuiopasdfghjklzxcvbnm"


def hypotheses(count, seed):
    path = SHARED_DATA / "snli_1.0_dev.jsonl"
    seen, texts = set(), []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            text = json.loads(line)["sentence2"].strip()
            if text and text not in seen and text.isascii():
                seen.add(text)
                texts.append(text)
    random.Random(seed).shuffle(texts)
    return texts[:count]


def human_plan(text, rng):
    """(key, delay before it in ms) for a person typing `text`, corrections included."""
    mean = rng.uniform(*HUMAN_MEAN_IKI_MS)
    cv = rng.uniform(0.35, 0.7)
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2

    def gap():
        if rng.random() < PAUSE_RATE:
            return rng.uniform(500, 3000)
        return rng.lognormvariate(mu, sigma)

    plan = []
    previous = " "
    for char in text:
        if char.isalpha() and rng.random() < TYPO_RATE:
            plan.append((rng.choice(NEIGHBOURS), gap()))
            plan.append(("Backspace", gap()))
        word_start = previous == " " and char != " "
        plan.append((char, gap() * (rng.uniform(*WORD_START) if word_start else 1.0)))
        previous = char
    return plan


async def wait(page, ms):
    """The gap before a key: on the page's held clock (--clock virtual), else in real time."""
    if CLOCK["virtual"]:
        await page.clock.run_for(max(1, round(ms)))
    else:
        await asyncio.sleep(ms / 1000)


async def press_keys(page, field, plan):
    await page.locator(field).focus()
    for key, delay in plan:
        await wait(page, delay)
        if key == "Backspace":
            await page.keyboard.press("Backspace")
        else:
            await page.keyboard.type(key)


async def typed(page, field, text, rng):
    await press_keys(page, field, human_plan(text, rng))


async def pasted(page, field, text, rng):
    await page.evaluate("text => navigator.clipboard.writeText(text)", text)
    await page.locator(field).focus()
    await page.keyboard.press("Control+V")


async def script_set(page, field, text, rng):
    await page.locator(field).evaluate("(field, text) => { field.value = text; }", text)


async def script_set_with_event(page, field, text, rng):
    await page.locator(field).evaluate(
        "(field, text) => { field.value = text; field.dispatchEvent(new InputEvent('input', {bubbles: true})); }", text
    )


async def dropped(page, field, text, rng):
    box = await page.locator(field).bounding_box()
    x, y = box["x"] + 10, box["y"] + 10
    client = await page.context.new_cdp_session(page)
    data = {"items": [{"mimeType": "text/plain", "data": text}], "dragOperationsMask": 1}
    for kind in ("dragEnter", "dragOver", "drop"):
        await client.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
    await client.detach()


def machine(delay_ms, jitter=0.0):
    """A program typing one key every `delay_ms`, each gap spread uniformly by +-`jitter` of it."""

    async def typing(page, field, text, rng):
        await press_keys(page, field, [(char, delay_ms * (1 + rng.uniform(-jitter, jitter))) for char in text])

    return typing


WAYS = {
    "typed (human delays)": typed,
    "pasted": pasted,
    "set by script": script_set,
    "set by script + synthetic input event": script_set_with_event,
    "dropped": dropped,
    "machine-typed, even 100 ms": machine(100),
    "machine-typed, even 30 ms": machine(30),
    "machine-typed, 100 ms +-30%": machine(100, 0.3),
    "machine-typed, 100 ms +-60%": machine(100, 0.6),
    "machine-typed, 240 ms +-60%": machine(240, 0.6),
}
CLOCK = {"virtual": True}


async def one(browser, way, texts, seed):
    """One writing page of three sentences entered `way`; per field (text arrived whole, flags, cadence)."""
    # A context per page: Playwright's clock and the clipboard belong to the context.
    context = await browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = await context.new_page()
    rng = random.Random(seed)
    try:
        # Served as http://localhost (a secure context, as the site is: the clipboard works there).
        body = PAGE.format(text=html.escape(" / ".join(texts)))
        await page.route(URL, lambda route: route.fulfill(content_type="text/html", body=body))
        await page.route(SCRIPT_URL, lambda route: route.fulfill(content_type="text/javascript", path=SCRIPT))
        if CLOCK["virtual"]:
            # Paused before the page loads: its script's start and every later reading are on one clock.
            await page.clock.install()
            await page.clock.pause_at(time.time() + 1)  # seconds: Python's Playwright reads a number so
        await page.goto(URL)
        # The server's clock: the page's own clock (held or real) stands for it. A claim is
        # served before its page loads; timing it from the loaded page (just after typing_evidence.js
        # started) gives the shortest lifetime the server could see.
        served_ms = await page.evaluate("performance.now()")
        person = way.startswith("typed")
        if person:
            await wait(page, rng.uniform(*READING_MS))
        for field, text in zip(FIELDS, texts, strict=True):
            if person:
                await wait(page, rng.uniform(*THINKING_MS))
            await WAYS[way](page, f"textarea[name={field}]", text, rng)
        values = {field: await page.locator(f"textarea[name={field}]").input_value() for field in FIELDS}
        # The form's submit event writes the evidence (a script-set value is noticed then).
        raw = await page.evaluate(
            "() => { const form = document.forms[0]; form.dispatchEvent(new Event('submit', {cancelable: true}));"
            " return form.elements.typing_evidence.value; }"
        )
        claim_open_ms = int(await page.evaluate("performance.now()") - served_ms)
    finally:
        await context.close()
    evidence = read_evidence(raw, FIELDS)
    flags = page_field_flags(evidence, values, claim_open_ms=claim_open_ms)
    rows = []
    for field, text in zip(FIELDS, texts, strict=True):
        found = None if evidence is None else evidence.fields.get(field)
        cadence = None
        if found and found.interval_cv is not None:
            cadence = (found.interval_mean_ms, found.interval_cv, found.interval_skew)
        rows.append((values[field] == text, [str(flag) for flag in flags[field]], cadence))
    return rows


async def main(args):
    from playwright.async_api import async_playwright

    CLOCK["virtual"] = args.clock == "virtual"
    texts = hypotheses(args.hypotheses, args.seed)
    pages = [texts[start : start + len(FIELDS)] for start in range(0, len(texts) - len(FIELDS) + 1, len(FIELDS))]
    results: dict[str, list[list]] = {way: [] for way in WAYS}
    started = time.monotonic()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

        async def run(way, index, page_texts):
            async with gate:
                results[way].append(await one(browser, way, page_texts, args.seed * 100_003 + index))

        # One way at a time, so a machine's even pace is judged beside other machine pages only
        # (a loaded machine adds jitter to every page's timing); pastes share one clipboard: in turn.
        for way in args.ways or list(WAYS):
            gate = asyncio.Semaphore(1 if way == "pasted" else args.concurrency)
            await asyncio.gather(*(run(way, i, page_texts) for i, page_texts in enumerate(pages)))
        await browser.close()
    print(
        f"{len(pages) * len(FIELDS)} SNLI dev hypotheses on {len(pages)} pages of three, {args.clock} clock, "
        f"{args.concurrency} pages at a time, {time.monotonic() - started:.0f} s, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| way | hypotheses | text arrived whole | flagged | rate | pages flagged | flags seen "
        "| interval mean, CV, skewness (median; lowest CV; lowest skewness) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for way, page_rows in results.items():
        if not page_rows:
            continue
        rows = [row for page_row in page_rows for row in page_row]
        flagged = sum(1 for _, flags, _ in rows if flags)
        pages_flagged = sum(1 for page_row in page_rows if any(flags for _, flags, _ in page_row))
        whole = sum(1 for complete, _, _ in rows if complete)
        cadences = [cadence for _, _, cadence in rows if cadence]
        if cadences:
            means, cvs = sorted(c[0] for c in cadences), sorted(c[1] for c in cadences)
            skews = sorted(c[2] for c in cadences if c[2] is not None) or [float("nan")]
            middle = len(means) // 2
            spread = (
                f"{means[middle]:.0f} ms, {cvs[middle]:.2f}, {skews[len(skews) // 2]:.2f}; {cvs[0]:.2f}; {skews[0]:.2f}"
            )
        else:
            spread = "-"
        seen: dict[str, int] = {}
        for _, flags, _ in rows:
            for flag in flags:
                seen[flag] = seen.get(flag, 0) + 1
        label = "false-flag rate" if way.startswith("typed") else "detection rate"
        shown = ", ".join(f"{flag} {count}" for flag, count in sorted(seen.items())) or "-"
        rate = f"{label} {flagged / len(rows):.1%}"
        print(
            f"| {way} | {len(rows)} | {whole} | {flagged} | {rate} | {pages_flagged} of {len(page_rows)} "
            f"| {shown} | {spread} |"
        )


def skewness(gaps):
    """As typing_evidence.js computes it (population moments)."""
    mean = sum(gaps) / len(gaps)
    second = sum((gap - mean) ** 2 for gap in gaps) / len(gaps)
    return sum((gap - mean) ** 3 for gap in gaps) / len(gaps) / second**1.5 if second else 0.0


def simulate(pages, seed):
    """Page skewness (fields weighted by their intervals) of `pages` simulated pages per typist, no
    browser: the typed way's gaps (those under the script's 2 s pause) and uniform jitters."""
    rng = random.Random(seed)
    texts = hypotheses(3 * pages, seed)
    typists = {
        "typed (human delays)": lambda text: [gap for _, gap in human_plan(text, rng)],
        "uniform 240 ms +-60%": lambda text: [240 * (1 + rng.uniform(-0.6, 0.6)) for _ in text],
        "uniform 100 ms +-30%": lambda text: [100 * (1 + rng.uniform(-0.3, 0.3)) for _ in text],
    }
    print("| typist | pages | page skewness: lowest, 0.1st percentile, 1st, median | under 0.1 |\n|---|---|---|---|")
    for name, draw in typists.items():
        found = []
        for start in range(0, len(texts) - 2, 3):
            fields = [[gap for gap in draw(text)[1:] if gap < 2000] for text in texts[start : start + 3]]
            found.append(sum(len(g) * skewness(g) for g in fields) / sum(len(g) for g in fields))
        found.sort()
        lowest, permille, percent, median = (found[int(share * len(found))] for share in (0, 0.001, 0.01, 0.5))
        under = sum(value < 0.1 for value in found)
        print(f"| {name} | {len(found)} | {lowest:.2f}, {permille:.2f}, {percent:.2f}, {median:.2f} | {under} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hypotheses", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        choices=["virtual", "real"],
        default="virtual",
        help="virtual: the page's clock is held and moved by each drawn gap (Playwright's clock), so the "
        "intervals are the drawn ones whatever the machine's load; real: real sleeps (load adds jitter)",
    )
    parser.add_argument("--ways", action="append", choices=list(WAYS), help="only this way (repeatable)")
    parser.add_argument(
        "--simulate", type=int, metavar="PAGES", help="no browser: the page skewness of this many simulated pages"
    )
    arguments = parser.parse_args()
    if arguments.simulate:
        simulate(arguments.simulate, arguments.seed)
    else:
        asyncio.run(main(arguments))
