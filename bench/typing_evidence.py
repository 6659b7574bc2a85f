"""Typing evidence (issue 40): false flags on typed text, detection of every other way in.

    .venv/bin/python bench/typing_evidence.py [--hypotheses 200] [--concurrency 8] [--seed 0] [--clock virtual]

Replays SNLI dev hypotheses (../shared/data/snli_1.0_dev.jsonl, or NLI_SHARED_DATA; read, never
copied) in headless Chromium (Debian's /usr/bin/chromium, CHROMIUM_PATH) into a form that runs
static/js/typing_evidence.js, the module every writing page loads, and judges the posted
evidence with the server's own code (authorship.evidence.read_evidence, then
authorship.judgements.field_flags). Each hypothesis goes in every way:

- typed: real key events (Playwright's keyboard) with delays drawn per typist from Dhakal et al.
  2018 ("Observations on Typing from 136 Million Keystrokes", CHI '18): the typist's mean
  inter-key interval ~ Normal(239 ms, 112 ms) (the paper's mean and SD over 168,000 typists),
  kept within 100-700 ms; each interval ~ lognormal around that mean with a coefficient of
  variation drawn from 0.35-0.7 (an assumption: the paper gives intervals per letter pair, not
  this spread); 3% of characters mistyped and corrected with Backspace, 2% of gaps a pause of
  0.5-3 s;
- pasted (a trusted Ctrl+V from the clipboard), set by script (value = text), set by script
  with a synthetic input event, dropped (a trusted drag-and-drop of text), and typed by a program
  at an even pace (one key every 100 ms, every 30 ms) or with its gaps spread uniformly by
  +-30% or 60% (a program that adds jitter; measured, not a target).
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
<textarea name="entailment" rows="2" cols="60"></textarea></form>
<script src="/static/js/typing_evidence.js"></script></body></html>"""
URL, SCRIPT_URL = "http://localhost/write/", "http://localhost/static/js/typing_evidence.js"
FIELD = "textarea[name=entailment]"
# Dhakal et al. 2018: mean inter-key interval over 168,000 typists and its SD between typists.
HUMAN_MEAN_IKI_MS, HUMAN_SD_IKI_MS = 239.0, 112.0
TYPO_RATE, PAUSE_RATE = 0.03, 0.02
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
    mean = min(700.0, max(100.0, rng.gauss(HUMAN_MEAN_IKI_MS, HUMAN_SD_IKI_MS)))
    cv = rng.uniform(0.35, 0.7)
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2

    def gap():
        if rng.random() < PAUSE_RATE:
            return rng.uniform(500, 3000)
        return rng.lognormvariate(mu, sigma)

    plan = []
    for char in text:
        if char.isalpha() and rng.random() < TYPO_RATE:
            plan.append((rng.choice(NEIGHBOURS), gap()))
            plan.append(("Backspace", gap()))
        plan.append((char, gap()))
    return plan


async def wait(page, ms):
    """The gap before a key: on the page's held clock (--clock virtual), else in real time."""
    if CLOCK["virtual"]:
        await page.clock.run_for(max(1, round(ms)))
    else:
        await asyncio.sleep(ms / 1000)


async def press_keys(page, plan):
    await page.locator(FIELD).focus()
    for key, delay in plan:
        await wait(page, delay)
        if key == "Backspace":
            await page.keyboard.press("Backspace")
        else:
            await page.keyboard.type(key)


async def typed(page, text, rng):
    await press_keys(page, human_plan(text, rng))


async def pasted(page, text, rng):
    await page.evaluate("text => navigator.clipboard.writeText(text)", text)
    await page.locator(FIELD).focus()
    await page.keyboard.press("Control+V")


async def script_set(page, text, rng):
    await page.locator(FIELD).evaluate("(field, text) => { field.value = text; }", text)


async def script_set_with_event(page, text, rng):
    await page.locator(FIELD).evaluate(
        "(field, text) => { field.value = text; field.dispatchEvent(new InputEvent('input', {bubbles: true})); }", text
    )


async def dropped(page, text, rng):
    box = await page.locator(FIELD).bounding_box()
    x, y = box["x"] + 10, box["y"] + 10
    client = await page.context.new_cdp_session(page)
    data = {"items": [{"mimeType": "text/plain", "data": text}], "dragOperationsMask": 1}
    for kind in ("dragEnter", "dragOver", "drop"):
        await client.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
    await client.detach()


