"""The information sheet a lab starts from on New study, and what it must fill in (docs/consent.md)."""

import re

# The lab edits this on New study; every heading is something an ethics board asks a sheet to say.
DEFAULT_SHEET = """## What this study is for

We are building a collection of English sentence pairs and judgements about them for research on
how computers understand language. [Say who runs the study and what the data will be used for.]

## What you will do

[Describe the task: e.g. write sentences about a short text, or judge whether one sentence follows
from another.] The study takes about [N] minutes.

## What we record

- your answers (the sentences you write and the labels you choose);
- your participant id on the crowd platform, and the times you start and submit each task;
- a random identifier stored in your browser, so that one person is not counted twice;
- how each sentence was typed (typing evidence: whether text was typed, pasted or dictated, and
  its timing), to tell written work from copied work. We do not record what you type elsewhere.

Your answers may be published in a research dataset under your pseudonymous id, never your name or
platform id. [Say how long personal data is kept, and where.]

## Pay

You are paid [amount] on the crowd platform for completing the study, [and a bonus of ... for ...].

## Taking part is voluntary

You may stop at any time. Every page has a "withdraw from this study" link at the bottom:
withdrawing ends your visit at once. [Say what happens to the answers you gave before: kept without
your platform id, or deleted.]

## Contact

[Name, email address of the researcher, and of the ethics board that approved the study.]
"""
DEFAULT_STATEMENTS = [
    "I have read the information above and I am 18 years of age or older.",
    "I understand that taking part is voluntary and that I may withdraw at any time.",
    "I agree to take part, and to my answers being recorded and used as described above.",
]

# The bracketed places the lab fills in: one left in a saved sheet is named by the pre-launch check.
# Only the template's own (a Markdown link's [text] is no placeholder).
PLACEHOLDERS = tuple(dict.fromkeys(re.findall(r"\[[^\]]+\]", DEFAULT_SHEET)))


def placeholders_left(text: str) -> list[str]:
    """The template's bracketed places still in `text` (the lab did not fill them in)."""
    flat = " ".join(text.split())
    return [place for place in PLACEHOLDERS if " ".join(place.split()) in flat]