def machine(delay_ms, jitter=0.0):
    """A program typing one key every `delay_ms`, each gap spread uniformly by +-`jitter` of it."""

    async def typing(page, text, rng):
        await press_keys(page, [(char, delay_ms * (1 + rng.uniform(-jitter, jitter))) for char in text])

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
}
CLOCK = {"virtual": True}


async def one(browser, way, text, seed):
    # A context per page: Playwright's clock and the clipboard belong to the context.
    context = await browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = await context.new_page()
    try:
        # Served as http://localhost (a secure context, as the site is: the clipboard works there).
        body = PAGE.format(text=html.escape(text))
        await page.route(URL, lambda route: route.fulfill(content_type="text/html", body=body))
        await page.route(SCRIPT_URL, lambda route: route.fulfill(content_type="text/javascript", path=SCRIPT))
        if CLOCK["virtual"]:
            # Paused before the page loads: its script's start and every later reading are on one clock.
            await page.clock.install()
            await page.clock.pause_at(time.time() + 1)  # seconds: Python's Playwright reads a number so
        await page.goto(URL)
        # The server's clock (issue 50): the page's own clock (held or real) stands for it. A claim is
        # served before its page loads; timing it from the loaded page (just after typing_evidence.js
        # started) gives the shortest lifetime the server could see.
        served_ms = await page.evaluate("performance.now()")
        await WAYS[way](page, text, random.Random(seed))
        value = await page.locator(FIELD).input_value()
        # The form's submit event writes the evidence (a script-set value is noticed then).
        raw = await page.evaluate(
            "() => { const form = document.forms[0]; form.dispatchEvent(new Event('submit', {cancelable: true}));"
            " return form.elements.typing_evidence.value; }"
        )
        claim_open_ms = int(await page.evaluate("performance.now()") - served_ms)
    finally:
        await context.close()
    evidence = read_evidence(raw, ["entailment"])
    flags = page_field_flags(evidence, {"entailment": value}, claim_open_ms=claim_open_ms)["entailment"]
    found = None if evidence is None else evidence.fields.get("entailment")
    cadence = (found.interval_mean_ms, found.interval_cv) if found and found.interval_cv is not None else None
    return value == text, [str(flag) for flag in flags], cadence


async def main(args):
    from playwright.async_api import async_playwright

    CLOCK["virtual"] = args.clock == "virtual"
    texts = hypotheses(args.hypotheses, args.seed)
    results: dict[str, list[tuple[bool, list[str], tuple[float, float] | None]]] = {way: [] for way in WAYS}
    started = time.monotonic()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

        async def run(way, index, text):
            async with gate:
                results[way].append(await one(browser, way, text, args.seed * 100_003 + index))

        # One way at a time, so a machine's even pace is judged beside other machine pages only
        # (a loaded machine adds jitter to every page's timing); pastes share one clipboard: in turn.
        for way in args.ways or list(WAYS):
            gate = asyncio.Semaphore(1 if way == "pasted" else args.concurrency)
            await asyncio.gather(*(run(way, i, text) for i, text in enumerate(texts)))
        await browser.close()
    print(
        f"{len(texts)} SNLI dev hypotheses, {args.clock} clock, {args.concurrency} pages at a time, "
        f"{time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| way | hypotheses | text arrived whole | flagged | rate | flags seen | interval mean, CV (median; lowest CV) |"
    )
    print("|---|---|---|---|---|---|---|")
    for way, rows in results.items():
        if not rows:
            continue
        flagged = sum(1 for _, flags, _ in rows if flags)
        whole = sum(1 for complete, _, _ in rows if complete)
        cadences = [cadence for _, _, cadence in rows if cadence]
        if cadences:
            means, cvs = sorted(c[0] for c in cadences), sorted(c[1] for c in cadences)
            spread = f"{means[len(means) // 2]:.0f} ms, {cvs[len(cvs) // 2]:.2f}; {cvs[0]:.2f}"
        else:
            spread = "-"
        seen: dict[str, int] = {}
        for _, flags, _ in rows:
            for flag in flags:
                seen[flag] = seen.get(flag, 0) + 1
        label = "false-flag rate" if way.startswith("typed") else "detection rate"
        shown = ", ".join(f"{flag} {count}" for flag, count in sorted(seen.items())) or "-"
        rate = f"{label} {flagged / len(rows):.1%}"
        print(f"| {way} | {len(rows)} | {whole} | {flagged} | {rate} | {shown} | {spread} |")


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
    asyncio.run(main(parser.parse_args()))
